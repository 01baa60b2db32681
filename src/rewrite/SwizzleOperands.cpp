#include "rewrite/SwizzleOperands.h"

#include "Error.h"
#include "analysis/BankConflicts.h"
#include "analysis/KernelContext.h"
#include "analysis/PipelineAnalysis.h"
#include "codegen/TensorCoreMarkers.h"

#include <map>
#include <numeric>
#include <optional>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** `index` with the lets of `lets` (outermost first) that it uses substituted, simplified. */
Expr with_lets(Expr index, const std::vector<std::pair<std::string, Expr>> &lets) {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
        if (expr_uses_var(index, it->first)) index = Let::make(it->first, it->second, index);
    }
    return simplify(substitute_in_all_lets(index));
}

bool is_ldmatrix(const Call *c) {
    return c && (c->name == ldmatrix_name || c->name == ldmatrix_trans_name);
}

/** One Load or Store of a shared allocation, with the bytes it may touch. */
struct Access {
    std::string allocation;
    bool bounded = false;
    int64_t lo = 0, hi = 0;  ///< closed byte range
    std::string produced;    ///< the innermost Func being produced around it, if any
    /** What is known of the index (its ramp's base, for a vector) modulo a power of two: the
     * node's own alignment, or what its enclosing lets prove where Halide left none (an
     * OpenCL copy's store). */
    ModulusRemainder alignment;
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
    std::set<std::string> fields;  ///< the variables the buffer fields became

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
        fields.insert("alcop_field " + field.str());
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
        // A loop of constant bounds ranges over its values (a guarded tail over its constant
        // bound: loop_max); any other (the blocks, the K tiles) stays a symbol, which an
        // index that lies in one tile for every value cancels.
        const Expr max = loop_max(simplify(with_lets(op->min + op->extent - 1, lets)));
        const bool ranges = is_const(op->min) && is_const(max);
        ScopedBinding<Interval> b(ranges, scope, op->name, Interval(op->min, max));
        loops.push_back(op->name);
        op->body.accept(this);
        loops.pop_back();
    }
    std::vector<std::string> loops;  ///< the enclosing loops' variables
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
    // A copy that fewer threads run than the block has sits under a guard on the thread
    // index (GuardWithIf on the fused thread loop: `if (ty*32 + tx <= 255)`). Its writes lie
    // in the tile only for the threads the guard lets through, so the loops are narrowed to
    // them inside it.
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        KernelContext guarded;
        guarded.lets = lets;
        for (const std::string &v : loops) {
            if (scope.contains(v)) guarded.loops.emplace_back(v, scope.get(v));
        }
        guarded.assume(op->condition);
        for (const auto &l : guarded.loops) {
            scope.push(l.first, l.second);
        }
        op->then_case.accept(this);
        for (const auto &l : guarded.loops) {
            scope.pop(l.first);
        }
        if (op->else_case.defined()) op->else_case.accept(this);
    }
    void visit(const ProducerConsumer *op) override {
        if (op->is_producer) producing.push_back(op->name);
        IRVisitor::visit(op);
        if (op->is_producer) producing.pop_back();
    }
    void record(const IRNode *node, const std::string &name, const Expr &index, Type t,
                const ModulusRemainder &alignment) {
        if (!shared.count(name)) return;
        Access a;
        a.allocation = name;
        a.produced = producing.empty() ? "" : producing.back();
        BoundableTerms slot_terms(scope);
        Expr bounded_index = slot_terms.mutate(with_lets(index, lets));
        // A copy's index adds a buffer field (an output's min), or a loop's variable (the
        // chunk a let's base starts at), in one let and subtracts it in another, which the
        // simplifier leaves: ((t - (ko + 2)) * 2 + ((ko + 2) * 2 + u)) * 8 bounds as ko's whole
        // range. Collecting each such variable's terms (the solver's job) cancels them, and
        // what remains has tight bounds and shows the alignment Halide did not record.
        std::vector<std::string> terms = loops;
        terms.insert(terms.end(), slot_terms.fields.begin(), slot_terms.fields.end());
        if (const Ramp *r = bounded_index.as<Ramp>()) {
            bounded_index = Ramp::make(simplify(collect_terms(r->base, terms)), r->stride, r->lanes);
        } else {
            bounded_index = simplify(collect_terms(bounded_index, terms));
        }
        a.alignment = alignment;
        if (const Ramp *r = bounded_index.as<Ramp>()) {
            const ModulusRemainder proved = modulus_remainder(r->base);
            if (proved.modulus > alignment.modulus) a.alignment = proved;
        }
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
        record(op, op->name, op->index, op->type, op->alignment);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        record(op, op->name, op->index, op->value.type(), op->alignment);
        IRVisitor::visit(op);
    }
};

/** The swizzled tile an access lies in, or null. */
const SwizzledBuffer *tile_of(const Access &a, const std::vector<SwizzledBuffer> &tiles) {
    for (const SwizzledBuffer &t : tiles) {
        if (t.allocation == a.allocation && a.bounded && a.lo >= t.begin && a.hi < t.end) return &t;
    }
    return nullptr;
}

class ApplySwizzle : public IRMutator {
public:
    ApplySwizzle(const std::map<const IRNode *, Access> &accesses, const std::vector<SwizzledBuffer> &tiles,
                 const std::set<std::string> &operands)
        : accesses(accesses), tiles(tiles), operands(operands) {
    }

private:
    using IRMutator::visit;
    const std::map<const IRNode *, Access> &accesses;
    const std::vector<SwizzledBuffer> &tiles;
    const std::set<std::string> &operands;  ///< the tensor-core operands' Funcs

    const SwizzledBuffer *tile_of(const IRNode *node) const {
        auto it = accesses.find(node);
        return it == accesses.end() ? nullptr : alcop::tile_of(it->second, tiles);
    }

    ModulusRemainder alignment_of(const IRNode *node) const {
        return accesses.at(node).alignment;
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
        ModulusRemainder alignment = alignment_of(op);
        Expr index = swizzled(*t, mutate(op->index), op->type, alignment);
        return Load::make(op->type, op->name, index, op->image, op->param, mutate(op->predicate), alignment);
    }

    // The lets of the kernel being rewritten (inside its outermost GPU block loop), innermost
    // last. A tensor-core operand's copy writes its tile through lets that add the chunk's
    // offset in one place and take it away in another; the swizzle's XOR, applied to the index
    // as written, would keep both and stop LLVM from stepping the address by a constant each
    // chunk. With the lets substituted the terms cancel before the map applies (plugin bmm:
    // 2.58 -> 1.91 other instructions per mma; gemm f16 1.72 -> 1.56). Not for fp32 tiles:
    // their scalar copies share the lets' values across lanes (gemm f32 limits=optin would
    // spend 224 instead of 219). Lets outside the kernel stay: their values may read the
    // host's buffer descriptors (_halide_buffer_get_min), which a kernel cannot (substituted,
    // three fp32 GEMMs computed wrong numbers on pocl).
    std::vector<std::pair<std::string, Expr>> kernel_lets;
    bool in_kernel = false;

    Stmt visit(const For *op) override {
        if (in_kernel || op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        in_kernel = true;
        Stmt s = IRMutator::visit(op);
        in_kernel = false;
        return s;
    }

    Stmt visit(const LetStmt *op) override {
        Expr value = mutate(op->value);
        if (in_kernel) kernel_lets.emplace_back(op->name, value);
        Stmt body = mutate(op->body);
        if (in_kernel) kernel_lets.pop_back();
        if (value.same_as(op->value) && body.same_as(op->body)) return op;
        return LetStmt::make(op->name, value, body);
    }

    Stmt visit(const Store *op) override {
        const SwizzledBuffer *t = tile_of(op);
        if (!t) return IRMutator::visit(op);
        ModulusRemainder alignment = alignment_of(op);
        Expr index = mutate(op->index);
        if (operands.count(t->func)) index = with_lets(index, kernel_lets);
        index = swizzled(*t, index, op->value.type(), alignment);
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

/** The tiles of `func` where a swizzle may apply (see the file comment): one per allocation
 * (kernel) that writes it, with `swizzle` still to be set. Why an allocation has none goes to
 * *why. */
std::vector<SwizzledBuffer> swizzlable_tiles(const std::string &func, const CollectAccesses &collect, bool pipelined,
                                             const std::vector<SwizzleAlignedSlots> &aligned_slots, std::string *why) {
    std::ostringstream reason;
    auto say = [&]() -> std::ostringstream & {
        if (reason.tellp() > 0) reason << "; ";
        return reason;
    };
    // A pipelined buffer's tile is all its slots, where the plan aligned them to the
    // swizzle's period; slots only 16-byte aligned could straddle a 128-byte window.
    const SwizzleAlignedSlots *slots = nullptr;
    bool one_range = true;  // the loops that pipeline it agree on where its slots are
    for (const SwizzleAlignedSlots &a : aligned_slots) {
        if (a.func != func) continue;
        one_range = one_range && (!slots || (slots->begin == a.begin && slots->end == a.end));
        slots = &a;
    }
    if (!one_range) slots = nullptr;
    if (pipelined && !slots) {
        *why = "its slots are not aligned to the swizzle's period";
        debug(1) << "alcop swizzle: " << func << ": " << *why << "\n";
        return {};
    }
    // The tile in each allocation: the bytes its producer writes there, one constant range.
    std::map<std::string, SwizzledBuffer> written;
    std::set<std::string> unbounded;
    for (const auto &a : collect.accesses) {
        const Access &x = a.second;
        if (x.produced != func) continue;
        if (!x.bounded) unbounded.insert(x.allocation);
        auto [it, first] = written.try_emplace(x.allocation);
        SwizzledBuffer &t = it->second;
        t.begin = first ? x.lo : std::min(t.begin, x.lo);
        t.end = first ? x.hi + 1 : std::max(t.end, x.hi + 1);
    }
    if (written.empty()) {
        // A copy lowering that writes the slots elsewhere (the tests' async-visibility
        // emulation writes them at the wait) leaves nothing to bound.
        say() << "no write of its copies was found inside its production";
    }
    std::vector<SwizzledBuffer> tiles;
    for (auto &[alloc, t] : written) {
        debug(1) << "alcop swizzle: " << func << " in " << alloc << " bounded " << !unbounded.count(alloc)
                 << " bytes [" << t.begin << ", " << t.end << ")\n";
        if (unbounded.count(alloc)) {
            say() << "the bytes its copies write could not be bounded";
            continue;
        }
        if (slots) {
            // Every write lies in the slots, which then are the tile.
            if (t.begin < slots->begin || t.end > slots->end) {
                say() << "its copies' writes are bounded as bytes [" << t.begin << ", " << t.end
                       << "), beyond its slots [" << slots->begin << ", " << slots->end << ")";
                continue;
            }
            t.begin = slots->begin;
            t.end = slots->end;
        }
        if (t.begin % 128 != 0 || t.end % 128 != 0) {
            say() << "its tile, bytes [" << t.begin << ", " << t.end << "), is not whole 128-byte windows";
            continue;
        }
        // Every other access of the allocation is inside the tile or clear of it.
        bool clean = true;
        for (const auto &a : collect.accesses) {
            const Access &x = a.second;
            if (x.allocation != alloc) continue;
            if (clean && !(x.bounded && ((x.lo >= t.begin && x.hi < t.end) || x.hi < t.begin || x.lo >= t.end))) {
                say() << "another access of its allocation, " << (x.produced.empty() ? "a read" : "a copy of " + user_name(x.produced))
                       << (x.bounded ? ", bounded as bytes [" + std::to_string(x.lo) + ", " + std::to_string(x.hi + 1) + ")" : ", unbounded")
                       << ", crosses its tile, bytes [" << t.begin << ", " << t.end << ")";
                clean = false;
            }
        }
        if (!clean) continue;
        t.func = func;
        t.allocation = alloc;
        tiles.push_back(t);
    }
    *why = reason.str();
    if (!why->empty()) debug(1) << "alcop swizzle: " << func << ": " << *why << "\n";
    return tiles;
}

/** What sending `kernels`' accesses (found on the unswizzled Stmt) through `tiles`' maps
 * would give: the bank conflicts left, and how many accesses go through a map of `mapped_by`
 * (the tiles on trial). The map moves whole 16-byte chunks, so an access of up to 16 bytes at
 * its natural alignment stays one access. */
struct SwizzleTrial {
    int conflicts = 0;
    int mapped = 0;
};
SwizzleTrial try_swizzle(const std::vector<KernelBankConflicts> &kernels, const std::vector<SwizzledBuffer> &tiles,
                         const std::vector<SwizzledBuffer> &mapped_by = {}) {
    SwizzleTrial trial;
    for (const KernelBankConflicts &k : kernels) {
        for (const SharedAccess &a : k.accesses) {
            LaneAddresses lanes = a.lanes;
            bool mapped = false;
            for (std::optional<int64_t> &lane : lanes) {
                for (const SwizzledBuffer &t : tiles) {
                    if (lane && t.allocation == a.buffer && *lane >= t.begin && *lane < t.end) {
                        for (const SwizzledBuffer &m : mapped_by) {
                            mapped = mapped || (m.allocation == t.allocation && m.begin == t.begin);
                        }
                        lane = t.swizzle.address(*lane, 1);
                        break;
                    }
                }
            }
            trial.conflicts += count_bank_conflicts(lanes, a.access_bytes).conflicts();
            trial.mapped += mapped;
        }
    }
    return trial;
}

}  // namespace

Stmt swizzle_operands(const Stmt &s, const std::vector<OperandRows> &operands, const std::set<std::string> &pipelined,
                      const std::vector<SwizzleAlignedSlots> &aligned_slots, std::vector<SwizzledBuffer> *plan) {
    // The other buffers the plan gave period-aligned slots: fp32 tiles, read as fragments.
    std::set<std::string> others;
    for (const SwizzleAlignedSlots &a : aligned_slots) {
        others.insert(a.func);
    }
    for (const OperandRows &o : operands) {
        others.erase(o.func);
    }
    if (operands.empty() && others.empty()) return s;
    CollectAccesses collect;
    s.accept(&collect);
    std::vector<SwizzledBuffer> tiles;

    // --- Tensor-core operands: the rule their rows give (ldmatrix reads 8 rows at once).
    std::set<std::string> seen;
    for (const OperandRows &o : operands) {
        if (!seen.insert(o.func).second) continue;
        const Swizzle sw = Swizzle::for_rows(o.row_bytes);
        if (sw.is_identity()) {
            // ldmatrix reads one chunk of 8 rows: rows of an odd number of chunks put them in 8
            // different chunk columns of a 128-byte window; rows of c chunks share banks
            // gcd(c, 8) ways, which no map of whole chunks within rows of this width undoes.
            const int64_t ways = std::gcd(o.row_bytes / Swizzle::chunk_bytes, int64_t(8));
            if (ways > 1) {
                user_warning << "alcop: the tensor-core operand tile " << user_name(o.func) << " (rows of " << o.row_bytes
                             << " bytes) is left unswizzled, so its ldmatrix reads are " << ways
                             << "-way bank-conflicted: the swizzle takes rows of 32 or 64 bytes or a multiple of 128 "
                                "(of 2-byte elements: a k tile or block width of 16, 32 or a multiple of 64).\n";
            }
            continue;
        }
        std::string why;
        std::vector<SwizzledBuffer> found = swizzlable_tiles(o.func, collect, pipelined.count(o.func), aligned_slots, &why);
        if (found.empty()) {
            // ldmatrix reads 8 rows of one column of chunks: unswizzled, rows a multiple of 128
            // bytes apart share their banks.
            user_warning << "alcop: the tensor-core operand tile " << user_name(o.func) << " (rows of " << o.row_bytes
                         << " bytes) is left unswizzled, so its ldmatrix reads are bank-conflicted: " << why << ".\n";
        }
        for (SwizzledBuffer &t : found) {
            t.row_bytes = o.row_bytes;
            t.swizzle = sw;
            tiles.push_back(t);
        }
    }

    // --- fp32 tiles: how far apart the lanes of a fragment read are depends on the schedule
    // (the thread tile, the vector width, the thread layout), so the window rule is chosen by
    // what it does to the kernels' real accesses: warp 0's addresses, found once, are sent
    // through each candidate map and their bank conflicts counted; a buffer keeps its layout
    // unless a rule strictly helps. (A vector access the rewrite could not prove aligned to
    // its size would become lanes, which this count does not see; the bank-conflict tests
    // count the rewritten Stmt.)
    std::vector<KernelBankConflicts> kernels;
    int conflicts = 0;
    for (const std::string &func : others) {
        std::string why;  // an fp32 tile keeps its layout unless a rule helps: nothing to say
        std::vector<SwizzledBuffer> candidates = swizzlable_tiles(func, collect, true, aligned_slots, &why);
        if (candidates.empty()) continue;
        if (kernels.empty()) {
            kernels = find_bank_conflicts(s);
            conflicts = try_swizzle(kernels, tiles).conflicts;
        }
        if (conflicts == 0) break;
        // A window map costs each access that goes through it about four issue slots (shift,
        // and, shift, xor; the fragment reads of an fp32 tile are scalar, so nothing folds),
        // and an SM issues four warp instructions in the time its shared memory serves one
        // wavefront: a rule pays only where it saves more wavefronts than it maps accesses.
        std::vector<SwizzledBuffer> best;
        int best_gain = 0;
        for (int bits = 1; bits <= 3; bits++) {
            std::vector<SwizzledBuffer> trial = tiles;
            for (SwizzledBuffer &t : candidates) {
                t.swizzle = Swizzle::for_windows(bits);
                t.row_bytes = t.swizzle.row_bytes;
                trial.push_back(t);
            }
            const SwizzleTrial result = try_swizzle(kernels, trial, candidates);
            const int gain = (conflicts - result.conflicts) - result.mapped;
            debug(1) << "alcop swizzle: " << func << " windows flipped on " << bits << " bits: " << result.conflicts
                     << " bank conflicts (" << conflicts << " before), " << result.mapped << " accesses mapped\n";
            if (gain > best_gain) {
                best_gain = gain;
                best = candidates;
            }
        }
        if (!best.empty()) {
            tiles.insert(tiles.end(), best.begin(), best.end());
            conflicts = try_swizzle(kernels, tiles).conflicts;
        }
    }
    if (tiles.empty()) return s;
    for (const SwizzledBuffer &t : tiles) {
        debug(1) << "alcop: " << t.func << " swizzled, rows of " << t.row_bytes << " bytes, bytes [" << t.begin << ", "
                 << t.end << ")\n";
    }
    if (plan) plan->insert(plan->end(), tiles.begin(), tiles.end());
    std::set<std::string> operand_funcs;
    for (const OperandRows &o : operands) {
        operand_funcs.insert(o.func);
    }
    return ApplySwizzle(collect.accesses, tiles, operand_funcs).mutate(s);
}

}  // namespace alcop
