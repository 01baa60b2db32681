#include "rewrite/ZeroFilledTails.h"

#include "analysis/KernelContext.h"
#include "analysis/TensorCoreAnalysis.h"
#include "copy/CopyLowering.h"
#include "directive/Requests.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Where an operand tile keeps the k coordinate: its flat element e lies at k = (e / stride) %
 * extent of the chunk. Where the tile's definition reads its input at clamp(k, lo, hi) and the
 * reduction stays inside [lo, hi], the clamp's bounds: it changes no element the zero fill
 * keeps. */
struct KLayout {
    int64_t stride = 0, extent = 0;
    Expr clamp_lo, clamp_hi;
};

/** The operand tiles of a tensor-core accumulator, keyed by tile (Func) name. */
using OperandTiles = std::map<std::string, KLayout>;

/** The calls of Funcs other than `self` in `e`. */
std::vector<const Call *> operand_calls(const Expr &e, const std::string &self) {
    struct Calls : IRVisitor {
        const std::string &self;
        std::vector<const Call *> found;
        explicit Calls(const std::string &self) : self(self) {
        }
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if ((op->call_type == Call::Halide || op->call_type == Call::Image) && op->name != self)
                found.push_back(op);
            IRVisitor::visit(op);
        }
    } calls(self);
    e.accept(&calls);
    return calls.found;
}

/** The k layout of `tile`, whose argument `k_arg` is the reduction's, from its storage order
 * and bound extents; none where an extent is not a constant or the storage is padded. */
std::optional<KLayout> k_layout(const Function &tile, const std::string &k_arg) {
    if (tile.schedule().memory_type() != MemoryType::GPUShared) return std::nullopt;
    std::optional<KLayout> k;
    int64_t stride = 1;
    for (const StorageDim &d : tile.schedule().storage_dims()) {
        if (d.alignment.defined() || d.fold_factor.defined()) return std::nullopt;
        const int64_t *extent = nullptr;
        for (const Bound &b : tile.schedule().bounds()) {
            if (b.var == d.var && b.extent.defined()) extent = as_const_int(b.extent);
        }
        if (!extent) return std::nullopt;
        if (d.var == k_arg) k = KLayout{stride, *extent};
        stride *= *extent;
    }
    return k;
}

/** `e` with each size of an input buffer that a constraint fixes to a constant replaced by it,
 * as Halide's lowering replaces it (Input::dim(0).set_min(0) makes A.min.0 a 0 in the kernel). */
Expr with_constant_constraints(const Expr &e) {
    class Constrain : public IRMutator {
        using IRMutator::visit;
        Expr visit(const Variable *op) override {
            const Parameter &p = op->param;
            if (!p.defined() || !p.is_buffer()) return op;
            for (int d = 0; d < p.dimensions(); d++) {
                const std::string dim = "." + std::to_string(d);
                for (const auto &[field, constraint] :
                     {std::make_pair(".min", p.min_constraint(d)), std::make_pair(".extent", p.extent_constraint(d)),
                      std::make_pair(".stride", p.stride_constraint(d))}) {
                    if (op->name == p.name() + field + dim && constraint.defined() && is_const(constraint)) {
                        return constraint;
                    }
                }
            }
            return op;
        }
    } constrain;
    return constrain.mutate(e);
}

/** The bounds of the clamp, max(min(k, hi), lo), through which `tile`'s definition reads its
 * coordinate `k`, where the reduction `r` that the tile's k coordinate runs over stays inside
 * them (the inputs' constant constraints substituted, as in the kernel); none where k enters any
 * other clamp, or where that is not proven. */
std::optional<std::pair<Expr, Expr>> k_clamp(const Function &tile, const std::string &k, const ReductionVariable &r) {
    struct Clamps : IRVisitor {
        const std::string &k;
        std::optional<std::pair<Expr, Expr>> bounds;
        bool other = false;
        explicit Clamps(const std::string &k) : k(k) {
        }
        using IRVisitor::visit;
        void visit(const Max *op) override {
            const Min *m = op->a.as<Min>();
            if (!m || !expr_uses_var(m->a, k)) return IRVisitor::visit(op);
            const Variable *v = m->a.as<Variable>();
            if (!v || v->name != k || expr_uses_var(m->b, k) || expr_uses_var(op->b, k) ||
                (bounds && !(equal(bounds->first, op->b) && equal(bounds->second, m->b)))) {
                other = true;
            }
            bounds = {op->b, m->b};
        }
    } clamps(k);
    if (tile.definition().values().size() != 1) return std::nullopt;
    substitute_in_all_lets(tile.definition().values()[0]).accept(&clamps);
    if (clamps.other || !clamps.bounds) return std::nullopt;
    const Expr lo = with_constant_constraints(clamps.bounds->first);
    const Expr hi = with_constant_constraints(clamps.bounds->second);
    const Expr first = with_constant_constraints(r.min), last = with_constant_constraints(r.min + r.extent - 1);
    if (!can_prove(lo <= first) || !can_prove(last <= hi)) return std::nullopt;
    return std::make_pair(simplify(lo), simplify(hi));
}

/** Each tensor-core accumulator's two operand tiles, where the update reads each through one
 * argument indexed by the chunked reduction variable and the tile's layout is known
 * (k_layout). */
std::map<std::string, OperandTiles> tensor_core_operand_tiles(const std::vector<Function> &outputs) {
    const std::map<std::string, Function> env = pipeline_functions(outputs);
    std::map<std::string, OperandTiles> result;
    for (const auto &request : collect_tensor_core_requests(outputs)) {
        auto f = env.find(request.first);
        if (f == env.end() || f->second.updates().size() != 1) continue;
        const Definition &update = f->second.updates()[0];
        // The reduction variable the chunks split (the innermost; a convolution's filter taps
        // are outer ones).
        if (update.schedule().rvars().empty()) continue;
        const ReductionVariable &rk = update.schedule().rvars()[0];
        const std::string &k = rk.var;
        const Expr value = substitute_in_all_lets(update.values()[0]);
        OperandTiles tiles;
        for (const Call *c : operand_calls(value, f->first)) {
            std::vector<size_t> k_args;
            for (size_t i = 0; i < c->args.size(); i++) {
                if (expr_uses_var(c->args[i], k)) k_args.push_back(i);
            }
            auto tile = env.find(staged_operand(f->first, c->name, env));
            if (k_args.size() != 1 || tile == env.end() || k_args[0] >= tile->second.args().size()) break;
            const std::string &tile_k = tile->second.args()[k_args[0]];
            std::optional<KLayout> layout = k_layout(tile->second, tile_k);
            if (!layout) break;
            // The tile's k coordinate is the reduction's own where the update reads it at r.
            const Variable *read_at = c->args[k_args[0]].as<Variable>();
            if (read_at && read_at->name == k) {
                if (auto clamp = k_clamp(tile->second, tile_k, rk))
                    std::tie(layout->clamp_lo, layout->clamp_hi) = *clamp;
            }
            tiles[tile->first] = *layout;
        }
        if (tiles.size() == 2) result[f->first] = tiles;
    }
    return result;
}

/** The first serial loop in a chunk loop's body whose extent is not a constant and which
 * accumulates into one of `accumulators` (accumulates_into), with the lets between the chunk
 * loop and it, outermost first. */
struct GuardedStep {
    const For *loop = nullptr;
    std::string accumulator;
    std::vector<std::pair<std::string, Expr>> lets;
};

GuardedStep find_guarded_step(const Stmt &chunk_body, const std::map<std::string, OperandTiles> &accumulators) {
    struct Find : IRVisitor {
        const std::map<std::string, OperandTiles> &accumulators;
        GuardedStep found;
        std::vector<std::pair<std::string, Expr>> lets;
        explicit Find(const std::map<std::string, OperandTiles> &a) : accumulators(a) {
        }
        using IRVisitor::visit;
        void visit(const LetStmt *op) override {
            lets.emplace_back(op->name, op->value);
            IRVisitor::visit(op);
            lets.pop_back();
        }
        std::string accumulated(const Stmt &body) const {
            for (const auto &a : accumulators) {
                if (accumulates_into(body, a.first)) return a.first;
            }
            return "";
        }
        void visit(const For *op) override {
            if (found.loop) return;
            if (op->for_type == ForType::Serial && !is_const(op->extent)) {
                const std::string a = accumulated(op->body);
                if (!a.empty()) {
                    found = {op, a, lets};
                    return;
                }
            }
            IRVisitor::visit(op);
        }
    } find(accumulators);
    chunk_body.accept(&find);
    return find.found;
}

/** Inside a chunk loop: the copies of the operand tiles write 0 past `trips` along k, and
 * the step loop runs `steps` trips. */
class ZeroFillProducers : public KernelContextMutator {
public:
    ZeroFillProducers(KernelContext ctx, const OperandTiles &tiles, Expr trips, const For *step, int64_t steps,
                      int &producers, bool &unreadable)
        : KernelContextMutator(std::move(ctx)), tiles(tiles), trips(std::move(trips)), step(step), steps(steps),
          producers(producers), unreadable(unreadable) {
    }

private:
    using KernelContextMutator::visit;
    const OperandTiles &tiles;
    const Expr trips;
    const For *step;
    const int64_t steps;
    int &producers;
    bool &unreadable;
    const KLayout *layout = nullptr;  ///< inside a tile's producer
    /** The tile's first element: the least index any of its copies writes (thread 0's first
     * in the first round; each unrolled round is a store of its own). Undefined while the
     * producer is read for it. */
    std::optional<int64_t> tile_first;
    std::optional<int64_t> least_written;

    Stmt visit(const ProducerConsumer *op) override {
        auto t = tiles.find(op->name);
        if (!op->is_producer || t == tiles.end()) return IRMutator::visit(op);
        producers++;
        layout = &t->second;
        // Two walks of the producer: the first finds the tile's first element, the second
        // rewrites the copies.
        least_written.reset();
        mutate(op->body);
        tile_first = least_written;
        if (!tile_first) unreadable = true;
        const Stmt body = tile_first ? mutate(op->body) : op->body;
        layout = nullptr;
        tile_first.reset();
        return ProducerConsumer::make(op->name, true, body);
    }

    Stmt visit(const For *op) override {
        if (op == step) {
            return For::make(op->name, op->min, make_const(op->extent.type(), steps), op->for_type, op->device_api,
                             op->body);
        }
        ctx.push_loop(op);
        const Stmt s = IRMutator::visit(op);
        ctx.loops.pop_back();
        return s;
    }

    Stmt visit(const Store *op) override {
        if (!layout) return IRMutator::visit(op);
        const Ramp *ramp = op->index.as<Ramp>();
        if (!tile_first) {
            const Interval written = ctx.bounds(ramp ? ramp->base : op->index);
            const Expr least = written.has_lower_bound() ? simplify(written.min) : Expr();
            const int64_t *c = least.defined() ? as_const_int(least) : nullptr;
            if (!c) {
                unreadable = true;
            } else if (!least_written || *c < *least_written) {
                least_written = *c;
            }
            return op;
        }
        Expr inside = inside_k(op);
        const Expr clamped = inside_clamps(op);
        if (clamped.defined()) inside = inside && clamped;
        // Into the copy's own zero fill where it has one (a select of a guarded copy), so that
        // the copy lowering reads one condition (a cp.async's src-size).
        const Select *fill = op->value.as<Select>();
        const Expr value = fill && is_const_zero(fill->false_value) ?
                               select(fill->condition && inside, fill->true_value, fill->false_value) :
                               select(inside, op->value, make_zero(op->value.type()));
        return Store::make(op->name, value, op->index, op->param, op->predicate, op->alignment);
    }

    /** For a vector along k whose values the tile's definition reads at clamp(k, lo, hi)
     * (KLayout): each such clamp of the vector as inside_clamp (copy/CopyLowering.h) states it.
     * That holds on every lane inside the step count (its k is the reduction's, inside [lo,
     * hi]), so it changes no value; it is what the copy lowering reads to make the gather a
     * dense cp.async that zero-fills past K. Undefined where there is no such clamp. */
    Expr inside_clamps(const Store *op) const {
        const Ramp *ramp = op->index.as<Ramp>();
        if (!layout->clamp_hi.defined() || !ramp || layout->stride != 1) return Expr();
        struct Clamps : IRVisitor {
            const KLayout &layout;
            const int lanes;
            Expr facts;
            Clamps(const KLayout &layout, int lanes) : layout(layout), lanes(lanes) {
            }
            using IRVisitor::visit;
            void visit(const Max *op) override {
                const std::optional<ClampedRamp> c = as_clamped_ramp(op);
                if (c && c->ramp->lanes == lanes && can_prove(c->hi == layout.clamp_hi) &&
                    can_prove(c->lo == layout.clamp_lo)) {
                    facts = facts.defined() ? facts && inside_clamp(*c) : inside_clamp(*c);
                    return;
                }
                IRVisitor::visit(op);
            }
        } clamps(*layout, ramp->lanes);
        op->value.accept(&clamps);
        return clamps.facts;
    }

    /** Where the store's elements lie before the step count along k. A vector along k, in one
     * row of it, is a ramp of k against the count, and one across k rows (a vector along M or
     * N) is the same k for all its lanes: the forms the copy lowering reads as a prefix of the
     * lanes (cp.async's src-size). Elsewhere each lane's k. */
    Expr inside_k(const Store *op) const {
        const Type t = op->index.type().element_of();
        const Expr first = make_const(t, *tile_first);
        const Expr stride = make_const(t, layout->stride), k_extent = make_const(t, layout->extent);
        const Ramp *ramp = op->index.as<Ramp>();
        if (!ramp) return (op->index - first) / stride % k_extent < trips;
        const int lanes = ramp->lanes;
        // The vector starts at a multiple of its lanes from the tile's first element.
        const ModulusRemainder &a = op->alignment;
        const bool whole = is_const_one(ramp->stride) && a.modulus % lanes == 0 &&
                           mod_imp(a.remainder - *tile_first, (int64_t)lanes) == 0;
        if (whole && layout->stride == 1 && layout->extent % lanes == 0) {
            return Ramp::make((ramp->base - first) % k_extent, make_one(t), lanes) < Broadcast::make(trips, lanes);
        }
        if (whole && layout->stride % lanes == 0) {
            return Broadcast::make((ramp->base - first) / stride % k_extent < trips, lanes);
        }
        return (op->index - Broadcast::make(first, lanes)) / Broadcast::make(stride, lanes) %
                   Broadcast::make(k_extent, lanes) <
               Broadcast::make(trips, lanes);
    }
};

class ZeroFillTails : public KernelContextMutator {
public:
    explicit ZeroFillTails(const std::map<std::string, OperandTiles> &accumulators) : accumulators(accumulators) {
    }

private:
    using KernelContextMutator::visit;
    const std::map<std::string, OperandTiles> &accumulators;
    int kernel_depth = 0;

    Stmt visit(const For *op) override {
        const bool block = op->for_type == ForType::GPUBlock;
        if (kernel_depth > 0 && op->for_type == ForType::Serial) {
            const Stmt rewritten = zero_fill(op);
            if (rewritten.defined()) return rewritten;
        }
        kernel_depth += block;
        if (kernel_depth > 0 && !block) ctx.push_loop(op);
        const Stmt s = IRMutator::visit(op);
        if (kernel_depth > 0 && !block) ctx.loops.pop_back();
        kernel_depth -= block;
        return s;
    }

    /** The chunk loop `chunk` with its tail zero-filled, or an undefined Stmt where it has no
     * guarded step loop of a tensor-core accumulator this pass can read. */
    Stmt zero_fill(const For *chunk) {
        const GuardedStep step = find_guarded_step(chunk->body, accumulators);
        if (!step.loop) return Stmt();
        const OperandTiles &tiles = accumulators.at(step.accumulator);
        // The step loop's extent where the producers are: the lets inside the chunk loop inlined.
        const Expr trips = KernelContext{step.lets, {}}.inline_lets(step.loop->extent);
        KernelContext inside = ctx;
        inside.push_loop(chunk);
        // A whole chunk's steps: the most the count takes, which each tile must hold along K.
        const Interval range = inside.bounds(trips);
        const int64_t *steps = range.has_upper_bound() ? as_const_int(range.max) : nullptr;
        if (!steps) return Stmt();
        for (const auto &t : tiles) {
            if (t.second.extent < *steps) return Stmt();
        }

        int producers = 0;
        bool unreadable = false;
        const Stmt body =
            ZeroFillProducers(inside, tiles, trips, step.loop, *steps, producers, unreadable).mutate(chunk->body);
        if (unreadable || producers != (int)tiles.size()) return Stmt();
        return For::make(chunk->name, chunk->min, chunk->extent, chunk->for_type, chunk->device_api, body);
    }
};

}  // namespace

Stmt zero_fill_k_tails(const Stmt &s, const std::vector<Function> &outputs) {
    const std::map<std::string, OperandTiles> accumulators = tensor_core_operand_tiles(outputs);
    if (accumulators.empty()) return s;
    return ZeroFillTails(accumulators).mutate(s);
}

}  // namespace alcop
