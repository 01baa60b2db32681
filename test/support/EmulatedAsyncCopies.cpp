#include "EmulatedAsyncCopies.h"

#include "Error.h"
#include "copy/CopyLowering.h"

#include <algorithm>
#include <cmath>

namespace alcop {
namespace testing {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The emulation: cp.async's groups in plain code, every copy written by the wait
 * that retires its group (see EmulatedAsyncCopies.h).
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
        Type type;        // of the stored value
        Expr stride;      // of a ramp index with a constant stride, of which only the base is
                          // held; undefined when the whole index is held
        bool predicated;  // the predicate is held too
        std::string values, indices, predicates, flags;
    };
    std::vector<Held> held;

    // Of the loop being emitted: the counters ([0] committed, [1] written) and a placeholder
    // for the ring size.
    std::string groups;
    Expr ring;

    // Every copy issued for the loop (the prologue's, and the loop's in terms of its variable),
    // writing a poison instead of its values: what finish() runs before the prologue.
    std::vector<Stmt> poisoned_copies;

    void start_loop() {
        held.clear();
        poisoned_copies.clear();
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
            Expr predicate =
                h.predicated ? load(UInt(8, lanes), h.predicates, elements(entry, lanes)) != make_zero(UInt(8, lanes)) :
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

    /** `copy` writing NaN (integers: their maximum) where it would write its values, under
     * `in_range`; no longer a production of its Func. */
    static Stmt poisoned(const Stmt &copy, const Expr &in_range) {
        class Poison : public IRMutator {
            using IRMutator::visit;

            Stmt visit(const Store *op) override {
                const Type t = op->value.type();
                Expr poison = t.is_float() ? make_const(t, std::nan("")) : t.max();
                return Store::make(op->name, poison, op->index, op->param, op->predicate, op->alignment);
            }

            Stmt visit(const ProducerConsumer *op) override {
                return mutate(op->body);
            }
        };
        return IfThenElse::make(in_range, Poison().mutate(copy));
    }

    /** The pipelined loop of `pipelined`, the last loop of its top-level sequence (under the
     * lets around it: the mark of a loop to expand, rewrite/ExpandSlots.h). */
    static const For *pipelined_loop(const Stmt &pipelined) {
        const For *loop = nullptr;
        for (Stmt s = pipelined; s.defined();) {
            const Block *b = s.as<Block>();
            Stmt first = b ? b->first : s;
            while (const LetStmt *l = first.as<LetStmt>()) {
                first = l->body;
            }
            if (const For *f = first.as<For>()) loop = f;
            s = b ? b->rest : Stmt();
        }
        internal_assert(loop) << "alcop: no loop in the emulated pipeline\n";
        return loop;
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
                user_error << "alcop: the async-copy emulation cannot hold a copy with a loop inside (loop " << op->name
                           << "); use another copy kind for this pipeline.\n";
                return Stmt();
            }

        public:
            HoldStores(EmulatedAsync &owner) : owner(owner) {
            }
        } holder(*this);
        IssuedCopy result;
        // Make room in the ring first (a no-op unless waits are missing).
        Stmt make_room = Evaluate::make(Call::make(Int(32), emulated_wait_name, {ring - 1}, Call::Extern));
        result.before_compute = Block::make(make_room, IfThenElse::make(in_range, holder.mutate(copy)));
        poisoned_copies.push_back(poisoned(copy, in_range));
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
                    internal_assert(n) << "alcop: emulated wait of a count that is not constant: " << c->args[0]
                                       << "\n";
                    return owner.wait_code((int)*n, size);
                }
                return op;
            }

        public:
            ReplaceMarkers(const EmulatedAsync &owner, int size) : owner(owner), size(size) {
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
        // Every slot poisoned before the prologue. A slot read before the wait that delivers
        // its tile (a missing or short wait) would otherwise read whatever shared memory held:
        // pocl reuses local memory across work-groups and launches, so that can be the very
        // tile an earlier run on the same inputs left there, and a broken pipeline would
        // compute the right numbers. Poisoned, such a read makes the output NaN whatever ran
        // before; a correct pipeline overwrites each slot before reading it. The copies of the
        // prologue and of the loop's first iteration fill every slot, each thread poisoning
        // what it copies. The barrier before orders the poison after earlier readers of the
        // allocation; the prologue starts with one that orders it before the copies.
        const For *loop = pipelined_loop(pipelined);
        Stmt poison = substitute(loop->name, loop->min, Block::make(poisoned_copies));
        Stmt barrier = Evaluate::make(Call::make(Int(32), Call::gpu_thread_barrier,
                                                 {IntImm::make(Int(32), CodeGen_GPU_Dev::MemoryFenceType::Shared)},
                                                 Call::Intrinsic));
        body = Block::make({Block::make(init), barrier, poison, body});
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

void emulate_async_copies(Hooks &hooks) {
    hooks.copies = [](std::unique_ptr<CopyLowering>) { return std::make_unique<EmulatedAsync>(); };
}

}  // namespace testing
}  // namespace alcop
