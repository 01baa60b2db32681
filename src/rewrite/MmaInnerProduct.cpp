#include "rewrite/MmaInnerProduct.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"
#include "codegen/TensorCoreMarkers.h"
#include "copy/CopyLowering.h"

#include <functional>
#include <map>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The loads of `e`, outermost first. */
std::vector<const Load *> loads_of(const Expr &e) {
    struct V : IRVisitor {
        std::vector<const Load *> found;
        using IRVisitor::visit;
        void visit(const Load *op) override {
            found.push_back(op);
            IRVisitor::visit(op);
        }
    } v;
    e.accept(&v);
    return v.found;
}

/** Whether a loop inside `s` holds an update of `func`. */
bool loop_inside_updates(const Stmt &s, const std::string &func) {
    struct V : IRVisitor {
        const std::string &func;
        bool found = false;
        explicit V(const std::string &f) : func(f) {
        }
        using IRVisitor::visit;
        void visit(const For *op) override {
            found = found || accumulates_into(op->body, func);
        }
    } v(func);
    s.accept(&v);
    return v.found;
}

/** `e` with `values` substituted and every other variable 0, as a constant. */
int64_t evaluate(const Expr &e, const std::map<std::string, Expr> &values) {
    std::optional<int64_t> v = evaluate_lane(e, values);
    internal_assert(v) << "tensor cores: not a constant: " << e << "\n";
    return *v;
}

/** `s` with every let substituted, LetStmts included: an update's index may sit under a
 * LetStmt of the loop body (`let t = ...; prod[t] = ...`), which the rewrite replaces. */
Stmt inline_lets(const Stmt &s) {
    struct Inline : IRMutator {
        using IRMutator::visit;
        Stmt visit(const LetStmt *op) override {
            return mutate(substitute(op->name, op->value, op->body));
        }
    };
    return substitute_in_all_lets(Inline().mutate(s));
}

/** A streaming loop of the shared pipeline whose last consumer is a tensor-core inner product
 * with register stages: where its fragments are prefetched from, and what it moves. */
struct StreamingLoop {
    const For *loop = nullptr;
    /** The body's statements after its consumers: what makes tile k + 1 visible (the wait,
     * the barrier). They move into the K steps, before the first load of tile k + 1. */
    std::vector<Stmt> publish;
    bool moved = false;
    Stmt prologue;          ///< the fragments of tile `min`'s first steps, before the loop
    std::string registers;  ///< the fragment registers, R slots
    int register_count = 0;
};

struct Update {
    Expr index;         // of the accumulator element
    const Load *a, *b;  // the operands' loads
    int i = 0, j = 0, e = 0, h = 0;
};

class RewriteInnerProducts : public IRMutator {
public:
    RewriteInnerProducts(const std::vector<TensorCoreUse> &uses, std::vector<OperandRows> *rows,
                         const std::map<std::string, int> &register_stages)
        : uses(uses), rows(rows), register_stages(register_stages) {
    }

private:
    using IRMutator::visit;
    const std::vector<TensorCoreUse> &uses;
    std::vector<OperandRows> *rows;
    const std::map<std::string, int> &register_stages;
    std::vector<StreamingLoop> streaming;  // the streaming loops around the node visited
    int conditions = 0;                    // ifs between the innermost streaming loop and the node

    Stmt visit(const IfThenElse *op) override {
        conditions++;
        Stmt s = IRMutator::visit(op);
        conditions--;
        return s;
    }

    int stages_of(const TensorCoreUse &use) const {
        auto it = register_stages.find(use.accumulator);
        return it == register_stages.end() ? 1 : it->second;
    }

    /** A serial loop inside the thread loops whose body ends in a barrier after the inner
     * product of a use with register stages: the streaming loop of its shared pipeline. */
    std::optional<StreamingLoop> streaming_loop(const For *op) const {
        Stmt body = op->body;
        while (const LetStmt *l = body.as<LetStmt>()) {
            body = l->body;
        }
        std::vector<Stmt> stmts;
        cut_loop_body(body, {}, stmts);
        for (const TensorCoreUse &u : uses) {
            if (stages_of(u) < 2) continue;
            int last = -1;
            for (size_t i = 0; i < stmts.size(); i++) {
                if (accumulates_into(stmts[i], u.accumulator)) last = (int)i;
            }
            if (last < 0 || last + 1 >= (int)stmts.size() || !is_barrier(stmts.back())) continue;
            StreamingLoop l;
            l.loop = op;
            l.publish.assign(stmts.begin() + last + 1, stmts.end());
            return l;
        }
        return std::nullopt;
    }

    /** The streaming loop, its publishing statements moved into the K steps: the fragment
     * registers around it, the register prologue just before it (after the shared prologue's
     * wait and barrier). */
    Stmt streaming_rewrite(const For *op, const StreamingLoop &l, const Stmt &body) {
        // Drop the publishing statements, the last of the (let-wrapped) body.
        std::function<Stmt(const Stmt &)> drop = [&](const Stmt &s) -> Stmt {
            if (const LetStmt *let = s.as<LetStmt>()) return LetStmt::make(let->name, let->value, drop(let->body));
            std::vector<Stmt> stmts;
            cut_loop_body(s, {}, stmts);
            internal_assert(stmts.size() > l.publish.size());
            stmts.resize(stmts.size() - l.publish.size());
            return Block::make(stmts);
        };
        Stmt loop = For::make(op->name, op->min, op->extent, op->for_type, op->device_api, drop(body));
        return with_registers(l.registers, UInt(32), l.register_count, Block::make(l.prologue, loop));
    }
    std::vector<const For *> threads;
    std::vector<std::pair<std::string, Expr>> enclosing;  // the lets around the node visited

    Stmt visit(const LetStmt *op) override {
        enclosing.emplace_back(op->name, op->value);
        Stmt body = mutate(op->body);
        enclosing.pop_back();
        return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
    }

    /** `e` with the enclosing lets substituted. */
    Expr with_enclosing_lets(Expr e) const {
        for (auto it = enclosing.rbegin(); it != enclosing.rend(); ++it) {
            e = substitute(it->first, it->second, e);
        }
        return e;
    }

    /** evaluate() with the enclosing lets substituted. */
    int64_t value_of(const Expr &e, const std::map<std::string, Expr> &values) const {
        return evaluate(with_enclosing_lets(e), values);
    }

    /** The difference of `e` at `values` and `base` at `base_values`, if it is a constant. */
    std::optional<int64_t> offset_of(const Expr &e, const std::map<std::string, Expr> &values, const Expr &base,
                                     const std::map<std::string, Expr> &base_values) const {
        return evaluate_lane(
            substitute(values, with_enclosing_lets(e)) - substitute(base_values, with_enclosing_lets(base)), {});
    }

    Stmt visit(const For *op) override {
        if (op->for_type == ForType::GPUThread) {
            threads.push_back(op);
            Stmt s = IRMutator::visit(op);
            threads.pop_back();
            return s;
        }
        if (op->for_type == ForType::Serial && !threads.empty()) {
            for (const TensorCoreUse &u : uses) {
                if (u.width > 0 && !is_guarded_k_loop(op) && accumulates_into(op->body, u.accumulator) &&
                    !loop_inside_updates(op->body, u.accumulator)) {
                    return rewrite(op, u);
                }
            }
            if (std::optional<StreamingLoop> l = streaming_loop(op)) {
                const int outer_conditions = conditions;
                conditions = 0;
                streaming.push_back(*l);
                Stmt body = mutate(op->body);
                StreamingLoop done = streaming.back();
                streaming.pop_back();
                conditions = outer_conditions;
                return done.moved ? streaming_rewrite(op, done, body) :
                                    For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
            }
        }
        return IRMutator::visit(op);
    }

    /** The stride of A's rows (`a`; else of B's columns) in its shared tile, `measured` at the
     * first lanes; a user error unless every lane's row (column) in every 16 x 8 tile of the warp
     * lies where that stride puts it from `base` (the index at lane 0 of the first tile): the
     * ldmatrix rows are computed that way. A tile that is not dense along M (N) would be read
     * at the wrong rows: a convolution's pixels staged with a halo, an index that is not affine
     * in the row. */
    template<typename AtLane>
    int64_t check_evenly_spaced(const TensorCoreUse &use, const std::vector<Update> &found, const AtLane &at_lane,
                                const Expr &base, std::optional<int64_t> measured, bool a) const {
        const int64_t stride = measured.value_or(0);
        const char *rows = a ? "rows" : "columns";
        auto uneven = [&](int64_t row, int lane, std::optional<int64_t> at) {
            user_error << tensor_cores_call(use.accumulator) << ": the " << rows << " of "
                       << user_name(a ? use.a : use.b) << " that a warp's mma.sync tiles read are not evenly spaced "
                       << "in its shared tile: " << (a ? "row " : "column ") << row << " of the warp tile (lane "
                       << lane << ") is "
                       << (at ? "element " + std::to_string(*at) + " from the first, where the stride of the first " +
                                    rows + " (" + std::to_string(stride) + ") puts it at " +
                                    std::to_string(stride * row) :
                                std::string("at no constant offset from the first"))
                       << ". ldmatrix addresses every one by that stride: stage the operand dense along "
                       << (a ? "M" : "N") << " (a tile without gaps or halo, e.g. a convolution's pixels one filter "
                       << "tap at a time, bound to the block tile's extents) and read it with an index affine in "
                       << (a ? "y" : "x") << ".\n";
        };
        if (!measured) uneven(1, a ? 4 : 2, std::nullopt);
        for (const Update &u : found) {
            // The other operand's tiles read the same rows (columns) again.
            if (a ? u.i != 0 || u.e != 0 : u.j != 0 || u.h != 0) continue;
            for (int l = 0; l < 32; l++) {
                const int64_t row = a ? 16 * u.j + 8 * u.h + l / 4 : 8 * u.i + 2 * (l % 4) + u.e;
                const std::optional<int64_t> at = offset_of(a ? u.a->index : u.b->index, at_lane(l), base, at_lane(0));
                if (at != stride * row) uneven(row, l, at);
            }
        }
        return stride;
    }

    Stmt rewrite(const For *loop, const TensorCoreUse &use) {
        const std::string lane = threads.back()->name;
        const std::string &k = loop->name;
        // The updates, with the lets of the loop body substituted.
        std::vector<Update> found;
        struct Collect : IRVisitor {
            const std::string &acc;
            std::vector<Update> &found;
            Collect(const std::string &acc, std::vector<Update> &found) : acc(acc), found(found) {
            }
            using IRVisitor::visit;
            void visit(const Store *op) override {
                if (!is_accumulator(op->name, acc)) return;
                std::vector<const Load *> operands;
                for (const Load *l : loads_of(op->value)) {
                    if (!is_accumulator(l->name, acc)) operands.push_back(l);
                }
                internal_assert(operands.size() == 2) << "tensor cores: the update of " << acc << " reads "
                                                      << operands.size() << " operands: " << op->value << "\n";
                found.push_back({op->index, operands[0], operands[1]});
            }
        } collect(use.accumulator, found);
        Stmt body = inline_lets(loop->body);
        body.accept(&collect);
        std::string acc_buffer;
        {
            struct Name : IRVisitor {
                const std::string &acc;
                std::string name;
                explicit Name(const std::string &a) : acc(a) {
                }
                using IRVisitor::visit;
                void visit(const Store *op) override {
                    if (is_accumulator(op->name, acc)) name = op->name;
                }
            } n(use.accumulator);
            body.accept(&n);
            acc_buffer = n.name;
        }
        auto at_lane = [&](int l, int64_t kk = 0) {
            return std::map<std::string, Expr>{{lane, threads.back()->min + l}, {k, loop->min + (int)kk}};
        };
        // Which operand is A (depends on the lane through g = lane / 4) and which is B (t = lane % 4).
        for (Update &u : found) {
            if (offset_of(u.a->index, at_lane(1), u.a->index, at_lane(0)) != 0) std::swap(u.a, u.b);
        }
        // Which accumulator each update is, from lane 0.
        int64_t x0 = INT64_MAX, y0 = INT64_MAX;
        std::vector<std::pair<int64_t, int64_t>> xy;
        for (const Update &u : found) {
            const int64_t flat = value_of(u.index, at_lane(0));
            xy.push_back({flat % use.width, flat / use.width});
            x0 = std::min(x0, xy.back().first);
            y0 = std::min(y0, xy.back().second);
        }
        std::map<std::tuple<int, int, int, int>, const Update *> by_position;  // (i, j, e, h)
        for (size_t n = 0; n < found.size(); n++) {
            Update &u = found[n];
            const int64_t dx = xy[n].first - x0, dy = xy[n].second - y0;
            u.i = dx / 8, u.e = dx % 8, u.j = dy / 16, u.h = (dy % 16) / 8;
            internal_assert(u.e < 2 && dy % 8 == 0) << "tensor cores: not the fragment layout\n";
            by_position[{u.i, u.j, u.e, u.h}] = &u;
        }
        const int tiles_m = use.tile.warp_m / 16, tiles_n = use.tile.warp_n / 8;
        internal_assert((int)by_position.size() == tiles_m * tiles_n * 4 && found.size() == by_position.size());
        const Update &first = *by_position.at({0, 0, 0, 0});
        // Strides of the operands' shared tiles, in elements.
        const Expr &ia = first.a->index, &ib = first.b->index;
        // (Differences: an index may hold terms of the output's position that only cancel there.)
        auto step = [&](const Expr &index, int lane, int64_t kk) {
            return offset_of(index, at_lane(lane, kk), index, at_lane(0));
        };
        const std::optional<int64_t> a_k_step = step(ia, 0, 1), b_k_step = step(ib, 0, 1);
        internal_assert(a_k_step && b_k_step)
            << "tensor cores: no constant stride along K: " << ia << ", " << ib << "\n";
        const int64_t a_k = *a_k_step, b_k = *b_k_step;
        const int64_t a_m = check_evenly_spaced(use, found, at_lane, ia, step(ia, 4, 0), true);
        const std::optional<int64_t> b_n2 = step(ib, 1, 0);
        internal_assert(!b_n2 || *b_n2 % 2 == 0);
        const int64_t b_n = check_evenly_spaced(use, found, at_lane, ib,
                                                b_n2 ? std::optional<int64_t>(*b_n2 / 2) : std::nullopt, false);
        const bool a_trans = a_k != 1, b_trans = b_k != 1;
        internal_assert((a_k == 1 || a_m == 1) && (b_k == 1 || b_n == 1))
            << "tensor cores: operand strides " << a_k << " " << a_m << " " << b_k << " " << b_n << "\n";
        internal_assert(a_trans == use.a_trans() && b_trans == use.b_trans());
        if (rows) {
            // ldmatrix reads 16-byte pieces along the contiguous index; the other one steps rows.
            rows->push_back({use.a, (a_trans ? a_k : a_m) * first.a->type.bytes()});
            rows->push_back({use.b, (b_trans ? b_k : b_n) * first.b->type.bytes()});
        }

        const int64_t *extent = as_const_int(loop->extent);
        internal_assert(extent && *extent % 16 == 0);
        const int steps = (int)(*extent / 16), stages = stages_of(use);
        auto fragments_of = [&](int ks) { return fragments(loop, use, lane, ks, first, a_k, a_m, b_k, b_n); };
        std::vector<Stmt> k_steps;
        if (stages < 2) {
            for (int ks = 0; ks < steps; ks++) {
                const Fragments f = fragments_of(ks);
                Stmt step = mma_step(use, f, by_position, acc_buffer);
                for (auto it = f.lets.rbegin(); it != f.lets.rend(); ++it) {
                    step = LetStmt::make(it->first, it->second, step);
                }
                k_steps.push_back(step);
            }
            return Block::make(k_steps);
        }
        user_assert(steps % stages == 0 && stages <= steps)
            << "alcop::pipeline(" << user_name(use.accumulator) << ", " << stages << ", Level::Register): the "
            << "tensor-core fragments of " << user_name(use.accumulator) << " come in " << steps
            << " k steps of 16 per chunk, which " << stages << " register stages do not divide.\n";
        user_assert(!streaming.empty() && conditions == 0)
            << "alcop::pipeline(" << user_name(use.accumulator) << ", " << stages << ", Level::Register): the "
            << "register stages of tensor-core fragments prefetch across the chunks of a shared-level pipeline; "
            << user_name(use.accumulator) << "'s inner product is not the unconditional last consumer of one.\n";
        // Register stages: step s loads the fragments of step s + stages - 1 into its slot
        // before the mma of step s, which reads slot s % stages; the last steps load the first
        // ones of the next chunk, after the publishing wait and barrier.
        StreamingLoop &stream = streaming.back();
        const std::string &ko = stream.loop->name;
        Expr next = Variable::make(Int(32), ko) + 1;
        stream.registers = unique_name(fragment_registers_name);
        int per_slot = 0;
        auto store = [&](const Fragments &f, int slot, const std::map<std::string, Expr> &chunk) {
            per_slot = (int)f.lets.size();
            std::vector<Stmt> stores;
            for (size_t i = 0; i < f.lets.size(); i++) {
                stores.push_back(Store::make(stream.registers, substitute(chunk, f.lets[i].second),
                                             slot * per_slot + (int)i, Parameter(), const_true(), ModulusRemainder()));
            }
            return Block::make(stores);
        };
        for (int s = 0; s < steps; s++) {
            std::vector<Stmt> parts;
            const int t = s + stages - 1, slot = t % stages;
            if (t < steps) {
                parts.push_back(store(fragments_of(t), slot, {}));
            } else {
                if (t == steps) parts.insert(parts.end(), stream.publish.begin(), stream.publish.end());
                // Unguarded: in the last chunk it reads the slot a next chunk would take, in shared
                // memory and with no copy in flight (the chunk's last wait retired them all), into
                // registers no mma.sync reads. Under `if (ko + 1 < n)` the two paths would join
                // and the compiler copy each fragment register there (bf16: 64 mov a chunk).
                parts.push_back(store(fragments_of(t - steps), slot, {{ko, next}}));
            }
            // The mma markers read the slot through lets, as without register stages: the four
            // calls of one mma must share their operand values (TensorCoreMarkers.h).
            const Fragments f = fragments_of(s);
            Stmt mma = mma_step(use, f, by_position, acc_buffer);
            for (int i = (int)f.lets.size() - 1; i >= 0; i--) {
                mma = LetStmt::make(f.lets[i].first,
                                    Load::make(UInt(32), stream.registers, (s % stages) * (int)f.lets.size() + i,
                                               Buffer<>(), Parameter(), const_true(), ModulusRemainder()),
                                    mma);
            }
            parts.push_back(mma);
            k_steps.push_back(Block::make(parts));
        }
        std::vector<Stmt> prologue;
        for (int t = 0; t + 1 < stages; t++) {
            prologue.push_back(store(fragments_of(t), t, {{ko, stream.loop->min}}));
        }
        stream.prologue = IfThenElse::make(0 < stream.loop->extent, Block::make(prologue));
        stream.register_count = stages * per_slot;
        stream.moved = true;
        return Block::make(k_steps);
    }

    /** The ldmatrix registers of the 16-wide step ks of the K loop (the operands' indices at
     * lane 0, row 0, column 16 ks): named calls, A's per 16-row tile j, B's per pair of 8-column
     * tiles, in that order. */
    struct Fragments {
        std::vector<std::pair<std::string, Expr>> lets;
        std::vector<std::vector<std::string>> a_regs, b_regs;
    };
    Fragments fragments(const For *loop, const TensorCoreUse &use, const std::string &lane, int ks, const Update &first,
                        int64_t a_k, int64_t a_m, int64_t b_k, int64_t b_n) {
        const std::string &k = loop->name;
        const bool a_trans = a_k != 1, b_trans = b_k != 1;
        const int tiles_m = use.tile.warp_m / 16, tiles_n = use.tile.warp_n / 8;
        // The operands' indices with every enclosing let inlined: a let may depend on the lane
        // (e.g. a row index g = lane / 4), and the base must be lane 0's.
        Expr ia = first.a->index, ib = first.b->index;
        for (auto it = enclosing.rbegin(); it != enclosing.rend(); ++it) {
            ia = substitute(it->first, it->second, ia);
            ib = substitute(it->first, it->second, ib);
        }
        Expr k_at = loop->min + ks * 16;
        Expr lane_var = Variable::make(Int(32), lane) - threads.back()->min;
        const std::map<std::string, Expr> at_base{{lane, threads.back()->min}, {k, k_at}};
        Expr base_a = simplify(substitute(at_base, ia));
        Expr base_b = simplify(substitute(at_base, ib));
        Expr r = lane_var % 8, q = lane_var / 8;

        Fragments result;
        auto &lets = result.lets;
        auto ldmatrix = [&](const Load *like, const Expr &row, int64_t along, bool trans, const std::string &prefix) {
            std::vector<std::string> names;
            std::vector<Expr> elements;
            for (int c = 0; c < 8; c++) {
                elements.push_back(Load::make(like->type, like->name, simplify(row + (int)(c * along)), Buffer<>(),
                                              Parameter(), const_true(), ModulusRemainder()));
            }
            for (int reg = 0; reg < 4; reg++) {
                std::vector<Expr> args{reg};
                args.insert(args.end(), elements.begin(), elements.end());
                names.push_back(unique_name(prefix));
                lets.emplace_back(names.back(), Call::make(UInt(32), trans ? ldmatrix_trans_name : ldmatrix_name, args,
                                                           Call::PureExtern));
            }
            return names;
        };
        // A: matrix q of tile j holds rows m in 16 j + 8 (q % 2) + [0, 8), k in 8 (q / 2) + [0, 8).
        auto &a_regs = result.a_regs, &b_regs = result.b_regs;
        for (int j = 0; j < tiles_m; j++) {
            Expr m_off, k_off;
            if (!a_trans) {
                m_off = 16 * j + r + 8 * (q % 2), k_off = 8 * (q / 2);
            } else {
                m_off = 16 * j + 8 * (q % 2), k_off = r + 8 * (q / 2);
            }
            Expr row = base_a + m_off * (int)a_m + k_off * (int)a_k;
            a_regs.push_back(ldmatrix(first.a, row, a_trans ? a_m : a_k, a_trans, "tc_a"));
        }
        // B: matrix q of pair p holds k in 8 (q % 2) + [0, 8), n in 16 p + 8 (q / 2) + [0, 8).
        for (int p = 0; p < tiles_n / 2; p++) {
            Expr n_off, k_off;
            if (!b_trans) {
                n_off = 16 * p + r + 8 * (q / 2), k_off = 8 * (q % 2);
            } else {
                n_off = 16 * p + 8 * (q / 2), k_off = r + 8 * (q % 2);
            }
            Expr row = base_b + n_off * (int)b_n + k_off * (int)b_k;
            b_regs.push_back(ldmatrix(first.b, row, b_trans ? b_n : b_k, b_trans, "tc_b"));
        }
        return result;
    }

    /** The mma.sync markers of one K step, reading the fragment registers as the variables
     * `f` names (its lets, or lets of the register slots). */
    Stmt mma_step(const TensorCoreUse &use, const Fragments &f,
                  const std::map<std::tuple<int, int, int, int>, const Update *> &by_position,
                  const std::string &acc_buffer) {
        const int tiles_m = use.tile.warp_m / 16, tiles_n = use.tile.warp_n / 8;
        const auto &a_regs = f.a_regs, &b_regs = f.b_regs;
        // One mma per (j, i): c_q is the accumulator (e, h) = (q % 2, q / 2) of tile (i, j).
        const char *mma = use.element.is_bfloat() ? mma_bf16_name : mma_f16_name;
        std::vector<Stmt> steps;
        for (int j = 0; j < tiles_m; j++) {
            for (int i = 0; i < tiles_n; i++) {
                std::vector<Expr> index(4);
                std::vector<std::string> c(4);
                std::vector<Expr> operands;
                for (const std::string &a : a_regs[j]) {
                    operands.push_back(Variable::make(UInt(32), a));
                }
                operands.push_back(Variable::make(UInt(32), b_regs[i / 2][2 * (i % 2)]));
                operands.push_back(Variable::make(UInt(32), b_regs[i / 2][2 * (i % 2) + 1]));
                for (int qq = 0; qq < 4; qq++) {
                    index[qq] = by_position.at({i, j, qq % 2, qq / 2})->index;
                    c[qq] = unique_name("tc_c");
                    operands.push_back(Variable::make(Float(32), c[qq]));
                }
                std::vector<Stmt> stores;
                for (int qq = 0; qq < 4; qq++) {
                    std::vector<Expr> args{qq};
                    args.insert(args.end(), operands.begin(), operands.end());
                    stores.push_back(Store::make(acc_buffer, Call::make(Float(32), mma, args, Call::PureExtern),
                                                 index[qq], Parameter(), const_true(), ModulusRemainder()));
                }
                Stmt s = Block::make(stores);
                for (int qq = 3; qq >= 0; qq--) {
                    s = LetStmt::make(c[qq],
                                      Load::make(Float(32), acc_buffer, index[qq], Buffer<>(), Parameter(),
                                                 const_true(), ModulusRemainder()),
                                      s);
                }
                steps.push_back(s);
            }
        }
        return Block::make(steps);
    }
};

}  // namespace

Stmt rewrite_inner_products(const Stmt &s, const std::vector<TensorCoreUse> &uses, std::vector<OperandRows> *rows,
                            const std::map<std::string, int> &register_stages) {
    if (uses.empty()) return s;
    return RewriteInnerProducts(uses, rows, register_stages).mutate(s);
}

}  // namespace alcop
