#ifndef ALCOP_PIPELINE_ANALYSIS_H
#define ALCOP_PIPELINE_ANALYSIS_H

/** \file
 * Finds the loops that can be pipelined, and proves that pipelining them is legal.
 *
 * Input: the Stmt a Halide 14 custom lowering pass sees (after the final simplification,
 * before GPU offload): gpu_block loops, fused gpu_thread loops, gpu_thread_barrier calls,
 * produce/consume markers, and one merged GPUShared allocation per kernel in which every
 * shared Func is an index range.
 *
 * For each requested Func P (Level::Shared, stages > 1) it finds the serial loop L that
 * is innermost around P's produce node inside a kernel, P's byte range in the merged
 * allocation, and the owner of every access to that allocation inside L. It raises a
 * Halide user_error naming the Func and the reason whenever pipelining would not be
 * provably correct:
 *  - P is not produced inside a serial loop under gpu_blocks, or not stored in shared memory;
 *  - P's tile does not have one constant place in the allocation for every iteration;
 *  - P is written outside its produce node, read before it is produced in the loop body,
 *    or read after the loop (a consume node of P outside L);
 *  - P's producer reads shared memory or a buffer that L writes (read-after-write), or
 *    writes anything but P's tile;
 *  - P is produced more than once in L (a loop inside it unrolled), or by the statement that
 *    produces another pipelined Func;
 *  - an access inside L overlaps P's range without lying inside it, or the tiles of two
 *    pipelined Funcs overlap.
 * It changes nothing; the plan and the rewrite consume what it returns.
 */

#include "directive/Requests.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace alcop {

/** A requested Func staged in the merged shared allocation of a kernel. */
struct StagedBuffer {
    std::string func;
    int stages = 1;
    int64_t begin = 0;  ///< first byte of P's tile in the allocation
    int64_t end = 0;    ///< one past its last byte
};

/** What a top-level statement of the streaming loop's body is. */
enum class StmtRole { Barrier, Producer, Compute };

/** The streaming loop L's body, cut into a sequence of statements. Blocks are flattened,
 * and lets and consume markers around a producer are pushed into each piece, so that every
 * producer is a statement of its own that the rewrite can move. */
struct LoopBody {
    std::vector<Halide::Internal::Stmt> stmts;
    std::vector<StmtRole> roles;
    std::vector<std::string> produced;  ///< for a Producer statement, the Func it produces
};

/** A serial loop with at least one pipelined producer. */
struct PipelineLoop {
    const Halide::Internal::For *loop = nullptr;
    std::vector<StagedBuffer> buffers;
    LoopBody body;
};

/** One kernel's merged shared allocation and the pipelined loops that use it. */
struct KernelPipelines {
    Halide::DeviceAPI device = Halide::DeviceAPI::None;  ///< of the kernel's gpu_block loops
    const Halide::Internal::Allocate *allocation = nullptr;
    /** The allocation's size in bytes before the rewrite; -1 when it is not a constant. */
    int64_t allocation_bytes = -1;
    std::vector<PipelineLoop> loops;
    /** Some access to the allocation belongs to no pipelined buffer, so the allocation's
     * current layout must be kept and the slots go after it. */
    bool has_other_buffers = false;
};

struct PipelineAnalysis {
    std::vector<KernelPipelines> kernels;
    /** The pipelined Func owning each Load/Store node of a shared allocation inside a
     * pipelined loop (keyed by node identity; the rewrite visits the same nodes). */
    std::map<const Halide::Internal::IRNode *, std::string> owner;
};

/** Analyze `s` for the given requests (keyed by Func name). Requests with stages == 1 or
 * Level::Register (analysis/FragmentAnalysis.h) are ignored. Throws Halide::CompileError (user_error) on illegal requests. */
PipelineAnalysis analyze_pipelines(const Halide::Internal::Stmt &s,
                                   const std::map<std::string, PipelineRequest> &requests);

/** The first of `funcs` produced in `s` (a produce node's name), or "". */
std::string first_produced(const Halide::Internal::Stmt &s, const std::set<std::string> &funcs);

/** Cuts a loop body into the statements of a LoopBody, appended to `out`: blocks are
 * flattened, and the lets and consume markers around a produce node of one of `funcs` are
 * pushed into each piece. */
void cut_loop_body(const Halide::Internal::Stmt &body, const std::set<std::string> &funcs,
                   std::vector<Halide::Internal::Stmt> &out);

/** True for `gpu_thread_barrier(...)` statements. */
bool is_barrier(const Halide::Internal::Stmt &s);

/** How the user errors name a loop: "the serial loop <name>". */
std::string describe_loop(const Halide::Internal::For *loop);

/** `name` without the uniquifying suffixes ("$" and digits) Halide appends: A_shared$5_in_prod$5$0
 * is A_shared_in_prod. */
std::string without_unique_suffixes(const std::string &name);

/** How the user errors name a Func: as the user wrote it. Halide uniquifies names (`A2$0`
 * for `A2` in a Generator) and names the wrappers of Func::in() after what they wrap
 * (`A_im_global_wrapper$0` for `A.in()` on an ImageParam A, `A_in_prod` for `A.in(prod)`). */
std::string user_name(const std::string &func);

/** How a user error starts: the call the user wrote, "alcop::pipeline(A.in())" (with
 * ", Level::Register" for that level), followed, for a wrapper, by Halide's name of it, which
 * is what Halide's own messages and the lowered IR show. */
std::string pipeline_call(const std::string &func, Level level = Level::Shared);

}  // namespace alcop

#endif
