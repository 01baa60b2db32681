#ifndef ALCOP_AUTO_PIPELINE_H
#define ALCOP_AUTO_PIPELINE_H

/** \file
 * The policy behind alcop::auto_pipeline (the one switch): it turns every buffer of a lowered
 * pipeline that the analysis accepts into a pipeline request, with stages from the model, and
 * hands the requests to the same rewrite as the explicit ones. It rewrites nothing itself.
 *
 * Candidates (read from the Stmt the pass receives, and the Funcs' store_in()):
 *  - Level::Shared: a Func stored in GPU shared memory whose produce node is inside a serial
 *    loop of a GPU kernel (store_in(MemoryType::GPUShared), or the default memory type at the
 *    block level, which Halide 14 also puts in shared memory);
 *  - Level::Register: a Func with its own per-thread allocation (not shared, not heap) around
 *    its produce node, which is inside a serial loop of a GPU kernel.
 * Outputs and Funcs with an explicit alcop::pipeline() request (stages 1 too) are no
 * candidates: explicit requests win. Each candidate is checked by the analysis itself
 * (analyze_pipelines / analyze_fragments with 2 stages, beside the explicit requests and the
 * candidates accepted before it, shared ones first); a candidate it rejects keeps no request,
 * and the reason is the analysis's own user-error message, caught. The rules are not repeated
 * here.
 *
 * Stages, per pipelined loop (all automatic buffers of one loop get the same count):
 *  - Shared: for S = 2 .. 8, the kernel's shared memory is what plan_kernel() lays out for
 *    those stages, exactly what the pass checks; S over `AutoLimits::shared_bytes` is not
 *    considered (if 2 stages do not fit, the loop's candidates are left as they are). The
 *    time of an SM running b blocks (b from shared memory, threads, block slots and the
 *    kernel's estimated registers, AutoLimits::kernel_registers, on the model's GPU) is model::pipeline_chain_cycles(E, d, load, compute) / b, with E the loop's
 *    trip count (64 when it is not a constant), d = S - 1 (at most 1 when copies are not
 *    asynchronous: a register-staged copy lands one iteration later whatever S is),
 *    load = global latency + b x tile bytes / the SM's share of L2 bandwidth, and
 *    compute = max(b x threads x ops / FP32 lanes, shared-memory latency), `ops` the
 *    arithmetic and loads one thread runs per iteration in the loop's consumers (constant
 *    inner loops counted by their trips, vectors by their lanes).
 *  - Register: only for fragment loops of constant extent T (the analysis requires it); for
 *    R = 2 .. min(4, T + 1), the slots, R x the fragments' 32-bit words, must fit in
 *    AutoLimits::registers less the kernel's other per-thread arrays and the registers of
 *    addresses and loop state (model::kAddressAndLoopRegisters), which is stricter than the
 *    pass's check of the slots alone. Time: pipeline_chain_cycles(T, R - 1, shared latency,
 *    ops of one step). A loop that also holds an explicitly requested fragment takes its
 *    stage count (the analysis wants one prefetch distance per loop).
 *  - Register, tensor cores: the fragments of an alcop::tensor_cores() accumulator with no
 *    request of its own, where both operands got shared stages (the register stages prefetch
 *    across their chunks); R = 2 .. min(4, its k steps per chunk), R dividing them (the rewrite's
 *    rule), whose model::estimate_registers fits AutoLimits::registers. Time per k step:
 *    model::tensor_core_step_cycles, what the autoscheduler's model charges.
 *  - The choice is the smallest count whose predicted time is within 3% of the best: a stage
 *    that buys less costs shared memory or registers for nothing. The predicted gain is the
 *    time without pipelining over the time with the choice. A shared-level choice predicted
 *    slower than no pipelining at all (its shared memory costs more blocks per SM than the
 *    prefetch gains) is not made: the loop's candidates are left as they are, with that reason.
 * The model's GPU is AutoLimits::gpu (model::default_gpu() for the pass: OpenCL does not say
 * which device runs the kernel, so its times rank choices, they do not predict pocl).
 *
 * Guarantees: every request returned is accepted by the analysis together with the explicit
 * ones, and fits the limits the pass checks; the explicit requests are returned unchanged.
 */

#include "analysis/TensorCoreAnalysis.h"
#include "directive/Requests.h"
#include "model/GpuSpec.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace alcop {

/** What the pass allows, computed where it checks (LowerPipelines.cpp). */
struct AutoLimits {
    /** Shared memory one block of a kernel on that device may use, in bytes. */
    std::function<int64_t(Halide::DeviceAPI)> shared_bytes;
    /** 32-bit registers per thread the register slots of one loop may take. */
    int registers = 0;
    /** Whether the copies of a kernel on that device are asynchronous (cp.async). */
    std::function<bool(Halide::DeviceAPI)> async_copies;
    const model::GpuSpec *gpu = nullptr;
    /** Each kernel's estimated registers per thread, by its outermost gpu_block loop's name
     * (analysis/KernelRegisters.h): with its threads and shared memory, they bound the blocks
     * an SM holds. A kernel not listed is bounded by its shared memory and threads only. */
    std::map<std::string, int> kernel_registers;
};

/** What the policy did with one candidate. */
struct AutoChoice {
    std::string func;  ///< Halide's name
    Level level = Level::Shared;
    int stages = 1;             ///< 1: left as it was
    double predicted_gain = 1;  ///< the model's time of its loop unpipelined / pipelined
    std::string loop;           ///< the loop it is pipelined across ("" when rejected early)
    std::string why;            ///< how the stages were chosen, or why it was left as it was
};

struct AutoReport {
    std::vector<AutoChoice> choices;
    /** One line per candidate. */
    std::string to_string() const;
};

/** The explicit requests plus a request for every candidate of `s` the policy pipelines.
 * `funcs`: every Func of the pipeline by name; `outputs`: the names of its outputs. Raises
 * the analysis's user errors for illegal explicit requests, as the pass does. `tensor_cores`:
 * the accepted alcop::tensor_cores() requests, whose fragments may get register stages. */
std::map<std::string, PipelineRequest> choose_pipelines(const Halide::Internal::Stmt &s,
                                                        const std::map<std::string, Halide::Internal::Function> &funcs,
                                                        const std::set<std::string> &outputs,
                                                        const std::map<std::string, PipelineRequest> &explicit_requests,
                                                        const AutoLimits &limits, AutoReport *report,
                                                        const std::vector<TensorCoreUse> &tensor_cores = {});

/** Called with the report of every automatic lowering (process-wide, like
 * set_lowering_observer); for alcop_inspect and the tests. An empty function removes it. */
void set_auto_pipeline_observer(std::function<void(const AutoReport &)> observer);

}  // namespace alcop

#endif
