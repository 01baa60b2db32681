// The fragments the rewritten inner product hands mma.sync, checked lane by lane against the
// PTX ISA's fragment tables (TensorCoreMarkers.h), not against the rewrite's own formulas: the
// rewrite's output Stmt (rewrite_inner_products on what the pass receives) is evaluated for each of the 32 lanes of warp 0 of block 0,
// ldmatrix.x4[.trans] is emulated on the addresses the lanes give (lane 8q + r gives row r of
// matrix q; without .trans lane l = 4g + t receives row g, columns 2t and 2t + 1; with .trans,
// rows 2t and 2t + 1, column g), the shared index is decoded into (row, column) of the operand
// tile by its Halide layout, and every register must hold the A, B and C elements mma.sync
// expects of that lane. A wrong lane mapping, a missing .trans or a wrong address fails here.

#include "Halide.h"

#include "analysis/BankConflicts.h"
#include "codegen/TensorCoreMarkers.h"
#include "directive/Requests.h"
#include "rewrite/MmaInnerProduct.h"

#include "TensorCoreGemm.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace {

using namespace Halide;
using namespace Halide::Internal;

struct Ldmatrix {
    bool trans;
    int reg;
    Expr e0;  // the row address, lets inlined
};
struct Mma {
    int q;
    std::vector<std::string> a, b;  // the ldmatrix lets it reads
    Expr c;                         // the accumulator index it stores, lets inlined
};

/** The markers of the rewritten kernel, in program order. */
class Collect : public IRVisitor {
public:
    std::vector<std::pair<std::string, Ldmatrix>> loads;
    std::vector<Mma> mmas;

private:
    using IRVisitor::visit;
    std::vector<std::pair<std::string, Expr>> lets;

    Expr inlined(Expr e) const {
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
            e = substitute(it->first, it->second, e);
        }
        return e;
    }

    void visit(const LetStmt *op) override {
        const Call *c = op->value.as<Call>();
        if (c && (c->name == alcop::ldmatrix_name || c->name == alcop::ldmatrix_trans_name)) {
            const Load *e0 = c->args[1].as<Load>();
            ASSERT_NE(e0, nullptr);
            loads.push_back({op->name, {c->name == alcop::ldmatrix_trans_name, (int)*as_const_int(c->args[0]),
                                        inlined(e0->index)}});
        }
        lets.emplace_back(op->name, op->value);
        op->body.accept(this);
        lets.pop_back();
    }

    void visit(const Store *op) override {
        const Call *c = op->value.as<Call>();
        if (!c || (c->name != alcop::mma_f16_name && c->name != alcop::mma_bf16_name)) return;
        Mma m;
        m.q = (int)*as_const_int(c->args[0]);
        for (int i = 1; i <= 6; i++) {
            (i <= 4 ? m.a : m.b).push_back(c->args[i].as<Variable>()->name);
        }
        m.c = inlined(op->index);
        mmas.push_back(m);
    }
};

int64_t at_lane(const Expr &e, int lane) {
    struct Vars : IRMutator {
        int lane;
        using IRMutator::visit;
        Expr visit(const Variable *op) override {
            if (op->name.find("__thread_id_x") != std::string::npos) return make_const(op->type, lane);
            return make_zero(op->type);
        }
    } v;
    v.lane = lane;
    Expr s = simplify(v.mutate(e));
    const int64_t *i = as_const_int(s);
    EXPECT_NE(i, nullptr) << s;
    return i ? *i : -1;
}

/** The (row, column) element pairs each lane receives in register `reg` of an ldmatrix whose
 * lanes give the row addresses `rows` (decoded to the tile's (row, col) of the row's first
 * element): lane -> {(row, col) of the low half, of the high half}. */
using Pos = std::pair<int64_t, int64_t>;  // (outer index, contiguous index) of the tile
std::vector<std::pair<Pos, Pos>> emulate_ldmatrix(const std::vector<Pos> &rows, int reg, bool trans) {
    std::vector<std::pair<Pos, Pos>> got(32);
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        if (!trans) {
            const Pos r = rows[8 * reg + g];
            got[l] = {{r.first, r.second + 2 * t}, {r.first, r.second + 2 * t + 1}};
        } else {
            const Pos r0 = rows[8 * reg + 2 * t], r1 = rows[8 * reg + 2 * t + 1];
            got[l] = {{r0.first, r0.second + g}, {r1.first, r1.second + g}};
        }
    }
    return got;
}

/** What the pass received for g, with the tensor-core rewrite applied to it alone (the later
 * steps, CompactRegisters in particular, renumber the accumulators per thread). */
Stmt rewritten(const tc_test::Gemm &g) {
    Internal::Stmt before;
    alcop::set_lowering_observer(
        [&](const Stmt &b, const Stmt &, const std::map<std::string, alcop::PipelineRequest> &) { before = b; });
    std::vector<Argument> args;
    Pipeline p = g.build(&args);
    alcop::enable(p, Target(g.target));
    p.compile_to_module(args, "tc_gemm", Target(g.target));
    alcop::set_lowering_observer(nullptr);
    EXPECT_TRUE(before.defined());
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) {
        outputs.push_back(f.function());
    }
    return alcop::rewrite_inner_products(before, alcop::analyze_tensor_cores(before, outputs, Target(g.target)));
}

void check(const tc_test::Gemm &g) {
    const Stmt after = rewritten(g);
    Collect markers;
    after.accept(&markers);
    const int tiles_m = g.warp_m / 16, tiles_n = g.warp_n / 8, k_steps = g.tile_k / 16;
    ASSERT_EQ((int)markers.mmas.size(), k_steps * tiles_m * tiles_n * 4);
    std::map<std::string, const Ldmatrix *> by_name;
    for (const auto &l : markers.loads) {
        by_name[l.first] = &l.second;
    }
    // The tiles' layouts: A_sh is (k, m) with k innermost unless a_m_major; B_sh (n, k) with n
    // innermost unless b_k_major. A's tile comes first in the merged allocation, B's after it
    // (A: tile_k x block_m elements); the accumulator is (x, y) of width block_n.
    const int64_t a_size = (int64_t)g.tile_k * g.block_m;
    const int64_t a_row = g.a_m_major ? g.block_m : g.tile_k, b_row = g.b_k_major ? g.tile_k : g.block_n;
    auto decode = [](int64_t index, int64_t row) { return Pos{index / row, index % row}; };
    // (m, k) of A, (k, n) of B, as the mma fragment tables put them.
    auto a_elem = [&](const Pos &p) { return g.a_m_major ? Pos{p.second, p.first} : p; };          // (m, k)
    auto b_elem = [&](const Pos &p) { return g.b_k_major ? Pos{p.second, p.first} : Pos{p.first, p.second}; };
    int errors = 0;
    for (size_t n = 0; n < markers.mmas.size(); n += 4) {
        const Mma &m = markers.mmas[n];
        const int ks = (int)(n / 4) / (tiles_m * tiles_n), tile = (int)(n / 4) % (tiles_m * tiles_n);
        const int j = tile / tiles_n, i = tile % tiles_n;
        for (int reg = 0; reg < 6; reg++) {
            const bool is_a = reg < 4;
            const Ldmatrix *ld = by_name.at(is_a ? m.a[reg] : m.b[reg - 4]);
            std::vector<Pos> rows;
            for (int l = 0; l < 32; l++) {
                const int64_t index = at_lane(ld->e0, l) - (is_a ? 0 : a_size);
                rows.push_back(decode(index, is_a ? a_row : b_row));
            }
            const auto got = emulate_ldmatrix(rows, ld->reg, ld->trans);
            for (int l = 0; l < 32; l++) {
                const int gg = l / 4, t = l % 4;
                for (int half = 0; half < 2; half++) {
                    const Pos &p = half ? got[l].second : got[l].first;
                    Pos want, have;
                    if (is_a) {  // a0 = A[g][2t..], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
                        want = {16 * j + gg + 8 * (reg % 2), 16 * ks + 2 * t + 8 * (reg / 2) + half};
                        have = a_elem(p);
                    } else {  // b0 = B[2t..][g], b1 = B[2t+8..][g]
                        want = {16 * ks + 2 * t + 8 * (reg - 4) + half, 8 * i + gg};
                        have = b_elem(p);
                    }
                    if (have != want && errors++ < 5) {
                        ADD_FAILURE() << "mma " << n / 4 << (is_a ? " a" : " b") << (is_a ? reg : reg - 4) << " lane "
                                      << l << " half " << half << ": holds (" << have.first << ", " << have.second
                                      << "), mma.sync expects (" << want.first << ", " << want.second << ")";
                    }
                }
            }
        }
        // c_q = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1] of tile (j, i).
        for (int q = 0; q < 4; q++) {
            const Mma &mq = markers.mmas[n + q];
            EXPECT_EQ(mq.q, q);
            for (int l = 0; l < 32; l++) {
                const int64_t index = at_lane(mq.c, l);
                const Pos have{index / g.block_n, index % g.block_n};  // (y, x)
                const Pos want{16 * j + l / 4 + 8 * (q / 2), 8 * i + 2 * (l % 4) + q % 2};
                if (have != want && errors++ < 5) {
                    ADD_FAILURE() << "mma " << n / 4 << " c" << q << " lane " << l << ": (y, x) = (" << have.first
                                  << ", " << have.second << "), mma.sync writes (" << want.first << ", "
                                  << want.second << ")";
                }
            }
        }
    }
    EXPECT_EQ(errors, 0);
    std::printf("a_m_major=%d b_k_major=%d: %zu mma markers, %zu ldmatrix registers checked on 32 lanes, %d wrong\n",
                g.a_m_major, g.b_k_major, markers.mmas.size(), markers.loads.size(), errors);
}

TEST(TensorCoreFragments, EveryLaneHoldsWhatMmaExpects) {
    for (bool a_m_major : {false, true}) {
        for (bool b_k_major : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "a_m_major " << a_m_major << " b_k_major " << b_k_major);
            tc_test::Gemm g;
            g.a_m_major = a_m_major;
            g.b_k_major = b_k_major;
            check(g);
        }
    }
}

// The ldmatrix reads of the rewritten kernel, counted by find_bank_conflicts. The slots are
// not swizzled yet: A's and B's rows (64 bytes for A: tile_k = 32 halves; 128 bytes for B:
// block_n = 64 halves) put the 8 row addresses of a phase into few 16-byte bank groups. This
// pins today's conflicts, which the swizzled slots (src/plan/Swizzle.h) are to bring to 0.
TEST(TensorCoreBankConflicts, UnswizzledSlotsConflict) {
    tc_test::Gemm g;
    const std::vector<alcop::KernelBankConflicts> kernels = alcop::find_bank_conflicts(rewritten(g));
    int ldmatrix = 0, conflicts = 0;
    for (const auto &k : kernels) {
        for (const auto &a : k.accesses) {
            if (!a.is_ldmatrix) continue;
            ldmatrix++;
            conflicts += a.cost.conflicts();
            std::printf("ldmatrix row address %s: %d conflicts over %d phases\n", a.buffer.c_str(), a.cost.conflicts(),
                        a.cost.phases);
        }
    }
    EXPECT_EQ(ldmatrix, (g.tile_k / 16) * (g.warp_m / 16 + g.warp_n / 16));
    // A: 64-byte rows, 3 conflicts per 8-lane phase, 4 phases, 4 reads; B: 128-byte rows,
    // 7 per phase: 4 x 12 + 4 x 28 (the foundations' numbers for those row widths).
    EXPECT_EQ(conflicts, 4 * 12 + 4 * 28);
    std::printf("%d ldmatrix.x4 per chunk, %d bank conflicts in all (unswizzled)\n", ldmatrix, conflicts);
}

}  // namespace
