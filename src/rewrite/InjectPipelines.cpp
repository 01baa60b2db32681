#include "rewrite/InjectPipelines.h"

#include "Error.h"
#include "analysis/FragmentAnalysis.h"
#include "analysis/PipelineAnalysis.h"
#include "copy/CopyLowering.h"
#include "copy/GlobalAlignment.h"
#include "plan/PipelinePlan.h"
#include "plan/ResourceLimits.h"
#include "rewrite/ExpandSlots.h"
#include "rewrite/PipelineFragments.h"

#include <numeric>
#include <set>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Prologues that prefetch further ahead are emitted as loops (InjectPipelines::prologue_loop);
 * the stage counts schedules use (up to 16, the generators' limit) stay unrolled. */
constexpr int max_unrolled_prologue = 15;

Stmt make_barrier() {
    return Evaluate::make(Call::make(Int(32), Call::gpu_thread_barrier,
                                     {IntImm::make(Int(32), CodeGen_GPU_Dev::MemoryFenceType::Shared)},
                                     Call::Intrinsic));
}

/** Removes the barriers inside a pipelined producer. It writes only its own shared tile and
 * reads only global memory (the analysis checks both), so a barrier between its pieces orders
 * nothing; Halide puts one between the unrolled rows of a copy wherever they are not siblings
 * of the loop body, e.g. in the branches of a specialization, and the pipeline's own barrier
 * publishes the whole tile. */
class DropProducerBarriers : public IRMutator {
    using IRMutator::visit;

    Stmt visit(const Evaluate *op) override {
        return is_barrier(op) ? Evaluate::make(0) : op;
    }
};

Stmt sequence(const std::vector<Stmt> &stmts) {
    Stmt result;
    for (auto it = stmts.rbegin(); it != stmts.rend(); ++it) {
        if (!it->defined()) continue;
        result = result.defined() ? Block::make(*it, result) : *it;
    }
    return result;
}

/** How to address the slots of a pipelined buffer inside its streaming loop. */
struct SlotAddress {
    Expr anchor_units;    ///< where slots are counted from, in units of slot_alignment bytes
    int64_t shift_bytes;  ///< from the tile's old place to slot 0, past the anchor
    Expr iteration;       ///< k - min, the iteration of the streaming loop
    int stages;
    int64_t slot_bytes;  ///< between consecutive slots
};

class InjectPipelines : public IRMutator {
    using IRMutator::visit;

    const PipelineAnalysis &analysis;
    const Options &options;
    const testing::Hooks &hooks;
    /** The tensor-core operands, each with what its loop streams to mma.sync. */
    const std::map<std::string, model::TensorCoreStream> &tensor_core_operands;

    // Per pipelined loop: its analysis and plan; per allocation: its kernel plan and how the
    // kernel copies.
    std::map<const For *, std::pair<const PipelineLoop *, const LoopPlan *>> loops;
    std::map<const Allocate *, std::pair<const KernelPlan *, CopyKind>> allocations;
    std::unique_ptr<CopyLowering> copies;
    std::set<std::string> unaligned_inputs;  ///< said once per pass (make_copy_lowering)
    const KnownAlignments alignments;        ///< of the Stmt's variables, for the copy lowering

    // The anchor of the slots of the allocation being rewritten, in slot_alignment units.
    Expr anchor_units;
    // The address of each pipelined buffer of the loops being rewritten.
    std::map<std::string, SlotAddress> addresses;

    // Register level: the fragment loops (and one-step bodies, and which of those composed),
    // and the stages of each fragment's registers.
    std::map<const For *, const FragmentLoop *> fragment_loops;
    std::map<const IRNode *, const FragmentLoop *> one_step_bodies;  // FragmentLoop::one_step
    std::set<const FragmentLoop *> composed_one_steps;
    std::map<const Allocate *, int> fragment_storage;

    /** `index` moved into the slot of iteration k (a store; its producer is later moved to
     * iteration k + d) or read in iteration k (a load). */
    Expr slot_index(const Expr &index, const std::string &func, Type t, bool is_load, ModulusRemainder &alignment) {
        const SlotAddress &a = addresses.at(func);
        const int bytes = t.element_of().bytes();
        Expr slot = is_load ? consumer_slot(hooks, a.iteration, a.stages) : a.iteration % a.stages;
        // Every term is a whole multiple of slot_alignment bytes (see PipelinePlan.h), so the
        // shift is a whole number of elements and keeps what Halide proved about alignment,
        // up to slot_alignment.
        Expr shift = simplify(a.anchor_units * (int)(slot_alignment / bytes) + (int)(a.shift_bytes / bytes) +
                              slot * (int)(a.slot_bytes / bytes));
        const int64_t unit = slot_alignment / bytes;
        const int64_t m = std::gcd(alignment.modulus, unit);
        alignment = ModulusRemainder(m, m ? alignment.remainder % m : 0);
        // Keep dense accesses dense: a ramp stays a ramp, so that codegen (and the cp.async
        // copy lowering) still sees one vector access.
        if (const Ramp *r = index.as<Ramp>()) {
            return Ramp::make(r->base + shift, r->stride, r->lanes);
        }
        return index + (t.is_vector() ? Broadcast::make(shift, t.lanes()) : shift);
    }

    Expr visit(const Load *op) override {
        auto it = analysis.owner.find(op);
        if (it == analysis.owner.end() || !addresses.count(it->second)) {
            return IRMutator::visit(op);
        }
        ModulusRemainder alignment = op->alignment;
        Expr index = slot_index(mutate(op->index), it->second, op->type, true, alignment);
        return Load::make(op->type, op->name, index, op->image, op->param, mutate(op->predicate), alignment);
    }

    Stmt visit(const Store *op) override {
        auto it = analysis.owner.find(op);
        if (it == analysis.owner.end() || !addresses.count(it->second)) {
            return IRMutator::visit(op);
        }
        ModulusRemainder alignment = op->alignment;
        Expr index = slot_index(mutate(op->index), it->second, op->value.type(), false, alignment);
        return Store::make(op->name, mutate(op->value), index, op->param, mutate(op->predicate), alignment);
    }

    Stmt visit(const Allocate *op) override {
        if (auto f = fragment_storage.find(op); f != fragment_storage.end()) {
            // One slot per stage, in the order of the slots.
            return Allocate::make(op->name, op->type, op->memory_type, {simplify(op->extents[0] * f->second)},
                                  op->condition, mutate(op->body), op->new_expr, op->free_function);
        }
        auto it = allocations.find(op);
        if (it == allocations.end()) {
            return IRMutator::visit(op);
        }
        const KernelPlan &plan = *it->second.first;
        copies = make_copy_lowering(it->second.second, &unaligned_inputs, alignments);
        if (hooks.copies) copies = hooks.copies(std::move(copies));
        internal_assert(op->extents.size() == 1) << "Merged shared allocation " << op->name << " is not flat\n";
        const int bytes = op->type.bytes();
        Expr old_bytes = op->extents[0] * bytes;
        Expr new_bytes;
        if (plan.anchor == Anchor::AllocationStart) {
            anchor_units = 0;
            new_bytes = max(old_bytes, (int)plan.slot_bytes);
        } else {
            anchor_units = simplify((old_bytes + (int)(slot_alignment - 1)) / (int)slot_alignment);
            new_bytes = anchor_units * (int)slot_alignment + (int)plan.slot_bytes;
        }
        Stmt body = mutate(op->body);
        return Allocate::make(op->name, op->type, op->memory_type, {simplify((new_bytes + bytes - 1) / bytes)},
                              op->condition, body, op->new_expr, op->free_function);
    }

    Stmt visit(const For *op) override {
        if (auto f = fragment_loops.find(op); f != fragment_loops.end()) {
            return fragment_loop(*f->second, nullptr).steps;
        }
        auto it = loops.find(op);
        if (it == loops.end()) {
            return IRMutator::visit(op);
        }
        return pipeline_loop(op, *it->second.first, *it->second.second);
    }

    /** What the phases of one loop's rewrite share. */
    struct LoopRewrite {
        const For *op;
        const PipelineLoop &loop;
        const LoopPlan &plan;
        Expr k, end;
        int in_flight;                                 ///< what the waits leave outstanding
        std::map<std::string, Stmt> producer;          ///< each buffer's copy into its slot, in terms of k
        std::vector<IssuedCopy::Registers> registers;  ///< what the copies stage through
        bool prefetch_in_place = false;                ///< some prefetch stores in place (IssuedCopy::in_place)
    };

    /** The rewrite of one streaming loop, phase by phase. */
    Stmt pipeline_loop(const For *op, const PipelineLoop &loop, const LoopPlan &plan) {
        LoopRewrite r{op, loop, plan, Variable::make(Int(32), op->name), op->min + op->extent, 0, {}, {}};
        address_slots(r);
        std::vector<Stmt> prologue = emit_prologue(r);
        Stmt register_prologue;  // defined when the last consumer's fragments compose
        Stmt kernel = emit_steady_state(r, register_prologue);
        if (register_prologue.defined()) prologue.push_back(register_prologue);
        return emit_epilogue(r, sequence(prologue), kernel);
    }

    /** Slot addressing: every access to a pipelined buffer in the loop addresses the slot of
     * its iteration k (slot_index), and each producer becomes the copy of tile k into its slot,
     * which the other phases move to the tile they fetch by substituting for k. */
    void address_slots(LoopRewrite &r) {
        int min_distance = r.plan.max_prefetch_distance;
        for (const BufferPlan &b : r.plan.buffers) {
            addresses[b.func] = {anchor_units, b.base - b.old_begin, simplify(r.k - r.op->min), b.stages, b.slot_bytes};
            min_distance = std::min(min_distance, b.prefetch_distance);
        }
        // Each step commits one group, so the group holding the next tile of the buffer that
        // fetches least far ahead is older than the newest min_distance - 1 groups.
        r.in_flight = min_distance - 1;
        const LoopBody &body = r.loop.body;
        for (size_t i = 0; i < body.stmts.size(); i++) {
            if (body.roles[i] == StmtRole::Producer) {
                r.producer[body.produced[i]] = DropProducerBarriers().mutate(mutate(body.stmts[i]));
            }
        }
    }

    /** Issues the copies of one step (a prologue step p, or the prefetch of iteration k) of
     * every buffer that fetches that far ahead, then closes the step's group: what goes before
     * the compute into `before`, what goes after it into `after`. */
    void copy_step(LoopRewrite &r, bool in_prologue, int p, std::vector<Stmt> &before, std::vector<Stmt> &after) {
        for (const BufferPlan &b : r.plan.buffers) {
            if (in_prologue && p >= b.prefetch_distance) continue;
            const Expr tile = simplify(in_prologue ? r.op->min + p : r.k + b.prefetch_distance);
            IssuedCopy c = copies->issue(substitute(r.op->name, tile, r.producer.at(b.func)), simplify(tile < r.end),
                                         !in_prologue);
            before.push_back(c.before_compute);
            after.push_back(c.after_compute);
            r.registers.insert(r.registers.end(), c.registers.begin(), c.registers.end());
            r.prefetch_in_place = r.prefetch_in_place || (c.in_place && !in_prologue);
        }
        before.push_back(copies->commit());
    }

    /** The wait and barrier that make the next tile visible; they close the prologue and
     * every iteration, so that each iteration starts with its tile in place. */
    void publish_next_tile(const LoopRewrite &r, std::vector<Stmt> &stmts, bool in_loop) const {
        Stmt wait = copies->wait(r.in_flight), barrier = make_barrier();
        if (in_loop && hooks.steady_state_publication) {
            stmts.push_back(hooks.steady_state_publication(wait, barrier));
        } else {
            stmts.push_back(wait);
            stmts.push_back(barrier);
        }
    }

    /** Prologue: a barrier (the slots may have held other data), the copies of the first
     * D = max d_P tiles, one group per step, and the publication of the first tile. */
    std::vector<Stmt> emit_prologue(LoopRewrite &r) {
        std::vector<Stmt> prologue{make_barrier()};
        // A test's copy lowering (testing::Hooks::copies, e.g. the async emulation) may keep
        // state per step, which a loop would share between the steps.
        if (r.plan.max_prefetch_distance <= max_unrolled_prologue || hooks.copies) {
            for (int p = 0; p < r.plan.max_prefetch_distance; p++) {
                std::vector<Stmt> after;
                copy_step(r, true, p, prologue, after);
                prologue.insert(prologue.end(), after.begin(), after.end());
            }
        } else {
            prologue.push_back(prologue_loop(r.op, r.plan, r.producer));
        }
        publish_next_tile(r, prologue, false);
        return prologue;
    }

    /** Steady state: per iteration, the prefetch of tile k + d_P, the consumers reading slot
     * (k - min) % S_P, and the publication of tile k + 1. Halide's barriers after the producers
     * and at the end of the body are dropped; those between two consumer stages stay. A
     * register-level pipeline in the last consumer may take over the publication (compose), in
     * which case `register_prologue` receives its prologue. */
    Stmt emit_steady_state(LoopRewrite &r, Stmt &register_prologue) {
        std::vector<Stmt> steady, publish;
        copy_step(r, false, 0, steady, publish);
        publish_next_tile(r, publish, true);

        const LoopBody &body = r.loop.body;
        size_t last_compute = body.stmts.size();
        for (size_t i = 0; i < body.stmts.size(); i++) {
            if (body.roles[i] == StmtRole::Compute) last_compute = i;
        }
        SharedLoopContext composition{r.op->name, r.op->min, r.end, sequence(publish), {}, {}};
        std::vector<Stmt> others = body.stmts;  // what the loop body writes besides its last consumer
        if (last_compute < others.size()) others.erase(others.begin() + last_compute);
        const std::set<std::string> written = stored_buffers(sequence(others));
        bool keep_barrier = false;  // a consumer stage ran since the last kept barrier
        for (size_t i = 0; i < body.stmts.size(); i++) {
            switch (body.roles[i]) {
            case StmtRole::Producer:
                keep_barrier = false;  // the barrier after a producer published its tile
                break;
            case StmtRole::Barrier: {
                const bool consumer_follows = i < last_compute && last_compute < body.stmts.size();
                if (keep_barrier && consumer_follows) {
                    steady.push_back(body.stmts[i]);
                }
                keep_barrier = false;
                break;
            }
            case StmtRole::Compute:
                steady.push_back(i == last_compute ?
                                     mutate_last_consumer(body.stmts[i], written, composition, register_prologue) :
                                     mutate(body.stmts[i]));
                keep_barrier = true;
                break;
            }
        }
        if (!register_prologue.defined()) {
            steady.insert(steady.end(), publish.begin(), publish.end());
        }
        std::vector<int> stages;
        model::TensorCoreStream stream;  // of the mma.sync reading the streamed operands (none: 0)
        for (const BufferPlan &b : r.plan.buffers) {
            addresses.erase(b.func);
            stages.push_back(b.stages);
            const auto operand = tensor_core_operands.find(b.func);
            if (operand != tensor_core_operands.end()) stream.merge(operand->second);
        }
        // Expanded by its slots at the end of the rewrite (ExpandSlots.h), where that pays.
        return mark_for_expansion(
            For::make(r.op->name, r.op->min, r.op->extent, r.op->for_type, r.op->device_api, sequence(steady)),
            expanded_copies(stages, stream, r.prefetch_in_place, r.op->extent));
    }

    /** Epilogue: nothing may stay in flight past the loop, and every thread must be done with
     * the slots before the allocation's other uses; then what the copy lowering keeps around
     * the whole pipeline (finish) and the registers the copies stage through. */
    Stmt emit_epilogue(const LoopRewrite &r, const Stmt &prologue, const Stmt &kernel) {
        Stmt result = copies->finish(sequence({prologue, kernel, copies->wait(0), make_barrier()}));
        for (const IssuedCopy::Registers &reg : r.registers) {
            result = with_registers(reg.name, reg.type, reg.elements, result);
        }
        return result;
    }

    /** The prologue of a loop that prefetches many tiles ahead, as a loop: step p copies tile
     * min + p of each buffer with p < d_P and commits. Unrolled, thousands of steps would nest
     * as deep in Blocks, deeper than the recursion of the passes after this one can go. */
    Stmt prologue_loop(const For *op, const LoopPlan &plan, const std::map<std::string, Stmt> &producer) {
        const std::string name = op->name + ".prologue";
        const Expr p = Variable::make(Int(32), name);
        std::vector<Stmt> step;
        for (const BufferPlan &b : plan.buffers) {
            const Expr tile = op->min + p;
            IssuedCopy c = copies->issue(substitute(op->name, tile, producer.at(b.func)),
                                         simplify(tile < op->min + op->extent), false);
            Stmt copy = sequence({c.before_compute, c.after_compute});
            if (b.prefetch_distance < plan.max_prefetch_distance) {
                copy = IfThenElse::make(p < b.prefetch_distance, copy);
            }
            step.push_back(copy);
        }
        step.push_back(copies->commit());
        return For::make(name, 0, plan.max_prefetch_distance, ForType::Serial, DeviceAPI::None, sequence(step));
    }

    /** The last consumer statement of a pipelined loop. When it is a fragment loop under
     * lets and consume markers only, whose compute reads registers only, and some of whose
     * fragments may load the next tile early (crossing_fragments), the fragment pipeline
     * composes with the shared one: after it, nothing reads what the rest of the loop body
     * writes, so the shared wait and barrier may move into it. `written`: what the loop body
     * writes besides this statement. */
    Stmt mutate_last_consumer(const Stmt &s, const std::set<std::string> &written, SharedLoopContext &composition,
                              Stmt &register_prologue) {
        if (auto it = one_step_bodies.find(s.get()); it != one_step_bodies.end() && composes(*it->second, written)) {
            composed_one_steps.insert(it->second);
            return compose(*it->second, written, composition, register_prologue);
        }
        if (const LetStmt *l = s.as<LetStmt>()) {
            Expr value = mutate(l->value);
            composition.lets.emplace_back(l->name, value);
            Stmt body = mutate_last_consumer(l->body, written, composition, register_prologue);
            composition.lets.pop_back();
            return LetStmt::make(l->name, value, body);
        }
        if (const ProducerConsumer *pc = s.as<ProducerConsumer>(); pc && !pc->is_producer) {
            return ProducerConsumer::make_consume(
                pc->name, mutate_last_consumer(pc->body, written, composition, register_prologue));
        }
        const For *f = s.as<For>();
        auto it = f ? fragment_loops.find(f) : fragment_loops.end();
        if (it == fragment_loops.end() || !composes(*it->second, written)) {
            return mutate(s);
        }
        return compose(*it->second, written, composition, register_prologue);
    }

    /** Whether `s` loads a buffer in `written`; with `tiles_ok`, other than from the slots
     * of a pipelined tile of the loop being rewritten. */
    bool reads_written(const Stmt &s, const std::set<std::string> &written, bool tiles_ok) const {
        class Reads : public IRVisitor {
            using IRVisitor::visit;
            void visit(const Load *op) override {
                auto it = self.analysis.owner.find(op);
                const bool tile = it != self.analysis.owner.end() && self.addresses.count(it->second);
                found = found || (written.count(op->name) && !(tiles_ok && tile));
                IRVisitor::visit(op);
            }

        public:
            const InjectPipelines &self;
            const std::set<std::string> &written;
            const bool tiles_ok;
            bool found = false;
            Reads(const InjectPipelines &self, const std::set<std::string> &written, bool tiles_ok)
                : self(self), written(written), tiles_ok(tiles_ok) {
            }
        } reads(*this, written, tiles_ok);
        s.accept(&reads);
        return reads.found;
    }

    /** The fragments of `loop` whose loads may run ahead into the next iteration of the
     * streaming loop: those that read, of what the loop body writes, only its pipelined
     * tiles, which the moved publication makes visible. A fragment of an operand the loop
     * copies unpipelined (its one buffer holds the next tile only after the next
     * iteration's copy) starts over in each iteration. */
    std::set<std::string> crossing_fragments(const FragmentLoop &loop, const std::set<std::string> &written) const {
        std::set<std::string> crossing;
        for (size_t i = 0; i < loop.body.stmts.size(); i++) {
            if (loop.body.roles[i] == StmtRole::Producer && !reads_written(loop.body.stmts[i], written, true)) {
                crossing.insert(loop.body.produced[i]);
            }
        }
        return crossing;
    }

    /** Whether `loop` composes: its compute reads nothing the loop body writes (the moved
     * barrier comes before the last steps' reads, so a copy of the next iteration could
     * overwrite it), and some fragment crosses. */
    bool composes(const FragmentLoop &loop, const std::set<std::string> &written) const {
        for (size_t i = 0; i < loop.body.stmts.size(); i++) {
            if (loop.body.roles[i] == StmtRole::Compute && reads_written(loop.body.stmts[i], written, false)) {
                return false;
            }
        }
        return !crossing_fragments(loop, written).empty();
    }

    FragmentPipeline fragment_loop(const FragmentLoop &loop, const SharedLoopContext *composition) {
        std::vector<Stmt> pieces;
        for (const Stmt &s : loop.body.stmts) {
            pieces.push_back(mutate(s));
        }
        return pipeline_fragments(loop, pieces, composition, hooks);
    }

    /** The fragment pipeline of `loop` composed with the shared one: its steps, and its
     * register prologue for after the shared prologue. */
    Stmt compose(const FragmentLoop &loop, const std::set<std::string> &written, SharedLoopContext composition,
                 Stmt &register_prologue) {
        composition.crossing = crossing_fragments(loop, written);
        FragmentPipeline p = fragment_loop(loop, &composition);
        register_prologue = p.prologue;
        return p.steps;
    }

public:
    /** One-step fragment bodies that could not compose stay as they are, which is correct but
     * not pipelined at the register level: say so. */
    void warn_uncomposed() const {
        for (const auto &o : one_step_bodies) {
            if (composed_one_steps.count(o.second)) continue;
            user_warning << pipeline_call(o.second->fragments.front().func, Level::Register) << ": "
                         << "it is produced once per iteration of the loop " << o.second->loop->name
                         << " of the shared level, outside that loop's last consumer or with a consumer that "
                         << "reads shared memory or loads only buffers that loop copies unpipelined, so its "
                         << "register stages cannot compose with the shared ones; "
                         << "it is left unpipelined there.\n";
        }
    }

    InjectPipelines(const PipelineAnalysis &analysis, const std::vector<KernelPlan> &plans,
                    const std::vector<FragmentLoop> &fragments, const Options &options, const testing::Hooks &hooks,
                    const std::map<std::string, model::TensorCoreStream> &tensor_core_operands,
                    KnownAlignments alignments)
        : analysis(analysis), options(options), hooks(hooks), tensor_core_operands(tensor_core_operands),
          alignments(std::move(alignments)) {
        for (const FragmentLoop &l : fragments) {
            if (l.one_step.defined()) {
                one_step_bodies[l.one_step.get()] = &l;
            } else {
                fragment_loops[l.loop] = &l;
            }
            for (const Fragment &f : l.fragments) {
                fragment_storage[f.storage] = l.stages;
            }
        }
        for (size_t i = 0; i < analysis.kernels.size(); i++) {
            const KernelPipelines &k = analysis.kernels[i];
            allocations[k.allocation] = {&plans[i], copy_kind_for(k.device, options.target, options.copies)};
            for (size_t j = 0; j < k.loops.size(); j++) {
                loops[k.loops[j].loop] = {&k.loops[j], &plans[i].loops[j]};
            }
        }
    }
};

}  // namespace

Stmt inject_pipelines(const Stmt &input, const std::map<std::string, PipelineRequest> &requests, const Options &options,
                      const testing::Hooks &hooks,
                      const std::map<std::string, model::TensorCoreStream> &tensor_core_operands,
                      std::vector<SwizzleAlignedSlots> *aligned_slots) {
    // First, since the analysis keys on the Stmt's nodes: the alignment of the inputs' loads that
    // Halide's simplifier lost, and of the variables, which the copies' cp.async proofs read.
    KnownAlignments alignments;
    const Stmt s = recover_global_alignment(input, &alignments);
    std::set<std::string> swizzled;
    for (const auto &operand : tensor_core_operands) swizzled.insert(operand.first);
    PipelineAnalysis analysis = analyze_pipelines(s, requests);
    const std::vector<FragmentLoop> fragments = analyze_fragments(s, requests);
    if (analysis.kernels.empty() && fragments.empty()) {
        return s;
    }
    std::vector<KernelPlan> plans;
    for (const KernelPipelines &k : analysis.kernels) {
        plans.push_back(plan_kernel(k, swizzled));
        if (hooks.plan) hooks.plan(plans.back());
        if (aligned_slots) {
            const std::vector<SwizzleAlignedSlots> a = swizzle_aligned_slots(plans.back());
            aligned_slots->insert(aligned_slots->end(), a.begin(), a.end());
        }
    }
    check_resource_limits(analysis, plans, fragments, options);
    InjectPipelines inject(analysis, plans, fragments, options, hooks, tensor_core_operands, std::move(alignments));
    Stmt result = inject.mutate(s);
    inject.warn_uncomposed();
    return result;
}

}  // namespace alcop
