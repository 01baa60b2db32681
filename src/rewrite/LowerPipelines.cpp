#include "rewrite/LowerPipelines.h"

#include "analysis/FragmentAnalysis.h"
#include "analysis/PipelineAnalysis.h"
#include "analysis/TensorCoreAnalysis.h"
#include "codegen/LaunchBounds.h"
#include "copy/CopyLowering.h"
#include "directive/TestHooks.h"
#include "plan/PipelinePlan.h"
#include "rewrite/CompactRegisters.h"
#include "rewrite/MmaInnerProduct.h"
#include "rewrite/PipelineFragments.h"

#include "Error.h"
#include "model/CostModel.h"
#include "model/GpuSpec.h"

#include <numeric>
#include <set>
#include <sstream>

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
    Expr anchor_units;   ///< where slots are counted from, in units of slot_alignment bytes
    int64_t shift_bytes; ///< from the tile's old place to slot 0, past the anchor
    Expr iteration;      ///< k - min, the iteration of the streaming loop
    int stages;
    int64_t slot_bytes;  ///< between consecutive slots
};

class InjectPipelines : public IRMutator {
    using IRMutator::visit;

    const PipelineAnalysis &analysis;
    const Options &options;
    const testing::Hooks &hooks;

    // Per pipelined loop: its analysis and plan; per allocation: its kernel plan and how the
    // kernel copies.
    std::map<const For *, std::pair<const PipelineLoop *, const LoopPlan *>> loops;
    std::map<const Allocate *, std::pair<const KernelPlan *, CopyKind>> allocations;
    std::unique_ptr<CopyLowering> copies;

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
        const bool off_by_one = is_load && hooks.fault == testing::Fault::SlotOffByOne;
        Expr slot = (a.iteration + (off_by_one ? 1 : 0)) % a.stages;
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
        copies = hooks.copies ? hooks.copies() : make_copy_lowering(it->second.second);
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

    Stmt pipeline_loop(const For *op, const PipelineLoop &loop, const LoopPlan &plan) {
        const Expr k = Variable::make(Int(32), op->name);
        const Expr end = op->min + op->extent;

        // Slot-addressed producers and consumers, in terms of k. A producer is then moved to
        // its tile by substituting k + d (or min + p in the prologue) for k.
        int min_distance = plan.max_prefetch_distance;
        for (const BufferPlan &b : plan.buffers) {
            addresses[b.func] = {anchor_units, b.base - b.old_begin, simplify(k - op->min), b.stages, b.slot_bytes};
            min_distance = std::min(min_distance, b.prefetch_distance);
        }
        const LoopBody &body = loop.body;
        std::map<std::string, Stmt> producer;
        for (size_t i = 0; i < body.stmts.size(); i++) {
            if (body.roles[i] == StmtRole::Producer) {
                producer[body.produced[i]] = DropProducerBarriers().mutate(mutate(body.stmts[i]));
            }
        }

        // Issues the copies of one step (a prologue step p, or the prefetch of iteration k)
        // of every buffer that fetches that far ahead, then closes the step's group.
        std::vector<IssuedCopy::Registers> registers;
        // testing::Fault::MissingWarBarrier: iteration k issues the copies of iteration k + 1 after its
        // consumers, and the prologue those of the first iteration.
        const bool war_fault = hooks.fault == testing::Fault::MissingWarBarrier;
        auto copy_step = [&](bool in_prologue, int p, std::vector<Stmt> &before, std::vector<Stmt> &after) {
            const bool late = !in_prologue && war_fault;
            for (const BufferPlan &b : plan.buffers) {
                if (in_prologue && p >= b.prefetch_distance) continue;
                const Expr tile = simplify(in_prologue ? op->min + p : k + b.prefetch_distance + (late ? 1 : 0));
                IssuedCopy c = copies->issue(substitute(op->name, tile, producer.at(b.func)), simplify(tile < end),
                                             !in_prologue);
                (late ? after : before).push_back(c.before_compute);
                after.push_back(c.after_compute);
                registers.insert(registers.end(), c.registers.begin(), c.registers.end());
            }
            (late ? after : before).push_back(copies->commit());
        };

        // The wait and barrier that make the next tile visible close the prologue and every
        // iteration, so that each iteration starts with its tile in place.
        const bool short_wait = hooks.fault == testing::Fault::WaitOneGroupShort;
        const int in_flight = min_distance - 1 + (short_wait ? 1 : 0);
        auto publish_next_tile = [&](std::vector<Stmt> &stmts, bool in_loop) {
            if (!in_loop || hooks.fault != testing::Fault::DropWait) {
                stmts.push_back(copies->wait(in_flight));
            }
            if (!in_loop || hooks.fault != testing::Fault::DropBarrier) {
                stmts.push_back(make_barrier());
            }
        };

        std::vector<Stmt> prologue{make_barrier()};
        // A test's copy lowering (testing::Hooks::copies, e.g. the async emulation) may keep
        // state per step, which a loop would share between the steps.
        if (plan.max_prefetch_distance <= max_unrolled_prologue || hooks.copies) {
            for (int p = 0; p < plan.max_prefetch_distance; p++) {
                std::vector<Stmt> after;
                copy_step(true, p, prologue, after);
                prologue.insert(prologue.end(), after.begin(), after.end());
            }
        } else {
            prologue.push_back(prologue_loop(op, plan, producer));
        }
        publish_next_tile(prologue, false);
        if (war_fault) {
            std::vector<Stmt> first;
            copy_step(false, 0, first, first);
            prologue.push_back(substitute(op->name, simplify(op->min - 1), sequence(first)));
        }

        std::vector<Stmt> steady, publish;
        copy_step(false, 0, steady, publish);
        publish_next_tile(publish, true);

        // The consumers. A register-level pipeline in the last of them may take over the
        // publication of the next tile (see PipelineFragments.h).
        size_t last_compute = body.stmts.size();
        for (size_t i = 0; i < body.stmts.size(); i++) {
            if (body.roles[i] == StmtRole::Compute) last_compute = i;
        }
        SharedLoopContext composition{op->name, op->min, end, sequence(publish), {}};
        Stmt register_prologue;  // defined once a fragment pipeline composed
        bool keep_barrier = false;  // a consumer stage ran since the last kept barrier
        for (size_t i = 0; i < body.stmts.size(); i++) {
            switch (body.roles[i]) {
            case StmtRole::Producer:
                keep_barrier = false;  // the barrier after a producer published its tile
                break;
            case StmtRole::Barrier: {
                // Keep only barriers that separate two consumer stages.
                const bool consumer_follows = i < last_compute && last_compute < body.stmts.size();
                if (keep_barrier && consumer_follows) {
                    steady.push_back(body.stmts[i]);
                }
                keep_barrier = false;
                break;
            }
            case StmtRole::Compute:
                steady.push_back(i == last_compute ? mutate_last_consumer(body.stmts[i], composition, register_prologue)
                                                   : mutate(body.stmts[i]));
                keep_barrier = true;
                break;
            }
        }
        for (const BufferPlan &b : plan.buffers) {
            addresses.erase(b.func);
        }
        if (register_prologue.defined()) {
            prologue.push_back(register_prologue);
        } else {
            steady.insert(steady.end(), publish.begin(), publish.end());
        }

        Stmt pipelined = For::make(op->name, op->min, op->extent, op->for_type, op->device_api, sequence(steady));
        Stmt result = copies->finish(sequence({sequence(prologue), pipelined, copies->wait(0), make_barrier()}));
        for (const IssuedCopy::Registers &r : registers) {
            result = with_registers(r.name, r.type, r.elements, result);
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
     * lets and consume markers only, and that loop's compute reads registers only, the
     * fragment pipeline composes with the shared one: after it, nothing reads the slot of
     * the current tile, so the shared wait and barrier may move into it. */
    Stmt mutate_last_consumer(const Stmt &s, SharedLoopContext &composition, Stmt &register_prologue) {
        if (auto it = one_step_bodies.find(s.get());
            it != one_step_bodies.end() && !compute_reads_pipelined_tiles(*it->second)) {
            composed_one_steps.insert(it->second);
            return compose(*it->second, composition, register_prologue);
        }
        if (const LetStmt *l = s.as<LetStmt>()) {
            Expr value = mutate(l->value);
            composition.lets.emplace_back(l->name, value);
            Stmt body = mutate_last_consumer(l->body, composition, register_prologue);
            composition.lets.pop_back();
            return LetStmt::make(l->name, value, body);
        }
        if (const ProducerConsumer *pc = s.as<ProducerConsumer>(); pc && !pc->is_producer) {
            return ProducerConsumer::make_consume(pc->name, mutate_last_consumer(pc->body, composition, register_prologue));
        }
        const For *f = s.as<For>();
        auto it = f ? fragment_loops.find(f) : fragment_loops.end();
        if (it == fragment_loops.end() || compute_reads_pipelined_tiles(*it->second)) {
            return mutate(s);
        }
        return compose(*it->second, composition, register_prologue);
    }

    bool compute_reads_pipelined_tiles(const FragmentLoop &loop) const {
        class Reads : public IRVisitor {
            using IRVisitor::visit;
            void visit(const Load *op) override {
                auto it = self.analysis.owner.find(op);
                found = found || (it != self.analysis.owner.end() && self.addresses.count(it->second));
                IRVisitor::visit(op);
            }

        public:
            const InjectPipelines &self;
            bool found = false;
            explicit Reads(const InjectPipelines &self)
                : self(self) {
            }
        } reads(*this);
        for (size_t i = 0; i < loop.body.stmts.size(); i++) {
            if (loop.body.roles[i] == StmtRole::Compute) loop.body.stmts[i].accept(&reads);
        }
        return reads.found;
    }

    FragmentPipeline fragment_loop(const FragmentLoop &loop, const SharedLoopContext *composition) {
        std::vector<Stmt> pieces;
        for (const Stmt &s : loop.body.stmts) {
            pieces.push_back(mutate(s));
        }
        return pipeline_fragments(loop, pieces, composition, hooks.fault);
    }

    /** The fragment pipeline of `loop` composed with the shared one: its steps, and its
     * register prologue for after the shared prologue. */
    Stmt compose(const FragmentLoop &loop, const SharedLoopContext &composition, Stmt &register_prologue) {
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
                         << "reads shared memory, so its register stages cannot compose with the shared ones; "
                         << "it is left unpipelined there.\n";
        }
    }

    InjectPipelines(const PipelineAnalysis &analysis, const std::vector<KernelPlan> &plans,
                    const std::vector<FragmentLoop> &fragments, const Options &options, const testing::Hooks &hooks)
        : analysis(analysis), options(options), hooks(hooks) {
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

/** The shared memory a block may use (Options::shared_memory_limit, in Directive.h), and why. */
int64_t shared_memory_limit(const Options &options, DeviceAPI device, std::string *why) {
    if (options.shared_memory_limit > 0) {
        *why = "set by alcop::Options::shared_memory_limit";
        return options.shared_memory_limit;
    }
    if (device == DeviceAPI::CUDA) {
        *why = "the default for CUDA: Halide 14's runtime launches kernels without the shared-memory opt-in";
    } else if (device == DeviceAPI::OpenCL) {
        *why = "the default for OpenCL, whose device's local memory size is not known at compile time";
    } else {
        *why = "the default for GPU kernels";
    }
    return model::smem_limit_bytes(model::default_gpu(), model::RuntimeLimits::HalideDefault);
}

/** More than any GPU gives a thread (255 on NVIDIA's, 512 with the accumulation registers of
 * AMD's CDNA). */
constexpr int max_registers_per_thread = 512;

/** How far a kernel on `device` may raise its shared-memory limit. */
std::string raise_shared_hint(DeviceAPI device) {
    std::ostringstream hint;
    if (device == DeviceAPI::CUDA) {
        hint << ": an app that links apps/common/CudaOptIn may use its GPU's opt-in maximum ("
             << model::default_gpu().smem_per_block_optin << " bytes on the " << model::default_gpu().name << ")";
    } else if (device == DeviceAPI::OpenCL) {
        hint << ": up to the device's CL_DEVICE_LOCAL_MEM_SIZE";
    }
    return hint.str();
}

/** The registers per thread the register slots of one loop may take (Options::register_limit). */
int register_limit(const Options &options, std::string *why) {
    // The check bounds the register stages, and with them what the rewrite unrolls.
    user_assert(options.register_limit <= max_registers_per_thread)
        << "alcop::Options::register_limit is " << options.register_limit << ", but no GPU gives a thread more "
        << "than " << max_registers_per_thread << " registers.\n";
    if (options.register_limit > 0) {
        *why = "set by alcop::Options::register_limit";
        return options.register_limit;
    }
    if (options.target.has_feature(Target::CUDA)) {
        *why = "the default for CUDA: Halide 14's runtime caps every kernel at that many registers per thread";
        return model::register_limit(model::default_gpu(), model::RuntimeLimits::HalideDefault);
    }
    *why = "the default: the most a thread of any GPU the model knows holds before it spills";
    return model::default_gpu().max_registers_per_thread;
}

/** Every pipelined kernel's shared memory and every fragment loop's register slots within the
 * limits, checked before anything is built: a kernel that needs more fails only at launch, and
 * a prologue of a huge stage count would take the compiler down first. */
void check_limits(const PipelineAnalysis &analysis, const std::vector<KernelPlan> &plans,
                  const std::vector<FragmentLoop> &fragments, const Options &options) {
    for (size_t i = 0; i < plans.size(); i++) {
        const KernelPlan &plan = plans[i];
        std::string why;
        const int64_t limit = shared_memory_limit(options, analysis.kernels[i].device, &why);
        if (plan.total_bytes <= limit) continue;
        std::ostringstream funcs, slots;
        std::set<std::string> named;
        int64_t largest_loop = 0;  // the bytes of the slots of the loop that has the most
        for (const LoopPlan &l : plan.loops) {
            int64_t bytes = 0;
            for (const BufferPlan &b : l.buffers) {
                bytes += b.stages * b.slot_bytes;
            }
            largest_loop = std::max(largest_loop, bytes);
            for (const BufferPlan &b : l.buffers) {
                if (!named.insert(b.func).second) continue;
                funcs << (named.size() > 1 ? ", " : "") << user_name(b.func);
                slots << (named.size() > 1 ? ", " : "") << user_name(b.func) << ": " << b.stages << " stages x "
                      << b.slot_bytes << " bytes";
            }
        }
        user_error << "alcop::pipeline(" << funcs.str() << "): the GPU kernel that pipelines "
                   << (named.size() > 1 ? "them" : "it") << " would need " << (plan.total_known ? "" : "at least ")
                   << plan.total_bytes << " bytes of shared memory per block (" << slots.str()
                   << (plan.total_known && plan.total_bytes > largest_loop ?
                           ", and " + std::to_string(plan.total_bytes - largest_loop) +
                               " bytes of the kernel's other data and alignment" :
                           "")
                   << "), more than the limit of " << limit << " bytes (" << why << "). Use fewer stages or smaller "
                   << "tiles, or raise the limit with alcop::Options::shared_memory_limit if the kernel may use "
                   << "more" << raise_shared_hint(analysis.kernels[i].device) << ".\n";
    }
    for (const FragmentLoop &l : fragments) {
        std::string why;
        const int limit = register_limit(options, &why);
        int64_t registers = 0;
        std::ostringstream funcs, slots;
        for (const Fragment &f : l.fragments) {
            const int64_t words = (f.storage->type.bytes() + 3) / 4;
            registers += (int64_t)l.stages * f.elements * words;
            const bool first = &f == &l.fragments.front();
            funcs << (first ? "" : ", ") << user_name(f.func);
            slots << (first ? "" : ", ") << user_name(f.func) << ": " << l.stages << " stages x " << f.elements
                  << " x " << f.storage->type.bytes() << " bytes";
        }
        user_assert(registers <= limit)
            << "alcop::pipeline(" << funcs.str() << ", Level::Register): the register slots in "
            << describe_loop(l.loop) << " would take " << registers << " 32-bit registers per thread ("
            << slots.str() << "), more than the limit of " << limit << " (" << why << "). Use fewer register "
            << "stages or smaller fragments, or raise the limit with alcop::Options::register_limit if the "
            << "kernel may use more"
            << (options.target.has_feature(Target::CUDA) ?
                    ": an app that links apps/common/CudaOptIn may use " +
                        std::to_string(model::register_limit(model::default_gpu(), model::RuntimeLimits::OptIn)) :
                    std::string())
            << ".\n";
    }
}

void add_function(const Function &f, std::map<std::string, Function> &env) {
    if (env.count(f.name())) return;
    env.emplace(f.name(), f);
    for (const auto &c : find_direct_calls(f)) {
        add_function(c.second, env);
    }
    for (const auto &w : f.schedule().wrappers()) {
        add_function(Function(w.second), env);
    }
}

LoweringObserver &observer() {
    static LoweringObserver o;
    return o;
}

}  // namespace

void set_lowering_observer(LoweringObserver o) {
    observer() = std::move(o);
}

Stmt LowerPipelines::mutate(const Stmt &s) {
    const std::map<std::string, PipelineRequest> requests = collect_requests(outputs);
    // The tensor-core rewrite reads the consumers' loads after the pipeline rewrite moved
    // them into their slots, so that each ldmatrix row is one address plus constants.
    const std::vector<TensorCoreUse> tensor_cores = analyze_tensor_cores(s, outputs, options_.target);
    Stmt result = compact_thread_registers(
        rewrite_inner_products(inject_pipelines(s, requests, options_, hooks), tensor_cores));
    result = mark_launch_bounds(result, collect_launch_bounds(outputs));
    if (observer()) {
        observer()(s, result, requests);
    }
    return result;
}

// What `requested` finds on each Func of the pipeline (the outputs, everything they call and
// the wrappers), keyed by Func name.
template<typename Request>
static std::map<std::string, Request> collect(const std::vector<Function> &outputs,
                                              std::optional<Request> (*requested)(const Function &)) {
    std::map<std::string, Function> env;
    for (const Function &f : outputs) {
        add_function(f, env);
    }
    std::map<std::string, Request> found;
    for (const auto &f : env) {
        if (std::optional<Request> r = requested(f.second)) {
            found[f.first] = *r;
        }
    }
    return found;
}

std::map<std::string, PipelineRequest> collect_requests(const std::vector<Function> &outputs) {
    return collect(outputs, requested_pipeline);
}

std::map<std::string, int> collect_launch_bounds(const std::vector<Function> &outputs) {
    return collect(outputs, requested_min_blocks_per_sm);
}

Stmt inject_pipelines(const Stmt &s, const std::map<std::string, PipelineRequest> &requests,
                      const Options &options, const testing::Hooks &hooks) {
    PipelineAnalysis analysis = analyze_pipelines(s, requests);
    const std::vector<FragmentLoop> fragments = analyze_fragments(s, requests);
    if (analysis.kernels.empty() && fragments.empty()) {
        return s;
    }
    std::vector<KernelPlan> plans;
    for (const KernelPipelines &k : analysis.kernels) {
        plans.push_back(plan_kernel(k));
    }
    check_limits(analysis, plans, fragments, options);
    InjectPipelines inject(analysis, plans, fragments, options, hooks);
    Stmt result = inject.mutate(s);
    inject.warn_uncomposed();
    return result;
}

}  // namespace alcop
