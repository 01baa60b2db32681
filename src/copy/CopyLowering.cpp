#include "copy/CopyLowering.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"
#include "codegen/AsyncCopyMarkers.h"

#include <functional>
#include <map>
#include <optional>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Whether `s` holds a node of type Node (a loop, a branch). */
template<typename Node>
bool contains(const Stmt &s) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Node *) override {
            found = true;
        }

    public:
        bool found = false;
    } finder;
    s.accept(&finder);
    return finder.found;
}

std::vector<const Store *> stores_in(const Stmt &s) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Store *op) override {
            stores.push_back(op);
            IRVisitor::visit(op);
        }

    public:
        std::vector<const Store *> stores;
    } finder;
    s.accept(&finder);
    return finder.stores;
}

bool dense(const Expr &index) {
    const Ramp *r = index.as<Ramp>();
    return index.type().is_scalar() || (r && is_const_one(r->stride));
}

bool aligned_to(const ModulusRemainder &a, int elem_bytes, int bytes) {
    return (a.modulus * elem_bytes) % bytes == 0 && (a.remainder * elem_bytes) % bytes == 0;
}

/** The operands of a tree of `Op` nodes (a sum's terms, a conjunction's conjuncts), left to
 * right. */
template<typename Op>
std::vector<Expr> leaves(const Expr &e) {
    std::vector<Expr> result, pending{e};
    while (!pending.empty()) {
        const Expr x = pending.back();
        pending.pop_back();
        if (const Op *op = x.as<Op>()) {
            pending.push_back(op->b);
            pending.push_back(op->a);
        } else {
            result.push_back(x);
        }
    }
    return result;
}

/** How many leading lanes of `c` are true, when c is a conjunction of lane-uniform terms and
 * `ramp(r, 1, lanes) < E` style bounds (each true on a prefix of the lanes), or any scalar
 * condition; nullopt otherwise. The uniform terms make one condition, select(all, n, 0), so
 * that a copy zero-filled by a gather's bounds alone (conv2d's padding) is all or nothing, the
 * form predicate_copies folds a loop's range into: a min and a select per term would cost
 * three instructions a term and copy where a conjunction of predicates costs one. */
std::optional<Expr> leading_true_lanes(const Expr &c, int lanes) {
    const std::vector<Expr> conjuncts = leaves<And>(c);
    auto prefix = [&](const Expr &ramp, const Expr &limit, int inclusive) -> std::optional<Expr> {
        const Ramp *r = ramp.as<Ramp>();
        const Broadcast *b = limit.as<Broadcast>();
        if (!r || !b || !is_const_one(r->stride)) return std::nullopt;
        return clamp(b->value - r->base + inclusive, 0, lanes);
    };
    Expr uniform, count;
    for (const Expr &e : conjuncts) {
        // A scalar condition (a copy of one element per thread, e.g. a transposing one) or a
        // broadcast one holds for every lane or none.
        const Broadcast *b = e.as<Broadcast>();
        if (e.type().is_scalar() || b) {
            const Expr term = b ? b->value : e;
            uniform = uniform.defined() ? uniform && term : term;
            continue;
        }
        std::optional<Expr> n;
        if (const LT *lt = e.as<LT>()) n = prefix(lt->a, lt->b, 0);
        if (const LE *le = e.as<LE>()) n = prefix(le->a, le->b, 1);
        if (!n) return std::nullopt;
        count = count.defined() ? min(count, *n) : *n;
    }
    if (!count.defined()) count = lanes;
    return uniform.defined() ? select(uniform, count, 0) : count;
}

/** `index` with each clamp of a ramp (ClampedRamp) that `condition` keeps to its own lanes
 * replaced by the ramp: among the condition's conjuncts are ramp(base, 1, n) < b with b <= hi
 * + 1 and lo <= base (inside_clamp's form), so that every lane it keeps lies in [lo, hi], where
 * the clamp changes nothing. The zero fill of a reduction's last chunk says so of its coordinate
 * along K (rewrite/ZeroFilledTails.h). The gather so becomes a dense load, which reads past the
 * clamp's bounds in the lanes the condition zeroes: only a cp.async whose src-size stops at the
 * kept lanes may take it. Undefined where no clamp is so bounded. */
Expr unclamped(const Expr &index, const Expr &condition) {
    const std::vector<Expr> conjuncts = leaves<And>(condition);
    class Unclamp : public IRMutator {
        using IRMutator::visit;
        const std::vector<Expr> &conjuncts;
        bool kept_inside(const ClampedRamp &c) const {
            bool below = false, above = false;
            for (const Expr &e : conjuncts) {
                const LT *lt = e.as<LT>();
                const Ramp *r = lt ? lt->a.as<Ramp>() : nullptr;
                const Broadcast *b = lt ? lt->b.as<Broadcast>() : nullptr;
                if (r && b && is_const_one(r->stride) && r->lanes == c.ramp->lanes && equal(r->base, c.ramp->base)) {
                    below = below || can_prove(b->value <= c.hi + 1);
                }
                const Broadcast *uniform = e.as<Broadcast>();
                const LE *le = (uniform ? uniform->value : e).as<LE>();
                if (le && le->b.type().is_scalar() && equal(le->b, c.ramp->base)) {
                    above = above || can_prove(c.lo <= le->a);
                }
            }
            return below && above;
        }
        Expr visit(const Max *op) override {
            const std::optional<ClampedRamp> c = as_clamped_ramp(op);
            if (!c || !kept_inside(*c)) return IRMutator::visit(op);
            changed = true;
            return c->ramp;
        }

    public:
        bool changed = false;
        explicit Unclamp(const std::vector<Expr> &conjuncts) : conjuncts(conjuncts) {
        }
    } unclamp(conjuncts);
    const Expr result = unclamp.mutate(index);
    return unclamp.changed ? simplify(result) : Expr();
}

std::string type_suffix(Type t) {
    return std::string(t.is_float() ? "f" : t.is_int() ? "i" : "u") + std::to_string(t.bits());
}

/** The element slice [first, first + lanes) of a dense copy's value or index. */
Expr slice(const Expr &e, int first, int lanes) {
    if (const Ramp *r = e.as<Ramp>()) {
        return Ramp::make(simplify(r->base + first * r->stride), r->stride, lanes);
    }
    if (const Broadcast *b = e.as<Broadcast>()) {
        return Broadcast::make(b->value, lanes);
    }
    if (const Load *l = e.as<Load>()) {
        return Load::make(l->type.with_lanes(lanes), l->name, slice(l->index, first, lanes), l->image, l->param,
                          slice(l->predicate, first, lanes), l->alignment + first);
    }
    if (const Select *s = e.as<Select>()) {
        return Select::make(slice(s->condition, first, lanes), slice(s->true_value, first, lanes),
                            slice(s->false_value, first, lanes));
    }
    // Lane-wise conditions, so that a sliced predicate keeps the form leading_true_lanes reads.
    if (const And *a = e.as<And>()) return slice(a->a, first, lanes) && slice(a->b, first, lanes);
    if (const LT *lt = e.as<LT>()) return slice(lt->a, first, lanes) < slice(lt->b, first, lanes);
    if (const LE *le = e.as<LE>()) return slice(le->a, first, lanes) <= slice(le->b, first, lanes);
    return Shuffle::make_slice(e, first, 1, lanes);
}

/** `base / ratio` for the base of a dense load of `param` that its alignment proves a multiple
 * of `vector` (the elements of one copy), written as a sum of multiples of vector / ratio:
 * each term of the base divided by `vector` on its own, which is exact where the term is a
 * multiple of a stride the input promises (Parameter::stride_constraint; divided in that
 * stride), and for the one term left, if one is (the sum is a multiple). Why: Halide's
 * simplifier does not know the promises inside a kernel, so it keeps `(row * stride + column)
 * / vector` (the 16-byte load's index), which NVPTX computes per copy and chunk (an add, a
 * shift and a mul.wide); as `row * (stride / vector) + column / vector` each term is computed
 * once or advanced by a constant (AddressTerms.h). Undefined where that is not exact. */
Expr divided_by_terms(const Expr &base, int vector, int ratio, const Parameter &param,
                      const ModulusRemainder &alignment) {
    if (!param.defined() || !param.is_buffer() || alignment.modulus % vector != 0 ||
        alignment.remainder % vector != 0) {
        return Expr();
    }
    Scope<ModulusRemainder> strides;
    for (int d = 0; d < param.dimensions(); d++) {
        if (param.stride_constraint(d).defined()) {
            strides.push(param.name() + ".stride." + std::to_string(d), modulus_remainder(param.stride_constraint(d)));
        }
    }
    auto multiple = [&](const Expr &e) {
        const ModulusRemainder m = modulus_remainder(e, strides);
        return m.modulus % vector == 0 && m.remainder % vector == 0;
    };
    // e / vector for a multiple e of vector, divided in a factor that is one where it has one.
    std::function<Expr(const Expr &)> divide = [&](const Expr &e) -> Expr {
        if (const int64_t *c = as_const_int(e)) return make_const(e.type(), *c / vector);
        if (const Mul *m = e.as<Mul>()) {
            auto times = [](const Expr &a, const Expr &b) { return is_const_one(b) ? a : is_const_one(a) ? b : a * b; };
            if (multiple(m->b)) return times(m->a, divide(m->b));
            if (multiple(m->a)) return times(divide(m->a), m->b);
        }
        return e / vector;
    };
    const std::vector<Expr> terms = leaves<Add>(base);
    int unproven = 0;
    for (const Expr &t : terms) unproven += multiple(t) ? 0 : 1;
    if (terms.size() < 2 || unproven > 1) return Expr();
    Expr sum;
    for (const Expr &t : terms) {
        const Expr scaled = divide(t) * (vector / ratio);
        sum = sum.defined() ? sum + scaled : scaled;
    }
    return sum;
}

/** The variables `e` reads, with their types. */
std::map<std::string, Type> variables_of(const Expr &e) {
    class Names : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            names.emplace(op->name, op->type);
        }

    public:
        std::map<std::string, Type> names;
    } names;
    e.accept(&names);
    return names.names;
}

/** `e` as a list of terms whose sum it is: sums and differences flattened, a product of a sum
 * and a single term distributed over the sum. */
std::vector<Expr> linear_terms(const Expr &e) {
    if (const Add *a = e.as<Add>()) {
        std::vector<Expr> terms = linear_terms(a->a), b = linear_terms(a->b);
        terms.insert(terms.end(), b.begin(), b.end());
        return terms;
    }
    if (const Sub *d = e.as<Sub>()) {
        std::vector<Expr> terms = linear_terms(d->a);
        for (const Expr &t : linear_terms(d->b)) terms.push_back(make_zero(t.type()) - t);
        return terms;
    }
    if (const Mul *m = e.as<Mul>()) {
        std::vector<Expr> a = linear_terms(m->a), b = linear_terms(m->b), terms;
        if (a.size() > 1 && b.size() == 1) {
            for (const Expr &t : a) terms.push_back(t * m->b);
            return terms;
        }
        if (b.size() > 1 && a.size() == 1) {
            for (const Expr &t : b) terms.push_back(m->a * t);
            return terms;
        }
    }
    return {e};
}

/** Whether `e` divides, or takes a remainder of, something that reads `vars` (by any value). */
bool divides_value_of(const Expr &e, const Scope<> &vars) {
    class Find : public IRVisitor {
        using IRVisitor::visit;
        const Scope<> &vars;
        void visit(const Div *op) override {
            found = found || expr_uses_vars(op->a, vars);
            IRVisitor::visit(op);
        }
        void visit(const Mod *op) override {
            found = found || expr_uses_vars(op->a, vars);
            IRVisitor::visit(op);
        }

    public:
        bool found = false;
        explicit Find(const Scope<> &vars) : vars(vars) {
        }
    } find(vars);
    e.accept(&find);
    return find.found;
}

/** A copy's source index as (its terms that stay from chunk to chunk) + (those that move with
 * the chunk), where the chunk enters it through a division: an im2col gather's tap,
 * q / chunks_per_tap, in (tap + pixel - pad) * stride + ..., by a runtime value (the `conv2d`
 * generator) or a constant (the plugin's fp16 convolutions, whose channels and taps are
 * constants: 8x56x56 3.19 -> 2.66 other instructions per mma.sync). LLVM computes such
 * an index whole, for each copy and chunk; split, the marker rewrite computes the first sum
 * once, before the loop, and the second once a chunk for all the copies that share it
 * (AddressTerms.h), with the copy's own lets substituted so that the terms of the pixel and of
 * the tap come apart. Where the chunk enters affinely (a GEMM's rows along K), LLVM already
 * steps each address by a constant, and the copies' addresses differ by constants it folds
 * into immediates: split, K-major B's loop took 1.41 instructions per mma.sync, not 1.33.
 * Undefined where the index is left as it is. */
Expr split_by_chunk(const Expr &index, const Scope<Expr> &lets, const Scope<> &chunk_vars) {
    Expr e = index;
    for (bool again = true; again;) {
        again = false;
        for (auto it = lets.cbegin(); it != lets.cend(); ++it) {
            if (expr_uses_var(e, it.name())) {
                e = substitute(it.name(), it.value(), e);
                again = true;
            }
        }
    }
    if (!divides_value_of(e, chunk_vars)) return Expr();
    Expr fixed, moving;
    for (const Expr &t : linear_terms(e)) {
        Expr &sum = expr_uses_vars(t, chunk_vars) ? moving : fixed;
        sum = sum.defined() ? sum + t : t;
    }
    if (!fixed.defined() || !moving.defined()) return Expr();
    const Expr split = fixed + moving;
    // Only a regrouping of e's terms, which the simplifier cannot prove through the
    // divisions: checked where every variable takes a few sampled values instead (an index
    // that reads memory, which no sample folds, is left as it is).
    for (int sample = 1; sample <= 3; sample++) {
        std::map<std::string, Expr> values;
        int next = 7 * sample;
        for (const auto &[name, type] : variables_of(e)) {
            next = (next * 37 + 11) % 101;
            values[name] = make_const(type, next - 20);
        }
        const Expr was = simplify(substitute(values, e)), is = simplify(substitute(values, split));
        if (!is_const(was) || !is_const(is)) return Expr();
        internal_assert(equal(was, is)) << "alcop: a copy's index split by chunk changed its value: " << e << " -> "
                                        << split << "\n";
    }
    return split;
}

/** The cp.async form of `shared[index] = value`, or undefined (and why, at debug level 2)
 * when it does not qualify. A dense copy from an input buffer whose address is not provably
 * aligned to the copy's size sets *unaligned to that input. */
Stmt async_store(const Store *op, const Expr &index, const Expr &value, const ModulusRemainder &alignment,
                 const Scope<Expr> &lets, const Scope<> &chunk_vars, const KnownAlignments &known,
                 Parameter *unaligned) {
    auto stays_synchronous = [&](const char *why) {
        debug(2) << "alcop: copy stays synchronous (" << why << "): " << op->name << "[" << index << "] = " << value
                 << "\n";
        return Stmt();
    };
    const Type t = value.type();
    const int eb = t.bytes(), bytes = eb * t.lanes();
    if (bytes != 4 && bytes != 8 && bytes != 16) return stays_synchronous("not 4, 8 or 16 bytes");
    if (!is_const_one(op->predicate) || !dense(index)) return stays_synchronous("not a dense store");
    if (!aligned_to(alignment, eb, bytes)) return stays_synchronous("shared address not provably aligned");

    const Load *load = value.as<Load>();
    Expr src_bytes = bytes;
    Expr gathered_densely;  // holds `load` where it is a gather made dense
    if (const Select *s = value.as<Select>()) {
        load = s->true_value.as<Load>();
        std::optional<Expr> valid = leading_true_lanes(s->condition, t.lanes());
        if (!load || !is_const_zero(s->false_value) || !valid) {
            return stays_synchronous("not select(leading lanes, load, 0)");
        }
        // select(all, n, 0) stays a select (predicable_src_bytes), n scaled to bytes inside.
        const Select *all = valid->as<Select>();
        src_bytes = all ? select(all->condition, simplify(all->true_value * eb), 0) : simplify(*valid * eb);
        const Expr index = dense(load->index) ? Expr() : unclamped(load->index, s->condition);
        if (index.defined() && dense(index)) {
            gathered_densely = Load::make(load->type, load->name, index, load->image, load->param, load->predicate,
                                          alignment_of(index.as<Ramp>()->base, known));
            load = gathered_densely.as<Load>();
        }
    }
    if (!load || !is_const_one(load->predicate) || !dense(load->index)) return stays_synchronous("not a dense load");
    if (!load->param.defined() || load->param.host_alignment() % bytes != 0 ||
        !aligned_to(load->alignment, eb, bytes)) {
        if (load->param.defined() && load->param.is_buffer()) *unaligned = load->param;
        return stays_synchronous("global address not provably aligned");
    }
    // A copy moves bits. Halide 14 hands fp16 and bf16 values to an extern call as 16-bit
    // integers, so a 2-byte float copy marks the unsigned integers of its bits instead.
    const Type bits = t.is_float() && t.bits() == 16 ? UInt(16, t.lanes()) : t;
    Expr source = Load::make(bits, load->name, load->index, load->image, load->param, load->predicate, load->alignment);
    Expr marker =
        Call::make(bits, async_copy_prefix + type_suffix(bits.element_of()), {source, src_bytes}, Call::Extern);
    if (bytes == 16 && eb < 4) {
        // Halide's PTX backend slices a 16-byte vector of narrower elements into 8-byte
        // accesses aligned to 8 bytes only, which cp.async cannot take; a 4 x 32-bit access
        // of the same bytes is one 16-byte aligned access (CodeGen_PTX_Dev's 128-bit load and
        // store). The marker stays on the narrow lanes, so src_bytes zero-fills lane by lane.
        auto words = [&](const Expr &elements) {
            const Ramp *r = elements.as<Ramp>();
            // Not simplified: the simplifier would distribute the exact division over the
            // index's terms, and their bounds (SwizzleOperands.h) would no longer cancel.
            return Ramp::make(r->base / (4 / eb), 1, 4);
        };
        auto word_alignment = [&](const ModulusRemainder &a) {
            return ModulusRemainder(a.modulus / (4 / eb), a.remainder / (4 / eb));
        };
        const Type quad = UInt(32, 4);
        Expr divided = divided_by_terms(load->index.as<Ramp>()->base, bytes / eb, 4 / eb, load->param, load->alignment);
        if (divided.defined()) {
            const Expr split = split_by_chunk(divided, lets, chunk_vars);
            if (split.defined()) divided = split;
        }
        const Expr load_words = divided.defined() ? Ramp::make(divided, 1, 4) : words(load->index);
        source = reinterpret(bits, Load::make(quad, load->name, load_words, load->image, load->param, const_true(4),
                                              word_alignment(load->alignment)));
        marker = Call::make(bits, marker.as<Call>()->name, {source, src_bytes}, Call::Extern);
        return Store::make(op->name, reinterpret(quad, marker), words(index), op->param, const_true(4),
                           word_alignment(alignment));
    }
    return Store::make(op->name, marker, index, op->param, const_true(t.lanes()), alignment);
}

/** Splits each copy into the part before the compute and the part after it. Each store
 * becomes a cp.async (when `async` and it qualifies), a load into registers now and a store
 * from them later (when `staged`), or stays as it is. */
class SplitCopy : public IRMutator {
    using IRMutator::visit;

    const bool async, staged;
    const std::string registers;
    bool before = true;
    int next_register = 0;

    bool writes_slot = false;  // the part being built stores into shared memory

    const Scope<> &chunk_vars;     // the variables of the tile's chunk
    const KnownAlignments &known;  // of the kernel's variables (copy/GlobalAlignment.h)
    Scope<Expr> lets;           // the copy's own lets, in scope

    Stmt visit(const LetStmt *op) override {
        ScopedBinding<Expr> bind(lets, op->name, op->value);
        return IRMutator::visit(op);
    }

    Stmt visit(const ProducerConsumer *op) override {
        // Loading into registers produces nothing yet: the produce marker goes with the part
        // that fills the slot.
        const bool outer = writes_slot;
        writes_slot = false;
        Stmt body = mutate(op->body);
        Stmt result = writes_slot ? ProducerConsumer::make(op->name, op->is_producer, body) : body;
        writes_slot = outer || writes_slot;
        return result;
    }

    Stmt visit(const Store *op) override {
        const Type t = op->value.type();
        if (async) {
            // Split wide copies into 16-byte pieces; all of them must qualify.
            const int piece = std::max(1, std::min(t.lanes(), 16 / t.bytes()));
            std::vector<Stmt> pieces;
            for (int first = 0; t.lanes() % piece == 0 && first < t.lanes(); first += piece) {
                const bool whole = piece == t.lanes();
                Parameter input;
                Stmt s = async_store(op, whole ? op->index : slice(op->index, first, piece),
                                     whole ? op->value : slice(op->value, first, piece), op->alignment + first, lets,
                                     chunk_vars, known, &input);
                if (input.defined()) unaligned.push_back(input);
                if (!s.defined()) break;
                pieces.push_back(s);
            }
            if ((int)pieces.size() * piece == t.lanes()) {
                async_copies += before;
                writes_slot = writes_slot || before;
                return before ? Block::make(pieces) : Evaluate::make(0);
            }
        }
        if (!staged) {
            writes_slot = writes_slot || before;
            return before ? Stmt(op) : Evaluate::make(0);
        }
        writes_slot = writes_slot || !before;
        const int first = next_register;
        next_register += t.lanes();
        Expr slot = t.is_scalar() ? Expr(first) : Ramp::make(first, 1, t.lanes());
        if (before) {
            staged_copies++;
            return Store::make(registers, op->value, slot, Parameter(), const_true(t.lanes()), ModulusRemainder());
        }
        Expr value = Load::make(t, registers, slot, Buffer<>(), Parameter(), const_true(t.lanes()), ModulusRemainder());
        return Store::make(op->name, value, op->index, op->param, op->predicate, op->alignment);
    }

public:
    SplitCopy(bool async, bool staged, std::string registers, const Scope<> &chunk_vars, const KnownAlignments &known)
        : async(async), staged(staged), registers(std::move(registers)), chunk_vars(chunk_vars), known(known) {
    }

    Stmt split(const Stmt &copy, bool before_compute) {
        before = before_compute;
        next_register = 0;
        return mutate(copy);
    }

    int register_count() const {
        return next_register;
    }

    int staged_copies = 0;
    int async_copies = 0;
    /** The inputs of copies that are not cp.async only because their alignment is unknown. */
    std::vector<Parameter> unaligned;
};

/** The Func a copy produces (the producer marker in it), or "". */
std::string produced_by(const Stmt &copy) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const ProducerConsumer *op) override {
            if (op->is_producer && name.empty()) name = op->name;
            IRVisitor::visit(op);
        }

    public:
        std::string name;
    } finder;
    copy.accept(&finder);
    return finder.name;
}

/** The constraints that would let Halide prove `input`'s 16-byte vectors aligned, as a user
 * writes them, each with "; " after it: what is missing of a 16-byte aligned allocation, a
 * first element at 0 and strides that are whole vectors. */
std::string missing_alignment(const Parameter &input) {
    std::ostringstream lines;
    const std::string &n = input.name();
    const int vector = std::max(1, 16 / input.type().bytes());
    if (input.host_alignment() % 16 != 0) lines << n << ".set_host_alignment(16); ";
    const Expr min = input.min_constraint(0);
    if (!min.defined() || !is_const_zero(min)) lines << n << ".dim(0).set_min(0); ";
    for (int d = 1; d < input.dimensions(); d++) {
        if (!input.stride_constraint(d).defined()) {
            lines << n << ".dim(" << d << ").set_stride((" << n << ".dim(" << d << ").stride() / " << vector << ") * "
                  << vector << "); ";
        }
    }
    return lines.str();
}

/** A marker's src-size that predication keeps at one select: the whole copy (a constant), or a
 * zero fill of the whole copy, select(c, n, 0). A zero fill of some lanes (the channel tail of
 * conv2d's gather, the rows of a partial tile) is a chain of mins and selects, to which the
 * tile's condition would add an instruction per copy and registers to hold them (conv2d's
 * default kernel: 242 -> 254), where one branch costs two instructions a step. */
bool predicable_src_bytes(const Expr &src_bytes) {
    const Select *fill = src_bytes.as<Select>();
    return is_const(src_bytes) || (fill && is_const(fill->true_value) && is_const_zero(fill->false_value));
}

/** Whether every marker of `copy` has a predicable src-size. */
bool predicable(const Stmt &copy) {
    class Check : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if (op->name.rfind(async_copy_prefix, 0) == 0) ok = ok && predicable_src_bytes(op->args[1]);
            IRVisitor::visit(op);
        }

    public:
        bool ok = true;
    } check;
    copy.accept(&check);
    return check.ok;
}

/** `copy`, every store of which is a cp.async marker with a predicable src-size, with
 * `in_range` folded into the markers' src-size: a tile past the end is a zero fill of its
 * slot, which nothing reads, where a branch around the copy would split the loop's steady state
 * into two paths. cp.async reads no byte past src-size, so the source addresses of such a tile,
 * past the input, are never read. n becomes select(in_range, n, 0), the same for every copy of
 * the step, and select(c, n, 0) becomes select(c, select(in_range, n, 0), 0). */
Stmt predicate_copies(const Stmt &copy, const Expr &in_range) {
    class Predicate : public IRMutator {
        using IRMutator::visit;
        const Expr &in_range;
        Expr visit(const Call *op) override {
            if (op->name.rfind(async_copy_prefix, 0) != 0) return IRMutator::visit(op);
            Expr src_bytes = op->args[1];
            if (const Select *fill = src_bytes.as<Select>()) {
                src_bytes = select(fill->condition, select(in_range, fill->true_value, 0), 0);
            } else {
                src_bytes = select(in_range, src_bytes, 0);
            }
            return Call::make(op->type, op->name, {op->args[0], src_bytes}, op->call_type);
        }

    public:
        explicit Predicate(const Expr &in_range) : in_range(in_range) {
        }
    } predicate(in_range);
    return predicate.mutate(copy);
}

class Lowering : public CopyLowering {
    const CopyKind kind;
    int async_copies = 0;             ///< cp.async made since the last finish()
    std::set<std::string> *warned;  ///< the inputs already said to be unaligned
    const KnownAlignments &known;   ///< of the kernel's variables (copy/GlobalAlignment.h)

public:
    Lowering(CopyKind kind, std::set<std::string> *warned, const KnownAlignments &known)
        : kind(kind), warned(warned), known(known) {
        user_assert(kind != CopyKind::Async || async_copy_rewrite_registered())
            << "alcop: asynchronous copies need the NVPTX rewrite of cp.async markers, which is not registered "
            << "in this process (link the alcop library whole).\n";
    }

    IssuedCopy issue(const Stmt &copy, const Expr &in_range, bool overlap) override {
        // Staging needs one register per element of a fixed set of stores of one type.
        std::vector<const Store *> stores = stores_in(copy);
        bool stageable = overlap && kind != CopyKind::Synchronous && !contains<For>(copy);
        for (const Store *s : stores) {
            stageable = stageable && s->value.type().element_of() == stores[0]->value.type().element_of();
        }
        const std::string registers = unique_name(staging_prefix);
        // The chunk's variables: those of the tile's condition (the streaming loop's).
        Scope<> chunk_vars;
        for (const auto &v : variables_of(in_range)) chunk_vars.push(v.first);
        SplitCopy split(kind == CopyKind::Async, stageable, registers, chunk_vars, known);
        IssuedCopy result;
        const Stmt before = split.split(copy, true);
        // Predicated only where that leaves the copy without a branch (a copy that some
        // threads skip, Halide's guard, branches anyway) at one select a copy.
        const bool predicated =
            split.async_copies == (int)stores.size() && !contains<IfThenElse>(before) && predicable(before);
        result.before_compute = predicated ? predicate_copies(before, in_range) : IfThenElse::make(in_range, before);
        async_copies += split.async_copies;
        for (const Parameter &input : split.unaligned) {
            if (!warned->insert(input.name()).second) continue;
            const std::string missing = missing_alignment(input);
            user_warning << "alcop: the copies of " << user_name(produced_by(copy)) << " from " << input.name()
                         << " into shared memory are loads and stores through registers, not cp.async: Halide "
                         << "cannot prove their 16-byte vectors of " << input.name()
                         << " aligned. "
                         << (missing.empty() ? "Its constraints are set, so a tile starts off a whole vector: make the "
                                               "tiles' offsets along its first dimension multiples of " +
                                                   std::to_string(16 / input.type().bytes()) + " elements." :
                                               "Promise what it needs where " + input.name() + " is declared: " +
                                                   missing.substr(0, missing.size() - 1))
                         << "\n";
        }
        if (stageable && split.staged_copies > 0) {
            result.after_compute = IfThenElse::make(in_range, split.split(copy, false));
            result.registers.push_back({registers, stores[0]->value.type().element_of(), split.register_count()});
        }
        result.in_place = split.async_copies + split.staged_copies < (int)stores.size();
        return result;
    }

    Stmt commit() const override {
        if (kind != CopyKind::Async) return Stmt();
        return Evaluate::make(Call::make(Int(32), async_commit_name, {}, Call::Extern));
    }

    Stmt wait(int in_flight) const override {
        if (kind != CopyKind::Async) return Stmt();
        return Evaluate::make(Call::make(Int(32), async_wait_name, {in_flight}, Call::Extern));
    }

    // A loop none of whose copies became cp.async has no group to commit or wait for: its
    // barriers alone publish the slots, as with register-staged copies.
    Stmt finish(const Stmt &pipelined) override {
        const int made = async_copies;
        async_copies = 0;
        if (kind != CopyKind::Async || made > 0) return pipelined;
        class DropGroups : public IRMutator {
            using IRMutator::visit;
            Stmt visit(const Evaluate *op) override {
                const Call *c = op->value.as<Call>();
                if (c && (c->name == async_commit_name || c->name == async_wait_name)) return Evaluate::make(0);
                return op;
            }
        } drop;
        return drop.mutate(pipelined);
    }
};

}  // namespace

std::optional<ClampedRamp> as_clamped_ramp(const Expr &e) {
    const Max *max = e.as<Max>();
    const Min *min = max ? max->a.as<Min>() : nullptr;
    const Ramp *r = min ? min->a.as<Ramp>() : nullptr;
    const Broadcast *hi = min ? min->b.as<Broadcast>() : nullptr;
    const Broadcast *lo = max ? max->b.as<Broadcast>() : nullptr;
    if (!r || !hi || !lo || !is_const_one(r->stride)) return std::nullopt;
    return ClampedRamp{r, lo->value, hi->value};
}

Expr inside_clamp(const ClampedRamp &c) {
    const int lanes = c.ramp->lanes;
    return Expr(c.ramp) < Broadcast::make(c.hi + 1, lanes) && Broadcast::make(c.lo <= c.ramp->base, lanes);
}

Stmt with_registers(const std::string &name, Type t, int elements, const Stmt &body) {
    return Allocate::make(name, t, MemoryType::Register, {elements}, const_true(), Block::make(body, Free::make(name)));
}

CopyKind copy_kind_of(const Expr &stored) {
    Expr value = stored;
    while (const Call *r = value.as<Call>()) {
        if (!r->is_intrinsic(Call::reinterpret)) break;
        value = r->args[0];
    }
    const Call *c = value.as<Call>();
    const Load *l = value.as<Load>();
    if (c && c->name.rfind(async_copy_prefix, 0) == 0) return CopyKind::Async;
    if (l && l->name.rfind(staging_prefix, 0) == 0) return CopyKind::RegisterStaged;
    return CopyKind::Synchronous;
}

std::unique_ptr<CopyLowering> make_copy_lowering(CopyKind kind, std::set<std::string> *unaligned_inputs,
                                                 const KnownAlignments &known) {
    return std::make_unique<Lowering>(kind, unaligned_inputs, known);
}

CopyKind copy_kind_for(DeviceAPI device, const Target &target, CopyKind requested) {
    const bool has_cp_async =
        device == DeviceAPI::CUDA && target.has_feature(Target::CUDA) && target.get_cuda_capability_lower_bound() >= 80;
    user_assert(requested != CopyKind::Async || has_cp_async)
        << "alcop: asynchronous copies (CopyKind::Async) need a CUDA kernel and a target with "
        << "cuda_capability_80 or later; this kernel is for " << device << " on " << target.to_string() << ".\n";
    if (requested != CopyKind::Auto) return requested;
    return has_cp_async ? CopyKind::Async : CopyKind::RegisterStaged;
}

}  // namespace alcop
