#include "rewrite/SwizzleOperands.h"

#include "Error.h"
#include "codegen/TensorCoreMarkers.h"

#include <map>
#include <numeric>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

bool is_ldmatrix(const Call *c) {
    return c && (c->name == ldmatrix_name || c->name == ldmatrix_trans_name);
}

/** One Load or Store of a shared allocation, with the bytes it may touch. */
struct Access {
    std::string allocation;
    bool bounded = false;
    int64_t lo = 0, hi = 0;  ///< closed byte range
    std::string produced;    ///< the innermost Func being produced around it, if any
};

/** An index in a form whose bounds are constant where its value range is: a pipelined slot
 * index, (k + d) % stages, lies in [0, stages) whatever k is, so each `% c` term of a symbol
 * (a variable out of `scope`) becomes a variable of range [0, c) (listed in `ranges`, for
 * the caller to bind); a buffer's field (an output's min) becomes one variable per field, a
 * symbol whose terms cancel as the block index's do (Halide bounds such a call as
 * unbounded). */
class BoundableTerms : public IRMutator {
public:
    explicit BoundableTerms(const Scope<Interval> &scope) : scope(scope) {
    }
    std::vector<std::pair<std::string, Interval>> ranges;

private:
    using IRMutator::visit;
    const Scope<Interval> &scope;

    bool has_symbol(const Expr &e) const {
        struct Symbols : IRVisitor {
            const Scope<Interval> &scope;
            bool found = false;
            explicit Symbols(const Scope<Interval> &scope) : scope(scope) {
            }
            using IRVisitor::visit;
            void visit(const Variable *v) override {
                found = found || !scope.contains(v->name);
            }
        } symbols(scope);
        e.accept(&symbols);
        return symbols.found;
    }
    Expr visit(const Call *op) override {
        if (op->name.rfind("_halide_buffer_get_", 0) != 0) return IRMutator::visit(op);
        std::ostringstream field;
        field << Expr(op);
        return Variable::make(op->type, "alcop_field " + field.str());
    }
    Expr visit(const Mod *op) override {
        const int64_t *c = as_const_int(op->b);
        if (!c || *c <= 0 || !has_symbol(op->a)) return IRMutator::visit(op);
        const std::string name = unique_name("alcop_slot");
        ranges.emplace_back(name, Interval(make_zero(op->type), make_const(op->type, *c - 1)));
        return Variable::make(op->type, name);
    }
};

/** Every access to the kernels' shared allocations, bounded over the enclosing loops and lets. */
class CollectAccesses : public IRVisitor {
public:
    std::map<const IRNode *, Access> accesses;

private:
    using IRVisitor::visit;
    std::set<std::string> shared;
    Scope<Interval> scope;
    std::vector<std::string> producing;

    void visit(const Allocate *op) override {
        if (op->memory_type == MemoryType::GPUShared) shared.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        // A loop of constant extent ranges over its values; any other (the blocks, the K
        // tiles) stays a symbol, which an index that lies in one tile for every value cancels.
        const bool ranges = is_const(op->min) && is_const(op->extent);
        ScopedBinding<Interval> b(ranges, scope, op->name, Interval(op->min, simplify(op->min + op->extent - 1)));
        op->body.accept(this);
    }
    // The enclosing lets, inlined into an index before it is bounded: bounding a let alone
    // loses what its uses cancel (a copy's index subtracts the K tile a let added).
    std::vector<std::pair<std::string, Expr>> lets;

    void visit(const LetStmt *op) override {
        op->value.accept(this);
        ScopedBinding<Interval> b(scope, op->name, bounds_of_expr_in_scope(op->value, scope));
        lets.emplace_back(op->name, op->value);
        op->body.accept(this);
        lets.pop_back();
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        ScopedBinding<Interval> b(scope, op->name, bounds_of_expr_in_scope(op->value, scope));
        op->body.accept(this);
    }
    void visit(const ProducerConsumer *op) override {
        if (op->is_producer) producing.push_back(op->name);
        IRVisitor::visit(op);
        if (op->is_producer) producing.pop_back();
    }
    void record(const IRNode *node, const std::string &name, const Expr &index, Type t) {
        if (!shared.count(name)) return;
        Access a;
        a.allocation = name;
        a.produced = producing.empty() ? "" : producing.back();
        Expr e = index;
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
            if (expr_uses_var(e, it->first)) e = Let::make(it->first, it->second, e);
        }
        BoundableTerms slot_terms(scope);
        Expr bounded_index = slot_terms.mutate(simplify(substitute_in_all_lets(e)));
        for (const auto &r : slot_terms.ranges) {
            scope.push(r.first, r.second);
        }
        Interval i = bounds_of_expr_in_scope(bounded_index, scope);
        for (const auto &r : slot_terms.ranges) {
            scope.pop(r.first);
        }
        const Expr min = i.has_lower_bound() ? simplify(i.min) : Expr(),
                   max = i.has_upper_bound() ? simplify(i.max) : Expr();
        const int64_t *lo = min.defined() ? as_const_int(min) : nullptr;
        const int64_t *hi = max.defined() ? as_const_int(max) : nullptr;
        if (lo && hi) {
            const int bytes = t.element_of().bytes();
            a.bounded = true;
            a.lo = *lo * bytes;
            a.hi = (*hi + 1) * bytes - 1;
        }
        accesses[node] = a;
    }
    void visit(const Load *op) override {
        record(op, op->name, op->index, op->type);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        record(op, op->name, op->index, op->value.type());
        IRVisitor::visit(op);
    }
};

/** The swizzled tile an access lies in, or null. */
const SwizzledBuffer *tile_of(const Access &a, const std::vector<SwizzledBuffer> &tiles,
                              const std::map<std::string, std::string> &allocation) {
    for (const SwizzledBuffer &t : tiles) {
        if (allocation.at(t.func) == a.allocation && a.bounded && a.lo >= t.begin && a.hi < t.end) return &t;
    }
    return nullptr;
}

class ApplySwizzle : public IRMutator {
public:
    ApplySwizzle(const std::map<const IRNode *, Access> &accesses, const std::vector<SwizzledBuffer> &tiles,
                 const std::map<std::string, std::string> &allocation)
        : accesses(accesses), tiles(tiles), allocation(allocation) {
    }

private:
    using IRMutator::visit;
    const std::map<const IRNode *, Access> &accesses;
    const std::vector<SwizzledBuffer> &tiles;
    const std::map<std::string, std::string> &allocation;

    const SwizzledBuffer *tile_of(const IRNode *node) const {
        auto it = accesses.find(node);
        return it == accesses.end() ? nullptr : alcop::tile_of(it->second, tiles, allocation);
    }

    /** `index` (of elements of type t, known `alignment`) through the tile's map. The map
     * moves whole 16-byte chunks, so a dense vector of at most a chunk that starts on a
     * multiple of its size stays a dense vector (what a vectorized copy needs); any other
     * index is mapped lane by lane. Alignment is kept up to the chunk. */
    Expr swizzled(const SwizzledBuffer &t, const Expr &index, Type type, ModulusRemainder &alignment) const {
        const int bytes = type.element_of().bytes();
        const int64_t chunk = Swizzle::chunk_bytes / bytes;
        Expr result;
        const Ramp *r = index.as<Ramp>();
        if (r && is_const_one(r->stride) && chunk % r->lanes == 0 && alignment.modulus % r->lanes == 0 &&
            alignment.remainder % r->lanes == 0) {
            result = Ramp::make(t.swizzle.address(r->base, bytes), r->stride, r->lanes);
        } else {
            result = t.swizzle.address(index, bytes);
        }
        const int64_t m = std::gcd(alignment.modulus, chunk);
        alignment = ModulusRemainder(m, m ? alignment.remainder % m : 0);
        return result;
    }

    Expr visit(const Load *op) override {
        const SwizzledBuffer *t = tile_of(op);
        if (!t) return IRMutator::visit(op);
        ModulusRemainder alignment = op->alignment;
        Expr index = swizzled(*t, mutate(op->index), op->type, alignment);
        return Load::make(op->type, op->name, index, op->image, op->param, mutate(op->predicate), alignment);
    }

    Stmt visit(const Store *op) override {
        const SwizzledBuffer *t = tile_of(op);
        if (!t) return IRMutator::visit(op);
        ModulusRemainder alignment = op->alignment;
        Expr index = swizzled(*t, mutate(op->index), op->value.type(), alignment);
        return Store::make(op->name, mutate(op->value), index, op->param, mutate(op->predicate), alignment);
    }

    // An ldmatrix row is 8 consecutive elements from a 16-byte aligned row address, one chunk:
    // the row address goes through the map and the row stays consecutive after it.
    Expr visit(const Call *op) override {
        if (!is_ldmatrix(op)) return IRMutator::visit(op);
        const Load *e0 = op->args[1].as<Load>();
        const SwizzledBuffer *t = e0 ? tile_of(e0) : nullptr;
        if (!t) return IRMutator::visit(op);
        ModulusRemainder alignment = e0->alignment;
        Expr row = simplify(swizzled(*t, e0->index, e0->type, alignment));
        std::vector<Expr> args{op->args[0]};
        for (size_t c = 1; c < op->args.size(); c++) {
            const Load *l = op->args[c].as<Load>();
            internal_assert(l && tile_of(l) == t) << "tensor cores: an ldmatrix row outside its tile\n";
            args.push_back(Load::make(l->type, l->name, simplify(row + (int)(c - 1)), l->image, l->param, l->predicate,
                                      ModulusRemainder()));
        }
        return Call::make(op->type, op->name, args, op->call_type);
    }
};

}  // namespace

Stmt swizzle_operands(const Stmt &s, const std::vector<OperandRows> &operands, const std::set<std::string> &pipelined,
                      const std::vector<SwizzleAlignedSlots> &aligned_slots, std::vector<SwizzledBuffer> *plan) {
    if (operands.empty()) return s;
    CollectAccesses collect;
    s.accept(&collect);
    std::vector<SwizzledBuffer> tiles;
    std::map<std::string, std::string> allocation;  // operand -> its allocation
    std::set<std::string> seen;
    for (const OperandRows &o : operands) {
        if (!seen.insert(o.func).second) continue;
        Swizzle sw = Swizzle::for_rows(o.row_bytes);
        if (sw.is_identity()) continue;
        // A pipelined operand's tile is all its slots, where the plan aligned them to the
        // swizzle's period; slots only 16-byte aligned could straddle a 128-byte window.
        const SwizzleAlignedSlots *slots = nullptr;
        bool one_range = true;  // the loops that pipeline it agree on where its slots are
        for (const SwizzleAlignedSlots &a : aligned_slots) {
            if (a.func != o.func) continue;
            one_range = one_range && (!slots || (slots->begin == a.begin && slots->end == a.end));
            slots = &a;
        }
        if (!one_range) slots = nullptr;
        if (pipelined.count(o.func) && !slots) {
            debug(1) << "alcop swizzle: " << o.func << " is pipelined into slots not aligned for the swizzle\n";
            continue;
        }
        // The tile: the bytes its producer writes, one constant range in one allocation.
        std::set<std::string> allocs;
        bool bounded = true;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (const auto &a : collect.accesses) {
            if (a.second.produced != o.func) continue;
            allocs.insert(a.second.allocation);
            bounded = bounded && a.second.bounded;
            lo = std::min(lo, a.second.lo);
            hi = std::max(hi, a.second.hi);
        }
        debug(1) << "alcop swizzle: " << o.func << " rows " << o.row_bytes << " allocations " << allocs.size()
                 << " bounded " << bounded << " bytes [" << lo << ", " << hi << "]\n";
        if (slots) {
            // Every write lies in the slots, which then are the tile.
            if (lo < slots->begin || hi >= slots->end) continue;
            lo = slots->begin;
            hi = slots->end - 1;
        }
        if (allocs.size() != 1 || !bounded || lo % 128 != 0 || (hi + 1) % 128 != 0) continue;
        // Every other access of the allocation is inside the tile or clear of it.
        bool clean = true;
        for (const auto &a : collect.accesses) {
            const Access &x = a.second;
            if (x.allocation != *allocs.begin()) continue;
            const bool ok = x.bounded && ((x.lo >= lo && x.hi <= hi) || x.hi < lo || x.lo > hi);
            if (!ok) {
                debug(1) << "alcop swizzle: " << o.func << " crossed by an access, bytes [" << x.lo << ", " << x.hi
                         << "] bounded " << x.bounded << "\n";
            }
            clean = clean && ok;
        }
        if (!clean) continue;
        allocation[o.func] = *allocs.begin();
        tiles.push_back({o.func, o.row_bytes, lo, hi + 1, sw});
    }
    if (tiles.empty()) return s;
    if (plan) plan->insert(plan->end(), tiles.begin(), tiles.end());
    return ApplySwizzle(collect.accesses, tiles, allocation).mutate(s);
}

}  // namespace alcop
