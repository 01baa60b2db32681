// The fragments the rewritten inner product hands mma.sync, checked lane by lane against the
// PTX ISA's fragment tables (TensorCoreMarkers.h), not against the rewrite's own formulas: the
// rewrite's output Stmt (rewrite_inner_products on what the pass receives) is evaluated for
// each of the 32 lanes of warp 0 of block 0,
// ldmatrix.x4[.trans] is emulated on the addresses the lanes give (lane 8q + r gives row r of
// matrix q; without .trans lane l = 4g + t receives row g, columns 2t and 2t + 1; with .trans,
// rows 2t and 2t + 1, column g), each shared address a lane reads is looked up in what the
// copies wrote there (their stores evaluated for every thread: which element of the input A
// or B lands at which shared address), and every register must hold the A, B and C elements
// mma.sync expects of that lane. A wrong lane mapping, a missing .trans, a wrong address, or
// readers and writers that disagree on the tile's layout (the swizzle) fail here.

#include "Halide.h"

#include "analysis/BankConflicts.h"
#include "codegen/TensorCoreMarkers.h"
#include "directive/Requests.h"
#include "rewrite/MmaInnerProduct.h"
#include "rewrite/LowerPipelines.h"
#include "rewrite/SwizzleOperands.h"

#include "TensorCoreGemm.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>
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

/** The markers of the rewritten kernel, in program order. With register stages the ldmatrix
 * results are stored into fragment registers and each mma's operands are lets of those
 * registers: a let then stands for the ldmatrix last stored (in program order) into the
 * register it reads. The stores inside the streaming loop after its barrier (the one that
 * publishes the next chunk's tile) load the next chunk's first step (`next_chunk`, by
 * register). */
class Collect : public IRVisitor {
public:
    std::vector<std::pair<std::string, Ldmatrix>> loads;
    std::vector<Mma> mmas;
    std::vector<std::pair<int, Ldmatrix>> next_chunk;

private:
    using IRVisitor::visit;
    std::vector<std::pair<std::string, Expr>> lets;
    std::map<int, Ldmatrix> registers;
    int serial_loops = 0, barriers = 0;

    static bool is_ldmatrix(const Call *c) {
        return c && (c->name == alcop::ldmatrix_name || c->name == alcop::ldmatrix_trans_name);
    }
    Ldmatrix ldmatrix(const Call *c) const {
        const Load *e0 = c->args[1].as<Load>();
        EXPECT_NE(e0, nullptr);
        return {c->name == alcop::ldmatrix_trans_name, (int)*as_const_int(c->args[0]),
                e0 ? inlined(e0->index) : Expr()};
    }
    void visit(const For *op) override {
        // Barriers count from the innermost serial loop in.
        const bool serial = op->for_type == ForType::Serial;
        const int outer_barriers = barriers;
        serial_loops += serial;
        barriers = serial ? 0 : barriers;
        IRVisitor::visit(op);
        serial_loops -= serial;
        barriers = outer_barriers;
    }
    void visit(const Call *op) override {
        barriers += op->is_intrinsic(Call::gpu_thread_barrier);
        IRVisitor::visit(op);
    }

    Expr inlined(Expr e) const {
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
            e = substitute(it->first, it->second, e);
        }
        return e;
    }

    void visit(const LetStmt *op) override {
        const Call *c = op->value.as<Call>();
        const Load *slot = op->value.as<Load>();
        if (is_ldmatrix(c)) {
            loads.push_back({op->name, ldmatrix(c)});
        } else if (slot && slot->name.rfind("tc_fragments", 0) == 0) {
            loads.push_back({op->name, registers.at((int)*as_const_int(slot->index))});
        }
        lets.emplace_back(op->name, op->value);
        op->body.accept(this);
        lets.pop_back();
    }

    void visit(const Store *op) override {
        const Call *c = op->value.as<Call>();
        if (is_ldmatrix(c)) {
            const int r = (int)*as_const_int(op->index);
            registers[r] = ldmatrix(c);
            if (serial_loops && barriers) next_chunk.push_back({r, registers[r]});
            return;
        }
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

using Pos = std::pair<int64_t, int64_t>;

/** The shared addresses (elements) each lane receives in register `reg` of an ldmatrix whose
 * lanes give the row addresses `rows`: lane -> {address of the low half, of the high half}.
 * A row is 8 consecutive elements from its address. */
std::vector<std::pair<int64_t, int64_t>> emulate_ldmatrix(const std::vector<int64_t> &rows, int reg, bool trans) {
    std::vector<std::pair<int64_t, int64_t>> got(32);
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        if (!trans) {
            const int64_t r = rows[8 * reg + g];
            got[l] = {r + 2 * t, r + 2 * t + 1};
        } else {
            got[l] = {rows[8 * reg + 2 * t] + g, rows[8 * reg + 2 * t + 1] + g};
        }
    }
    return got;
}

/** What the copies write: shared address (elements) -> (buffer, index into the input) of the
 * element stored there, from every Store under a produce node of `funcs`, evaluated for each
 * thread of block 0 and each iteration of the loops inside the produce node (the loops outside
 * it at 0: block 0, the first K tile), skipping stores whose guards are false. The inputs'
 * row strides are set to 1 << 16, so index i is (i & 0xffff, i >> 16). */
using Written = std::map<int64_t, std::pair<std::string, int64_t>>;
class EvaluateCopies : public IRVisitor {
public:
    explicit EvaluateCopies(const std::set<std::string> &funcs) : funcs(funcs) {
    }
    Written written;

private:
    using IRVisitor::visit;
    const std::set<std::string> funcs;
    std::vector<std::pair<std::string, Expr>> lets;
    std::vector<const For *> loops;  // enumerated: thread loops, and loops inside a produce node
    std::vector<Expr> guards;
    int producing = 0;

    Expr inlined(Expr e) const {
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
            e = substitute(it->first, it->second, e);
        }
        return e;
    }
    void visit(const LetStmt *op) override {
        lets.emplace_back(op->name, op->value);
        op->body.accept(this);
        lets.pop_back();
    }
    void visit(const For *op) override {
        const bool enumerate = op->for_type == ForType::GPUThread || producing;
        if (enumerate) loops.push_back(op);
        op->body.accept(this);
        if (enumerate) loops.pop_back();
    }
    void visit(const IfThenElse *op) override {
        guards.push_back(op->condition);
        op->then_case.accept(this);
        guards.pop_back();
        if (op->else_case.defined()) {
            guards.push_back(!op->condition);
            op->else_case.accept(this);
            guards.pop_back();
        }
    }
    void visit(const ProducerConsumer *op) override {
        // Up to the first '$': a Func built again in the same process gets a new suffix.
        const bool p = op->is_producer && funcs.count(op->name.substr(0, op->name.find('$')));
        producing += p;
        op->body.accept(this);
        producing -= p;
    }
    static int64_t value(const Expr &e, const std::map<std::string, int64_t> &at) {
        struct Vars : IRMutator {
            const std::map<std::string, int64_t> &at;
            explicit Vars(const std::map<std::string, int64_t> &a) : at(a) {
            }
            using IRMutator::visit;
            Expr visit(const Variable *op) override {
                auto it = at.find(op->name);
                if (it != at.end()) return make_const(op->type, it->second);
                if (op->name.find(".stride.") != std::string::npos) return make_const(op->type, 1 << 16);
                return make_zero(op->type);
            }
            // The host's lets (inlined) read the inputs' buffers: strides 1 << 16, extents
            // 1 << 12, mins 0, not a bounds query.
            Expr visit(const Call *op) override {
                if (op->name == "_halide_buffer_get_stride") return make_const(op->type, 1 << 16);
                // Extents large enough for every K tile a pipelined prologue prefetches.
                if (op->name == "_halide_buffer_get_extent") return make_const(op->type, 1 << 12);
                if (op->name == "_halide_buffer_get_min" || op->name == "_halide_buffer_is_bounds_query") {
                    return make_zero(op->type);
                }
                return IRMutator::visit(op);
            }
        } v(at);
        Expr s = simplify(v.mutate(e));
        const int64_t *i = as_const_int(s);
        if (!i) {
            const uint64_t *u = as_const_uint(s);
            EXPECT_NE(u, nullptr) << s;
            return u ? (int64_t)*u : -1;
        }
        return *i;
    }
    void visit(const Store *op) override {
        if (!producing) return;
        Expr index = inlined(op->index), val = inlined(op->value);
        std::vector<Expr> conds;
        for (const Expr &g : guards) {
            conds.push_back(inlined(g));
        }
        while (const Cast *c = val.as<Cast>()) {
            val = c->value;
        }
        const Load *src = val.as<Load>();
        ASSERT_NE(src, nullptr) << "a copy that is not a load: " << val;
        std::map<std::string, int64_t> at;
        std::function<void(size_t)> each = [&](size_t d) {
            if (d < loops.size()) {
                const For *f = loops[d];
                const int64_t lo = value(inlined(f->min), at), n = value(inlined(f->extent), at);
                for (int64_t i = lo; i < lo + n; i++) {
                    at[f->name] = i;
                    each(d + 1);
                }
                at.erase(f->name);
                return;
            }
            for (const Expr &c : conds) {
                if (!value(c, at)) return;
            }
            const int lanes = op->value.type().lanes();
            for (int l = 0; l < lanes; l++) {
                Expr dst = lanes > 1 ? Shuffle::make_extract_element(index, l) : index;
                Expr from = lanes > 1 ? Shuffle::make_extract_element(src->index, l) : src->index;
                written[value(dst, at)] = {src->name, value(from, at)};
            }
        };
        each(0);
    }
};

/** What the pass received for g, with the pipelines (g.stages), the tensor-core rewrite and
 * the operands' swizzle applied as LowerPipelines runs them (pipelines_and_tensor_cores; the
 * later steps, CompactRegisters in particular, renumber the accumulators per thread). The
 * copies are made as `copies` says; the `written` map of the lane-by-lane check reads them as
 * plain stores of loads, so that check asks for synchronous ones. */
Stmt rewritten(const tc_test::Gemm &g, alcop::CopyKind copies = alcop::CopyKind::Synchronous,
               std::vector<alcop::SwizzledBuffer> *swizzled = nullptr, int register_limit = 0) {
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
    alcop::Options options;
    options.target = Target(g.target);
    options.copies = copies;
    options.register_limit = register_limit;
    return alcop::pipelines_and_tensor_cores(before, alcop::collect_requests(outputs),
                                             alcop::analyze_tensor_cores(before, outputs, Target(g.target)), options,
                                             alcop::testing::Hooks(), swizzled);
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
    // What the copies put where: every element of the A and B tiles, once.
    EvaluateCopies copies({"A_sh", "B_sh"});
    after.accept(&copies);
    // Pipelined, the first K tiles each in its slot: the prologue's stages - 1 and the
    // first iteration's prefetch.
    EXPECT_EQ((int64_t)copies.written.size(), (int64_t)g.stages * g.tile_k * (g.block_m + g.block_n));
    // The element of the input a lane receives: A(k, m) as (m, k), B(n, k) as (k, n), the
    // order of the mma fragment tables; (-1, -1) where no copy wrote (or the other input).
    auto element = [&](int64_t address, bool is_a) {
        auto it = copies.written.find(address);
        if (it == copies.written.end() || it->second.first != (is_a ? "A" : "B")) return Pos{-1, -1};
        return Pos{it->second.second >> 16, it->second.second & 0xffff};
    };
    int errors = 0;
    // What lane l's half `half` of register `reg` (a0..a3, b0, b1 = 4, 5) of the mma of tile
    // (j, i) at k step ks must hold: a0 = A[g][2t..], a1 = A[g+8][2t..], a2 = A[g][2t+8..],
    // a3 = A[g+8][2t+8..]; b0 = B[2t..][g], b1 = B[2t+8..][g].
    auto want_of = [](int j, int i, int ks, int reg, int l, int half) {
        const int gg = l / 4, t = l % 4;
        if (reg < 4) return Pos{16 * j + gg + 8 * (reg % 2), 16 * ks + 2 * t + 8 * (reg / 2) + half};
        return Pos{16 * ks + 2 * t + 8 * (reg - 4) + half, 8 * i + gg};
    };
    // The elements an ldmatrix gives the lanes, against `want` (lane, half -> position).
    auto check_ldmatrix = [&](const Ldmatrix &ld, bool is_a, const std::string &what,
                              const std::function<Pos(int, int)> &want) {
        std::vector<int64_t> rows;
        for (int l = 0; l < 32; l++) {
            rows.push_back(at_lane(ld.e0, l));
            // ldmatrix reads 16-byte rows from 16-byte aligned addresses (the allocation is).
            if (rows.back() % 8 != 0 && errors++ < 5) {
                ADD_FAILURE() << what << " lane " << l << ": row address " << rows.back()
                              << " (halves) is not 16-byte aligned";
            }
        }
        const auto got = emulate_ldmatrix(rows, ld.reg, ld.trans);
        for (int l = 0; l < 32; l++) {
            for (int half = 0; half < 2; half++) {
                const Pos have = element(half ? got[l].second : got[l].first, is_a), w = want(l, half);
                if (have != w && errors++ < 5) {
                    ADD_FAILURE() << what << " lane " << l << " half " << half << ": holds (" << have.first << ", "
                                  << have.second << "), mma.sync expects (" << w.first << ", " << w.second << ")";
                }
            }
        }
    };
    for (size_t n = 0; n < markers.mmas.size(); n += 4) {
        const Mma &m = markers.mmas[n];
        const int ks = (int)(n / 4) / (tiles_m * tiles_n), tile = (int)(n / 4) % (tiles_m * tiles_n);
        const int j = tile / tiles_n, i = tile % tiles_n;
        for (int reg = 0; reg < 6; reg++) {
            const bool is_a = reg < 4;
            std::ostringstream what;
            what << "mma " << n / 4 << (is_a ? " a" : " b") << (is_a ? reg : reg - 4);
            check_ldmatrix(*by_name.at(is_a ? m.a[reg] : m.b[reg - 4]), is_a, what.str(),
                           [&](int l, int half) { return want_of(j, i, ks, reg, l, half); });
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
                                  << ", " << have.second << "), mma.sync writes (" << want.first << ", " << want.second
                                  << ")";
                }
            }
        }
    }
    // Register stages: the loads of the next chunk's first k step (evaluated at chunk 0, they
    // read chunk 1, K tile_k further on), register r of A's tile j or B's pair p, in the order
    // of the rewrite's fragments.
    const int per_step = 4 * tiles_m + 4 * (tiles_n / 2);
    EXPECT_EQ((int)markers.next_chunk.size(), g.register_stages > 1 ? per_step : 0);
    for (const auto &[index, ld] : markers.next_chunk) {
        const int at = index % per_step, r = at % 4;
        const bool is_a = at < 4 * tiles_m;
        const int j = at / 4, p = (at - 4 * tiles_m) / 4;
        check_ldmatrix(ld, is_a, "next chunk's register " + std::to_string(index), [&](int l, int half) {
            return is_a ? want_of(j, 0, k_steps, r, l, half) : want_of(0, 2 * p + r / 2, k_steps, 4 + r % 2, l, half);
        });
    }
    EXPECT_EQ(errors, 0);
    std::printf("a_m_major=%d b_k_major=%d: %zu mma markers, %zu ldmatrix registers (%zu of the next chunk) checked "
                "on 32 lanes, %d wrong\n",
                g.a_m_major, g.b_k_major, markers.mmas.size(), markers.loads.size(), markers.next_chunk.size(), errors);
}

/** `test` on the GEMM `g` with each operand in either layout. */
void for_each_layout(tc_test::Gemm g, const std::function<void(const tc_test::Gemm &)> &test) {
    for (bool a_m_major : {false, true}) {
        for (bool b_k_major : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "a_m_major " << a_m_major << " b_k_major " << b_k_major);
            g.a_m_major = a_m_major;
            g.b_k_major = b_k_major;
            test(g);
        }
    }
}

/** The bank conflicts of the ldmatrix rows and the copies' stores of a rewritten kernel. */
struct OperandAccesses {
    int ldmatrix = 0, stores = 0, conflicts = 0, unanalyzed = 0;
    std::set<int> store_bytes;
};
OperandAccesses operand_accesses(const Stmt &s) {
    OperandAccesses r;
    for (const auto &k : alcop::find_bank_conflicts(s)) {
        r.unanalyzed += k.unanalyzed;
        for (const auto &a : k.accesses) {
            if (!a.is_ldmatrix && !a.is_store) continue;
            (a.is_ldmatrix ? r.ldmatrix : r.stores)++;
            if (a.is_store) r.store_bytes.insert(a.access_bytes);
            r.conflicts += a.cost.conflicts();
            std::printf("%s %s: %d conflicts over %d phases\n", a.is_ldmatrix ? "ldmatrix row address" : "store",
                        a.buffer.c_str(), a.cost.conflicts(), a.cost.phases);
        }
    }
    return r;
}

TEST(TensorCoreFragments, EveryLaneHoldsWhatMmaExpects) {
    for_each_layout(tc_test::Gemm(), check);
}

// Pipelined operands: the copies write 3 slots (swizzled, PipelinePlan.h aligns them), the
// first iteration's ldmatrix rows read slot 0. With register stages 2 the first k step comes
// from the register prologue, the second from the prefetch in step 0, and the prefetch of the
// next chunk's first step must read chunk 1 from slot 1.
TEST(TensorCoreFragments, PipelinedSlots) {
    for (int register_stages : {1, 2}) {
        for (bool a_m_major : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "a_m_major " << a_m_major << " register stages " << register_stages);
            tc_test::Gemm g;
            g.a_m_major = a_m_major;
            g.b_k_major = a_m_major;
            g.stages = 3;
            g.vector = 8;
            g.register_stages = register_stages;
            check(g);
        }
    }
}

// The shared accesses of the rewritten kernel, counted by find_bank_conflicts. Unswizzled,
// A's and B's rows (64 bytes for A: tile_k = 32 halves; 128 bytes for B: block_n = 64 halves)
// put the 8 row addresses of an ldmatrix phase into few 16-byte bank groups: 4 x 12 + 4 x 28
// = 160 conflicts per K tile. Swizzled (rewrite/SwizzleOperands.h), the ldmatrix rows and the
// copies' writes, scalar or 16-byte vectors, are conflict-free.
TEST(TensorCoreBankConflicts, SwizzledSlotsAreConflictFree) {
    for (int vector : {1, 8}) {
        SCOPED_TRACE(::testing::Message() << "vector " << vector);
        tc_test::Gemm g;
        g.vector = vector;
        const OperandAccesses a = operand_accesses(rewritten(g));
        EXPECT_EQ(a.ldmatrix, (g.tile_k / 16) * (g.warp_m / 16 + g.warp_n / 16));
        EXPECT_GT(a.stores, 0);
        EXPECT_EQ(a.unanalyzed, 0);
        EXPECT_EQ(a.conflicts, 0);
        std::printf("vector %d: %d ldmatrix.x4 and %d copy stores per chunk, %d bank conflicts in all (swizzled)\n",
                    vector, a.ldmatrix, a.stores, a.conflicts);
    }
}

// The pipelined kernel (3 stages, 16-byte cp.async copies, each operand in either layout):
// the plan aligns the operands' slots to the swizzle's period, so both are swizzled, all their
// slots, and every ldmatrix row and cp.async store of the kernel (prologue and loop) is
// conflict-free.
TEST(TensorCoreBankConflicts, PipelinedSlotsAreConflictFree) {
    tc_test::Gemm pipelined;
    pipelined.stages = 3;
    pipelined.vector = 8;
    for_each_layout(pipelined, [](const tc_test::Gemm &g) {
        std::vector<alcop::SwizzledBuffer> swizzled;
        const Stmt s = rewritten(g, alcop::CopyKind::Async, &swizzled);
        ASSERT_EQ(swizzled.size(), 2u);
        for (const alcop::SwizzledBuffer &b : swizzled) {
            const int64_t tile = 2 * g.tile_k * (b.func.rfind("A_sh", 0) == 0 ? g.block_m : g.block_n);
            EXPECT_EQ(b.begin % alcop::swizzle_period, 0) << b.func;
            EXPECT_EQ(b.end - b.begin, g.stages * tile) << b.func;  // all the slots
        }
        const OperandAccesses a = operand_accesses(s);
        EXPECT_EQ(a.ldmatrix, (g.tile_k / 16) * (g.warp_m / 16 + g.warp_n / 16));
        EXPECT_EQ(a.stores, 2 * g.stages);  // one 16-byte cp.async per operand and step, in a loop
        EXPECT_EQ(a.store_bytes, std::set<int>{16});
        EXPECT_EQ(a.unanalyzed, 0);
        EXPECT_EQ(a.conflicts, 0);
        std::printf("a_m_major=%d b_k_major=%d, 3 stages: %d ldmatrix.x4, %d cp.async stores, %d bank conflicts\n",
                    g.a_m_major, g.b_k_major, a.ldmatrix, a.stores, a.conflicts);
    });
}

/** The steady states of `s` as ExpandSlots.h leaves them: per loop expanded by its slots
 * (`<k>.slots`), the copies of its body (lets of k) and the slot terms (`% S` of k) left in
 * them; and the slot terms in the loops over an expanded k itself (the iterations left). */
struct SteadyStates {
    struct Expanded {
        std::string k;
        int copies = 0, slot_terms = 0;
    };
    std::vector<Expanded> expanded;
    int rolled_slot_terms = 0;
};

SteadyStates steady_states(const Stmt &s) {
    class Find : public IRVisitor {
        using IRVisitor::visit;
        const std::string suffix = ".slots";
        std::vector<std::string> group_vars, ks;  // the group loops and the k loops around the node

        void visit(const For *op) override {
            const bool group = op->name.size() > suffix.size() &&
                               op->name.compare(op->name.size() - suffix.size(), suffix.size(), suffix) == 0;
            if (group) {
                found.expanded.push_back({op->name.substr(0, op->name.size() - suffix.size())});
                group_vars.push_back(found.expanded.back().k);
            } else {
                ks.push_back(op->name);
            }
            IRVisitor::visit(op);
            (group ? group_vars : ks).pop_back();
        }
        void visit(const LetStmt *op) override {
            if (!group_vars.empty() && op->name == group_vars.back()) found.expanded.back().copies++;
            IRVisitor::visit(op);
        }
        void visit(const Mod *op) override {
            for (const std::string &k : group_vars) {
                if (expr_uses_var(op, k)) found.expanded.back().slot_terms++;
            }
            for (const std::string &k : ks) {
                for (const SteadyStates::Expanded &e : found.expanded) {
                    if (k == e.k && expr_uses_var(op, k)) found.rolled_slot_terms++;
                }
            }
            IRVisitor::visit(op);
        }

    public:
        SteadyStates found;
    } find;
    s.accept(&find);
    return find.found;
}

// Two stages of cp.async: the steady state runs in pairs of iterations (ExpandSlots.h), each
// copy addressing its slots by constants, and the iterations left (an odd count of K tiles) in
// the loop as it was, slots and all. Three stages expand in threes where a lane holds at most
// 64 accumulators, the fragments one register stage and the kernel more than Halide 14's 64
// registers (32 x 32 warp tiles, R = 1, opt-in), and stay rolled otherwise (64 x 64 warp tiles,
// R = 2, or the runtime's cap), as do copies in place (synchronous).
TEST(TensorCoreFragments, TwoStagesOfAsyncCopiesExpandBySlots) {
    for (int register_stages : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "register stages " << register_stages);
        tc_test::Gemm g;
        g.stages = 2;
        g.vector = 8;
        g.register_stages = register_stages;
        const SteadyStates two = steady_states(rewritten(g, alcop::CopyKind::Async));
        ASSERT_EQ(two.expanded.size(), 1u);
        EXPECT_EQ(two.expanded[0].copies, 2);
        EXPECT_EQ(two.expanded[0].slot_terms, 0) << "a slot of an expanded copy is not a constant";
        EXPECT_GT(two.rolled_slot_terms, 0) << "no loop for the iterations left";
    }
    tc_test::Gemm three;
    three.stages = 3;
    three.vector = 8;
    const int opt_in = 255;
    const SteadyStates threes = steady_states(rewritten(three, alcop::CopyKind::Async, nullptr, opt_in));
    ASSERT_EQ(threes.expanded.size(), 1u);
    EXPECT_EQ(threes.expanded[0].copies, 3);
    EXPECT_EQ(threes.expanded[0].slot_terms, 0) << "a slot of an expanded copy is not a constant";
    EXPECT_TRUE(steady_states(rewritten(three, alcop::CopyKind::Async)).expanded.empty()) << "the runtime's cap";
    tc_test::Gemm three_r2 = three;
    three_r2.register_stages = 2;
    EXPECT_TRUE(steady_states(rewritten(three_r2, alcop::CopyKind::Async, nullptr, opt_in)).expanded.empty());
    tc_test::Gemm three_wide = three;
    three_wide.block_m = three_wide.block_n = 128;
    three_wide.warp_m = three_wide.warp_n = 64;
    EXPECT_TRUE(steady_states(rewritten(three_wide, alcop::CopyKind::Async, nullptr, opt_in)).expanded.empty());
    tc_test::Gemm in_place;
    in_place.stages = 2;
    EXPECT_TRUE(steady_states(rewritten(in_place, alcop::CopyKind::Synchronous)).expanded.empty());
}

TEST(TensorCoreFragments, VectorCopiesIntoSwizzledTiles) {
    tc_test::Gemm g;
    g.vector = 8;
    check(g);
}

}  // namespace
