#include "copy/CopyLowering.h"

#include "Error.h"
#include "codegen/AsyncCopyMarkers.h"

#include <optional>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

bool contains_loop(const Stmt &s) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const For *) override {
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

/** How many leading lanes of `c` are true, when c is a conjunction of lane-uniform terms and
 * `ramp(r, 1, lanes) < E` style bounds (each true on a prefix of the lanes); nullopt otherwise. */
std::optional<Expr> leading_true_lanes(const Expr &c, int lanes) {
    if (const Broadcast *b = c.as<Broadcast>()) {
        return select(b->value, lanes, 0);
    }
    if (const And *a = c.as<And>()) {
        auto x = leading_true_lanes(a->a, lanes), y = leading_true_lanes(a->b, lanes);
        if (x && y) return min(*x, *y);
        return std::nullopt;
    }
    auto prefix = [&](const Expr &ramp, const Expr &limit, int inclusive) -> std::optional<Expr> {
        const Ramp *r = ramp.as<Ramp>();
        const Broadcast *b = limit.as<Broadcast>();
        if (!r || !b || !is_const_one(r->stride)) return std::nullopt;
        return clamp(b->value - r->base + inclusive, 0, lanes);
    };
    if (const LT *lt = c.as<LT>()) return prefix(lt->a, lt->b, 0);
    if (const LE *le = c.as<LE>()) return prefix(le->a, le->b, 1);
    return std::nullopt;
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

/** The cp.async form of `shared[index] = value`, or undefined (and why, at debug level 2)
 * when it does not qualify. */
Stmt async_store(const Store *op, const Expr &index, const Expr &value, const ModulusRemainder &alignment) {
    auto stays_synchronous = [&](const char *why) {
        debug(2) << "alcop: copy stays synchronous (" << why << "): " << op->name << "[" << index << "] = " << value << "\n";
        return Stmt();
    };
    const Type t = value.type();
    const int eb = t.bytes(), bytes = eb * t.lanes();
    if (bytes != 4 && bytes != 8 && bytes != 16) return stays_synchronous("not 4, 8 or 16 bytes");
    if (!is_const_one(op->predicate) || !dense(index)) return stays_synchronous("not a dense store");
    if (!aligned_to(alignment, eb, bytes)) return stays_synchronous("shared address not provably aligned");

    const Load *load = value.as<Load>();
    Expr src_bytes = bytes;
    if (const Select *s = value.as<Select>()) {
        load = s->true_value.as<Load>();
        std::optional<Expr> valid = leading_true_lanes(s->condition, t.lanes());
        if (!load || !is_const_zero(s->false_value) || !valid) {
            return stays_synchronous("not select(leading lanes, load, 0)");
        }
        src_bytes = simplify(*valid * eb);
    }
    if (!load || !is_const_one(load->predicate) || !dense(load->index)) return stays_synchronous("not a dense load");
    if (!load->param.defined() || load->param.host_alignment() % bytes != 0 || !aligned_to(load->alignment, eb, bytes)) {
        return stays_synchronous("global address not provably aligned");
    }
    Expr marker = Call::make(t, async_copy_prefix + type_suffix(t.element_of()), {Expr(load), src_bytes}, Call::Extern);
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
                Stmt s = async_store(op, whole ? op->index : slice(op->index, first, piece),
                                     whole ? op->value : slice(op->value, first, piece), op->alignment + first);
                if (!s.defined()) break;
                pieces.push_back(s);
            }
            if ((int)pieces.size() * piece == t.lanes()) {
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
    SplitCopy(bool async, bool staged, std::string registers)
        : async(async), staged(staged), registers(std::move(registers)) {
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
};

class Lowering : public CopyLowering {
    const CopyKind kind;

public:
    Lowering(CopyKind kind)
        : kind(kind) {
        user_assert(kind != CopyKind::Async || async_copy_rewrite_registered())
            << "alcop: asynchronous copies need the NVPTX rewrite of cp.async markers, which is not registered "
            << "in this process (link the alcop library whole).\n";
    }

    IssuedCopy issue(const Stmt &copy, const Expr &in_range, bool overlap) override {
        // Staging needs one register per element of a fixed set of stores of one type.
        std::vector<const Store *> stores = stores_in(copy);
        bool stageable = overlap && kind != CopyKind::Synchronous && !contains_loop(copy);
        for (const Store *s : stores) {
            stageable = stageable && s->value.type().element_of() == stores[0]->value.type().element_of();
        }
        const std::string registers = unique_name(staging_prefix);
        SplitCopy split(kind == CopyKind::Async, stageable, registers);
        IssuedCopy result;
        result.before_compute = IfThenElse::make(in_range, split.split(copy, true));
        if (stageable && split.staged_copies > 0) {
            result.after_compute = IfThenElse::make(in_range, split.split(copy, false));
            result.registers.push_back({registers, stores[0]->value.type().element_of(), split.register_count()});
        }
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
};

/** CopyKind::EmulatedAsync: cp.async's groups in plain code, every copy written by the wait
 * that retires its group (see CopyLowering.h).
 *
 * The state is per thread, like cp.async's: two counters, groups committed and groups written
 * (delivered), and for each store of each issued copy (a "held" store) arrays of `ring` entries
 * for its value, index and predicate, plus a flag per entry that says it holds a copy not yet
 * written. Group g uses entry g % ring of every held store. wait(n) writes the oldest group
 * while more than n are in flight; a group's stores are those held stores whose flag is set in
 * its entry (a copy guarded off, or a store under a false condition, leaves its flag clear).
 *
 * The rewrite emits commits and waits before it issues the copies of later steps (the
 * prologue's wait precedes the loop's copies), so commit() and wait() leave markers and
 * finish() replaces them once every held store of the loop is known. finish() also sizes the
 * ring: one entry per commit point of the code (the prologue's steps and the loop's). A
 * correct pipeline then never finds the ring full, since it has at most that many groups in
 * flight when it issues a copy (the prologue's ones and the one being built). */
constexpr const char *emulated_commit_name = "alcop_emulated_commit";
constexpr const char *emulated_wait_name = "alcop_emulated_wait";

class EmulatedAsync : public CopyLowering {
    struct Held {
        std::string buffer;  // the shared allocation the store writes
        Parameter param;
        ModulusRemainder alignment;
        Type type;           // of the stored value
        Expr stride;         // of a ramp index with a constant stride, of which only the base is
                             // held; undefined when the whole index is held
        bool predicated;     // the predicate is held too
        std::string values, indices, predicates, flags;
    };
    std::vector<Held> held;

    // Of the loop being emitted: the counters ([0] committed, [1] written) and a placeholder
    // for the ring size.
    std::string groups;
    Expr ring;

    void start_loop() {
        held.clear();
        groups = unique_name("alcop_emulated_groups");
        ring = Variable::make(Int(32), unique_name("alcop_emulated_ring"));
    }

    static Expr load(Type t, const std::string &name, const Expr &index) {
        return Load::make(t, name, index, Buffer<>(), Parameter(), const_true(t.lanes()), ModulusRemainder());
    }

    static Stmt store(const std::string &name, const Expr &value, const Expr &index) {
        return Store::make(name, value, index, Parameter(), const_true(value.type().lanes()), ModulusRemainder());
    }

    /** Where `lanes` elements of `entry` lie in an array of `lanes` elements per entry. */
    static Expr elements(const Expr &entry, int lanes) {
        return lanes == 1 ? entry : Ramp::make(entry * lanes, 1, lanes);
    }

    Expr counter(int i) const {
        return load(Int(32), groups, i);
    }

    Stmt count(int i) const {
        return store(groups, counter(i) + 1, i);
    }

    /** What a store of an issued copy becomes: its value, index and predicate kept in the
     * entry of the group being built. */
    Stmt hold(const Store *op) {
        Held h;
        h.buffer = op->name;
        h.param = op->param;
        h.alignment = op->alignment;
        h.type = op->value.type();
        const int lanes = h.type.lanes();
        const Ramp *r = op->index.as<Ramp>();
        if (r && is_const(r->stride)) h.stride = r->stride;
        h.predicated = !is_const_one(op->predicate);
        h.values = unique_name(staging_prefix);
        h.indices = unique_name("alcop_emulated_index");
        h.predicates = unique_name("alcop_emulated_predicate");
        h.flags = unique_name("alcop_emulated_flag");

        const Expr entry = counter(0) % ring;
        std::vector<Stmt> stmts{store(h.values, op->value, elements(entry, lanes))};
        if (h.stride.defined()) {
            stmts.push_back(store(h.indices, r->base, entry));
        } else {
            stmts.push_back(store(h.indices, op->index, elements(entry, op->index.type().lanes())));
        }
        if (h.predicated) {
            Expr as_bytes = select(op->predicate, make_one(UInt(8, lanes)), make_zero(UInt(8, lanes)));
            stmts.push_back(store(h.predicates, as_bytes, elements(entry, lanes)));
        }
        stmts.push_back(store(h.flags, make_one(UInt(8)), entry));
        held.push_back(h);
        return Block::make(stmts);
    }

    /** Writes every held store of the group in `entry` into shared memory and clears it. */
    Stmt deliver(const Expr &entry) const {
        std::vector<Stmt> stmts;
        for (const Held &h : held) {
            const int lanes = h.type.lanes();
            Expr index = h.stride.defined() ? Expr(load(Int(32), h.indices, entry)) :
                                              Expr(load(Int(32, lanes), h.indices, elements(entry, lanes)));
            if (h.stride.defined() && lanes > 1) index = Ramp::make(index, h.stride, lanes);
            Expr predicate = h.predicated ? load(UInt(8, lanes), h.predicates, elements(entry, lanes)) !=
                                                make_zero(UInt(8, lanes)) :
                                            const_true(lanes);
            Stmt write = Store::make(h.buffer, load(h.type, h.values, elements(entry, lanes)), index, h.param,
                                     predicate, h.alignment);
            Expr full = load(UInt(8), h.flags, entry) != make_zero(UInt(8));
            stmts.push_back(IfThenElse::make(full, Block::make(write, store(h.flags, make_zero(UInt(8)), entry))));
        }
        return stmts.empty() ? Evaluate::make(0) : Block::make(stmts);
    }

    /** wait(n) with a ring of `size` entries: at most size groups are in flight, so size - n
     * rounds of "if more than n are in flight, write the oldest" retire all it must. Written
     * out, not as a loop: pocl's "loops" work-group method puts implicit barriers into
     * barrier-free loops, and the emulation must not add synchronization. */
    Stmt wait_code(int n, int size) const {
        std::vector<Stmt> rounds;
        for (int i = n; i < size; i++) {
            const std::string entry = unique_name("alcop_emulated_entry");
            Stmt oldest = LetStmt::make(entry, counter(1) % size, deliver(Variable::make(Int(32), entry)));
            rounds.push_back(IfThenElse::make(counter(0) - counter(1) > n, Block::make(oldest, count(1))));
        }
        return rounds.empty() ? Evaluate::make(0) : Block::make(rounds);
    }

    static const Call *marker(const Evaluate *e, const char *name) {
        const Call *c = e->value.as<Call>();
        return c && c->name == name ? c : nullptr;
    }

public:
    EmulatedAsync() {
        start_loop();
    }

    IssuedCopy issue(const Stmt &copy, const Expr &in_range, bool) override {
        class HoldStores : public IRMutator {
            using IRMutator::visit;
            EmulatedAsync &owner;

            Stmt visit(const Store *op) override {
                return owner.hold(op);
            }

            Stmt visit(const For *op) override {
                user_error << "alcop: CopyKind::EmulatedAsync cannot hold a copy with a loop inside (loop "
                           << op->name << "); use another copy kind for this pipeline.\n";
                return Stmt();
            }

        public:
            HoldStores(EmulatedAsync &owner)
                : owner(owner) {
            }
        } holder(*this);
        IssuedCopy result;
        // Make room in the ring first (a no-op unless waits are missing).
        Stmt make_room = Evaluate::make(Call::make(Int(32), emulated_wait_name, {ring - 1}, Call::Extern));
        result.before_compute = Block::make(make_room, IfThenElse::make(in_range, holder.mutate(copy)));
        return result;
    }

    Stmt commit() const override {
        return Evaluate::make(Call::make(Int(32), emulated_commit_name, {}, Call::Extern));
    }

    Stmt wait(int in_flight) const override {
        return Evaluate::make(Call::make(Int(32), emulated_wait_name, {in_flight}, Call::Extern));
    }

    Stmt finish(const Stmt &pipelined) override {
        class CountCommits : public IRVisitor {
            using IRVisitor::visit;
            void visit(const Call *op) override {
                commits += op->name == emulated_commit_name;
            }

        public:
            int commits = 0;
        } counter;
        pipelined.accept(&counter);
        const int size = std::max(1, counter.commits);

        class ReplaceMarkers : public IRMutator {
            using IRMutator::visit;
            const EmulatedAsync &owner;
            const int size;

            Stmt visit(const Evaluate *op) override {
                if (marker(op, emulated_commit_name)) return owner.count(0);
                if (const Call *c = marker(op, emulated_wait_name)) {
                    const Expr count = simplify(c->args[0]);  // as_const_int points into it
                    const int64_t *n = as_const_int(count);
                    internal_assert(n) << "alcop: emulated wait of a count that is not constant: " << c->args[0] << "\n";
                    return owner.wait_code((int)*n, size);
                }
                return op;
            }

        public:
            ReplaceMarkers(const EmulatedAsync &owner, int size)
                : owner(owner), size(size) {
            }
        } replace(*this, size);
        Stmt body = replace.mutate(substitute(ring.as<Variable>()->name, size, pipelined));

        // Nothing in flight at the start: counters and flags cleared.
        std::vector<Stmt> init{store(groups, 0, 0), store(groups, 0, 1)};
        for (const Held &h : held) {
            for (int e = 0; e < size; e++) {
                init.push_back(store(h.flags, make_zero(UInt(8)), e));
            }
        }
        body = Block::make(Block::make(init), body);
        auto allocate = [&](const std::string &name, Type t, int elements) {
            body = with_registers(name, t, elements, body);
        };
        for (const Held &h : held) {
            const int lanes = h.type.lanes();
            allocate(h.values, h.type.element_of(), size * lanes);
            allocate(h.indices, Int(32), size * (h.stride.defined() ? 1 : lanes));
            if (h.predicated) allocate(h.predicates, UInt(8), size * lanes);
            allocate(h.flags, UInt(8), size);
        }
        allocate(groups, Int(32), 2);
        start_loop();
        return body;
    }
};

}  // namespace

Stmt with_registers(const std::string &name, Type t, int elements, const Stmt &body) {
    return Allocate::make(name, t, MemoryType::Register, {elements}, const_true(), Block::make(body, Free::make(name)));
}

std::unique_ptr<CopyLowering> make_copy_lowering(CopyKind kind) {
    if (kind == CopyKind::EmulatedAsync) return std::make_unique<EmulatedAsync>();
    return std::make_unique<Lowering>(kind);
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
