#ifndef ALCOP_TENSOR_CORE_ANALYSIS_H
#define ALCOP_TENSOR_CORE_ANALYSIS_H

/** \file
 * Checks each alcop::tensor_cores() request against what mma.sync.m16n8k16 and ldmatrix can
 * do, and describes the inner product it is to replace. It changes nothing.
 *
 * The accumulator P (the Func the directive names) must be
 *
 *     P(x, y) = <anything>;   P(x, y) = P(x, y) + f32(A(ka, y)) * f32(B(x, kb))   (either order)
 *
 * with x the N side and y the M side, ka and kb the same reduction index, A and B Funcs of
 * one type the instruction has (Float(16) or BFloat(16)) stored in GPU shared memory, and P
 * of type Float(32). In its shared tile each operand must be contiguous along K (its innermost
 * storage dimension is indexed by the reduction index: ldmatrix) or along M/N (indexed by y,
 * resp. x, with unit stride: ldmatrix.trans), A and B alike. In the lowered kernel the thread
 * loops around P's update must form whole warps (the innermost thread dimension exactly 32
 * threads, one warp's lanes) and the accumulators each lane of a
 * warp updates must be those mma.sync gives that lane (TensorCoreMarkers.h, "C and D"), over
 * a warp_m x warp_n tile: with lane = t + 4 g, x = x0 + 8 i + 2 t + {0, 1},
 * y = y0 + 16 j + g + {0, 8}. Each violation is a Halide user_error that names the Func and
 * the reason. An update whose K loop is still a guarded tail (is_guarded_k_loop: a runtime K
 * whose tail rewrite/ZeroFilledTails.h could not zero-fill) is left to the threads, unchecked
 * and unrewritten, where another update of the same accumulator takes mma.sync.
 */

#include "directive/Requests.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace alcop {

/** How an operand sits in its shared tile. */
enum class OperandMajor {
    K,     ///< contiguous along the reduction
    Outer  ///< contiguous along M (A) or N (B)
};

/** One accepted request, as the rewrite needs it. */
struct TensorCoreUse {
    std::string accumulator;  ///< P
    TensorCoreRequest tile;
    std::string a, b;      ///< the shared Funcs of the M side (A) and the N side (B)
    Halide::Type element;  ///< Float(16) or BFloat(16)
    OperandMajor a_major = OperandMajor::K, b_major = OperandMajor::K;
    /** The width (x extent) of the accumulator's storage, its bound_extent; 0 when the
     * lowered Stmt does not hold the update. */
    int64_t width = 0;
    /** The reduction elements of one staged chunk (the serial K loop around the updates, a
     * multiple of 16); 0 when the lowered Stmt does not hold the update. */
    int64_t k_tile = 0;
    /** ldmatrix.trans serves an operand that is not in the instruction's own layout: A
     * contiguous along M, B ("col") contiguous along N. */
    bool a_trans() const {
        return a_major == OperandMajor::Outer;
    }
    bool b_trans() const {
        return b_major == OperandMajor::Outer;
    }
};

/** Whether a lowered update's serial K loop (the innermost serial loop inside the thread loops
 * around the accumulator's updates) is a guarded tail: a loop of an extent that is not a
 * constant, as Halide makes the last chunk of a K the chunk does not divide, where
 * rewrite/ZeroFilledTails.h left it so. Such an update stays the per-thread inner product; the
 * others are rewritten. */
bool is_guarded_k_loop(const Halide::Internal::For *k_loop);

/** Whether `buffer` is the accumulator `func`'s: storage flattening names a Func's buffer after
 * the Func and its tuple element. */
bool is_accumulator(const std::string &buffer, const std::string &func);

/** Whether `s` accumulates into `func`: a store to its buffer whose value loads it. */
bool accumulates_into(const Halide::Internal::Stmt &s, const std::string &func);

/** The Func an accumulator's update reads for its operand `operand` (a Func name): that Func,
 * or its wrapper for the accumulator (g.in(f), or a global g.in()), which lowering substitutes
 * for it: the shared tile. */
std::string staged_operand(const std::string &accumulator, const std::string &operand,
                           const std::map<std::string, Halide::Internal::Function> &env);

/** The name (before unique_name's suffix) of the per-thread array that holds the register
 * stages of a tensor-core inner product's fragments (rewrite/MmaInnerProduct.h). */
constexpr const char *fragment_registers_name = "tc_fragments";

/** The tensor-core requests recorded on the Funcs of a pipeline (keyed by Func name). */
std::map<std::string, TensorCoreRequest>
collect_tensor_core_requests(const std::vector<Halide::Internal::Function> &outputs);

/** Checks the requests on the Funcs of `outputs` against their definitions and the lowered
 * `s` compiled for `target`; returns the accepted uses. Throws Halide::CompileError
 * (user_error) on an illegal request. With `any_target` the target is not checked (the
 * test-only emulation of the instructions on other GPU APIs). */
std::vector<TensorCoreUse> analyze_tensor_cores(const Halide::Internal::Stmt &s,
                                                const std::vector<Halide::Internal::Function> &outputs,
                                                const Halide::Target &target, bool any_target = false);

/** The register stages requested of the accumulators of `uses` among `requests`
 * (alcop::pipeline(accumulator, R, Level::Register)): their fragments' stages, which the
 * inner-product rewrite builds, not a register-level pipeline of the accumulator's own. */
std::map<std::string, int> fragment_stages(const std::vector<TensorCoreUse> &uses,
                                           const std::map<std::string, PipelineRequest> &requests);

/** User errors for fragment stages that cannot be had: R >= 2 where the operands are not both
 * pipelined at the shared level among `requests` (the next chunk's first fragments are read
 * from a slot), or fragments of R stages that take more than `register_limit` registers. */
void check_fragment_stages(const std::vector<TensorCoreUse> &uses,
                           const std::map<std::string, PipelineRequest> &requests, int register_limit);

/** How the user errors start: "alcop::tensor_cores(P)". */
std::string tensor_cores_call(const std::string &func);

/** The value of `e` with `values` substituted for their variables and every other variable 0
 * (a lane's index math, evaluated for one lane), if that is a constant. */
std::optional<int64_t> evaluate_lane(Halide::Expr e, const std::map<std::string, Halide::Expr> &values);

}  // namespace alcop

#endif
