#ifndef ALCOP_AUTOSCHEDULER_CONTRACTION_H
#define ALCOP_AUTOSCHEDULER_CONTRACTION_H

/** \file
 * Recognition of the contraction pipelines the Alcop autoscheduler schedules.
 *
 * What it does: given the outputs of a Halide 14 Pipeline, decides whether the pipeline is a
 * contraction our lowering can tile, stage and pipeline, and if so describes it: which Func
 * accumulates, which two Funcs it multiplies, the role of every dimension (the N dimension
 * that a block tiles by BN, the M dimensions that it tiles by BM, the batch dimensions that
 * index separate blocks), the reduction variables, and the problem sizes the pipeline's
 * estimates give, as the model's Problem.
 *
 * The recognized form, exactly:
 *  - one output `out` that is the accumulating Func itself, or a pure copy of it
 *    `out(v0, ..., vn) = f(some permutation of v0..vn)`, or an elementwise function of such a
 *    copy (an epilogue: `max(f(v...) + bias(x), 0)`, reading f only at that permutation and
 *    otherwise inputs and pure Funcs that do not read f, which stay inlined), or (what
 *    Stage::rfactor({}) makes of the first) an init plus one update without RDom
 *    `out(v...) = out(v...) + f(permutation)`;
 *  - `f` (FP32) has a pure definition (any value, e.g. 0) and exactly one update
 *        f(u0, ..., un) = f(u0, ..., un) + a(...) * b(...)      (or `+=`, either operand order)
 *    where a and b are FP32, or both fp16 or both bf16 converted: f32(a(...)) * f32(b(...))
 *    (problem.element says which: the tensor-core form);
 *    whose left-hand side is f's pure variables in order, with no RDom predicate;
 *  - `a` and `b` are two different pure Funcs (ImageParams and Generator Input buffers are
 *    such Funcs); their arguments are any expressions of f's variables and the RDom's;
 *  - the first RDom variable (the one chunked by the k tile) indexes both operands;
 *  - the output's innermost dimension indexes exactly one operand (it becomes `b`, its
 *    dimension the N dimension), and some other dimension indexes only the other one (the
 *    M dimensions). Dimensions that index both operands, or neither, are batch dimensions;
 *    further dimensions that index only `b` are treated as batch dimensions too.
 * That covers GEMM `out(x, y) = sum(A(r, y) * B(x, r))`, batched matmul with a batch
 * dimension in both operands, and an NHWC convolution
 * `out(co, x, y, n) = sum(in(r.x, x*s + r.y, y*s + r.z, n) * w(co, r.x, r.y, r.z))` seen as
 * an implicit GEMM (M = the pixels x, y, with n a batch dimension; N = co; K = the RDom).
 *
 * Assumes: estimates on the output (Func::set_estimates) and on every input a size depends
 * on (ImageParam / Input set_estimates, Param estimates), as every Halide autoscheduler does.
 *
 * Guarantees: recognize_contraction() never changes the pipeline; when it returns nothing it
 * says why in one sentence.
 */

#include "Halide.h"
#include "model/CostModel.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace alcop {
namespace autoscheduler {

enum class DimRole {
    N,      ///< the output's innermost dimension: tiled by BN, indexes only operand b
    M,      ///< indexes only operand a: the first two are tiled (BM = bx * by)
    Batch,  ///< indexes both operands, neither, or only b beyond the first: one per block
};

const char *to_string(DimRole role);

/** One dimension of the output, and the accumulating Func's variable it is. */
struct ContractionDim {
    std::string output_var;     ///< the output's pure variable
    std::string reduction_var;  ///< the accumulating Func's pure variable for it
    int output_dim = 0;         ///< its position in the output's arguments
    DimRole role = DimRole::Batch;
    int64_t extent = 0;  ///< estimated extent
};

/** One variable of the reduction domain. */
struct ContractionRVar {
    std::string name;  ///< as scheduled, e.g. "r$x"
    Halide::Expr min, extent;
    int64_t extent_estimate = 0;

    /** The extent is a Param or a buffer's size: a stage specialized on `extent == value`
     * gets the value substituted, a constant there. */
    bool extent_is_size() const {
        const Halide::Internal::Variable *v = extent.as<Halide::Internal::Variable>();
        return v && v->param.defined();
    }
};

/** One of the two factors. */
struct Operand {
    Halide::Internal::Function func;
    std::vector<Halide::Expr> args;  ///< as the update calls it
    /** The input buffer `func` reads, when its definition is a plain read of one
     * (`A_im(_0, _1) = A(_0, _1)`): what a clamped read may be clamped to. */
    std::optional<Halide::Internal::Parameter> image;
    int64_t bytes_estimate = 0;  ///< 4 * its estimated elements for an input buffer; 0 unknown
};

struct Contraction {
    std::string kind;  ///< "GEMM", "batched matmul", "implicit-GEMM convolution", "contraction"
    Halide::Internal::Function output, reduction;
    /** The output accumulates itself: schedulable only after out.update(0).rfactor({}). */
    bool output_is_reduction = false;
    /** The output is an init plus `out += f` (f the accumulating Func): its update stage reads f. */
    bool output_accumulates = false;
    /** The output computes on f elementwise (`out(v) = max(f(v) + bias(x), 0)`, a cast): an
     * epilogue, computed where out stores, from the accumulators in registers. */
    bool epilogue = false;
    Operand a, b;                        ///< a: the M side; b: the N side
    /** The input buffers (as Funcs that read them plainly) the accumulating Func's pure
     * definition reads, e.g. a bias: the edge blocks compute it past the output's edges, so the
     * schedule reads them at clamped coordinates. */
    std::vector<Operand> init_inputs;
    std::vector<ContractionDim> dims;    ///< in the output's dimension order
    std::vector<ContractionRVar> rvars;  ///< innermost first; rvars[0] is chunked by the k tile
    model::Problem problem;              ///< at the estimates

    /** Indices into dims: the N dimension, the M dimensions in output order, the rest. */
    int n_dim() const;
    std::vector<int> m_dims() const;
    std::vector<int> batch_dims() const;

    /** "GEMM out = sum_r A * B: M=1024 (y) N=1024 (x) K=1024 (r$x)". */
    std::string describe() const;
};

/** The contraction `outputs` compute, or nothing, with the reason in *why. */
std::optional<Contraction> recognize_contraction(const std::vector<Halide::Internal::Function> &outputs,
                                                 std::string *why);

/** `e` with every Param and input-buffer size replaced by its estimate (or constraint),
 * simplified; undefined if some symbol has neither. */
Halide::Expr substitute_estimates(const Halide::Expr &e);

}  // namespace autoscheduler
}  // namespace alcop

#endif
