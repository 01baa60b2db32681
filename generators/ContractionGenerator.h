#ifndef ALCOP_GENERATORS_CONTRACTION_GENERATOR_H
#define ALCOP_GENERATORS_CONTRACTION_GENERATOR_H

// What the gemm, bmm and conv2d generators (MatMulGenerator.h, Conv2dGenerator.h) share: the
// GeneratorParams of the tiles, stages and operand type, each declared once here, and the steps
// of generate() and schedule() that read them (the cp.async promises of the operands, the SIMT
// or tensor-core schedule of ContractionSchedule.h, the pass). Each generator keeps its inputs,
// its algorithm and the GeneratorParams only it has.
//
// Assumes: a generator is a contraction of two staged operand tiles a_shared and b_shared into
// prod, its reduction split into chunks (RDom r: r.x within a chunk, r.y the pipelined chunk).
// Halide 14 registers every GeneratorParam that lies inside the Self object, so the ones of
// this base class are the generator's as much as its own.

#include "Halide.h"

#include "ContractionSchedule.h"
#include "alcop/Alcop.h"

#include <vector>

namespace alcop_generators {

// The Halide names the generators use, in this namespace only.
using Halide::Expr;
using Halide::Func;
using Halide::GeneratorParam;
using Halide::RDom;
using Halide::Var;
/** A contraction's operand: a buffer typed by the `type` GeneratorParam (configure()). */
using OperandInput = Halide::GeneratorInput<Halide::Buffer<>>;
using OutputBuffer = Halide::GeneratorOutput<Halide::Buffer<float>>;

/** The base of a contraction generator `Self` (through MatMulGenerator or Conv2dGenerator). Self
 * may install the pass its own way by declaring enable_pipelines(options). */
template<typename Self>
class ContractionGenerator : public Halide::Generator<Self> {
public:
    // The operands' element type: f32, f16 or bf16 (ContractionSchedule.h, Operands).
    GeneratorParam<Operands> type{"type", Operands::F32, operand_type_names()};
    // block_m, block_n, thread_m, thread_n, tile_k, stages and register_stages: 0 is the type's
    // default (with_defaults: f32 64 x 64 of 4 x 4, tile_k 8, unpipelined, no fragments; f32
    // with limits=optin 128 x 128 of 8 x 8, tile_k 16, 4 stages, 2 register stages; f16 and bf16
    // 128 x 128, tile_k 32, 3 stages, 2 register stages of the mma fragments).
    GeneratorParam<int> block_m{"block_m", 0, 0, 1024};          // output rows (conv2d: pixels) per block
    GeneratorParam<int> block_n{"block_n", 0, 0, 1024};          // output columns (conv2d: channels) per block
    GeneratorParam<int> thread_m{"thread_m", 0, 0, 64};          // f32
    GeneratorParam<int> thread_n{"thread_n", 0, 0, 64};          // f32
    GeneratorParam<int> warp_m{"warp_m", 64, 16, 256};           // f16, bf16
    GeneratorParam<int> warp_n;                                  // f16, bf16; the default is Self's (constructor)
    GeneratorParam<int> tile_k{"tile_k", 0, 0, 256};             // reduction elements (conv2d: channels) per chunk
    GeneratorParam<int> vector_width{"vector_width", 4, 1, 16};  // f32 (f16, bf16: 16 bytes)
    GeneratorParam<int> stages{"stages", 0, 0, 16};
    // Register fragments of A and B loaded from shared memory per step of the chunk, with
    // this many register slots (f32, 0: the compute reads shared memory directly; f16 and
    // bf16: the ldmatrix fragments, 1: loaded in the k step that uses them).
    GeneratorParam<int> register_stages{"register_stages", 0, 0, 8};
    // The same schedule without any alcop::pipeline() call, pipelined by alcop::auto_pipeline
    // (the stages are then ignored; register_stages >= 2 still leaves the fragment loop serial,
    // as the automatic register level needs).
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};
    // The launch limits of the app that links the library: "" for Halide 14's runtime (48 KiB
    // of shared memory, 64 registers per thread on CUDA), "optin" for an app that links
    // HalideAlcop::cuda_opt_in (alcop::Options::cuda_opt_in), as the autoscheduled
    // generators' `limits`.
    GeneratorParam<std::string> limits{"limits", ""};

    void enable_pipelines(const alcop::Options &options) {
        alcop::enable(this->get_pipeline(), options);
    }

protected:
    explicit ContractionGenerator(int default_warp_n) : warp_n{"warp_n", default_warp_n, 16, 256} {
    }

    bool tensor_cores() const {
        return type != Operands::F32;
    }

    /** The tiles and stages, 0s replaced by the type's defaults; stages_b: B's (0: A's). */
    ContractionShape resolved_shape(int stages_b = 0) const {
        return with_defaults(type, std::string(limits) == "optin", block_m, block_n, tile_k, stages, stages_b,
                             register_stages, thread_m, thread_n);
    }

    /** Both operands typed by `type` (for configure()). */
    void set_operand_types(OperandInput &a, OperandInput &b) {
        a.set_type(element_type(type));
        b.set_type(element_type(type));
    }

    /** Whether the staged copies become cp.async (CUDA, sm_80+, copies of `kind`). If so, a and
     * b promise what makes a whole vector of `vector` elements aligned: zero-based rows whose
     * strides are multiples of the vector, in 16-byte aligned allocations (the caller also
     * makes its output start at column 0, as the tiles that pick B's columns need). */
    bool promise_async_operands(alcop::CopyKind kind, int vector, OperandInput &a, OperandInput &b) {
        const Halide::Target target = this->get_target();
        const bool async = target.has_feature(Halide::Target::CUDA) && alcop::uses_async_copies(target, kind);
        if (async) {
            for (OperandInput *in : {&a, &b}) promise_vectors(*in, vector);
        }
        return async;
    }

    /** An index into an operand that a copy reads under the guard that zero-fills its tile
     * (select(inside, operand(...), 0)): unclamped where the copies are cp.async, elsewhere
     * clamped, so that no lane's load leaves the operand. cp.async's src-size reads only the
     * bytes the guard lets through (a row's valid elements along the contiguous dimension, none
     * for a row or a pixel outside) and zero-fills the rest, so an address outside is never read.
     * Along the contiguous dimension the copy is then one dense vector; along the others
     * (unclamped_rows) its address is an affine function of the chunk instead of a clamp
     * recomputed per copy and chunk: 11 fewer instructions per chunk in the fp16 GEMM's main loop
     * (docs/mainloop.md). The SIMT kernels keep those clamps: there the hoisted addresses cost
     * registers (the 64x64x8 4x4-per-thread GEMM 56 -> 64) for 0.03 instructions per fma. */
    static Expr guarded_index(bool unclamped, const Expr &i, const Expr &extent) {
        return unclamped ? Halide::unsafe_promise_clamped(i, 0, extent - 1) : Halide::clamp(i, 0, extent - 1);
    }

    /** Whether guarded_index leaves the non-contiguous dimensions of an operand unclamped. */
    bool unclamped_rows(bool async) const {
        return async && tensor_cores();
    }

    /** A copy's guard, `inside`: on tensor cores, true where every tile is whole too. The
     * tensor-core schedules specialize out on `whole_tiles` (specialize_whole_tiles): in that
     * branch Halide's simplifier knows the sizes' remainders are 0, every guard folds to true,
     * and each copy is a plain cp.async of 16 bytes, where a tail needs its src-size computed
     * per copy and chunk (0.44 instructions per mma.sync in the fp16 GEMM, docs/mainloop.md).
     * In the other branch it knows `whole_tiles` false and the guard is `inside` again. The
     * SIMT kernels are left unspecialized: each of their copies feeds a few FFMAs per thread
     * at most, and a second kernel would double what pocl compiles in the tests. */
    Expr guard(const Expr &inside, const Expr &whole_tiles) const {
        return tensor_cores() ? whole_tiles || inside : inside;
    }

    void specialize_whole_tiles(Func out, const Expr &whole_tiles) {
        if (tensor_cores()) out.specialize(whole_tiles);
    }

    /** out's schedule: ContractionSchedule.h's tensor-core schedule (f16, bf16) or SIMT one
     * (f32) of the contraction prod of a_shared and b_shared, in chunks (`streaming`, the loop
     * the pipelines run across) of `step` (the reduction within a chunk), with stages_b stages
     * of B, and the pipelines asked for unless auto_pipeline. */
    void schedule_contraction_of(Func out, Func prod, Func a_shared, Func b_shared, Var x, Var y,
                                 const std::vector<Var> &extra_blocks, Halide::RVar step, Halide::RVar streaming,
                                 const ContractionShape &shape, int stages_b, bool b_k_major = false) {
        if (tensor_cores()) {
            schedule_tensor_core_contraction(out, prod, a_shared, b_shared, x, y, extra_blocks, {step}, streaming,
                                             {shape.block_m, shape.block_n, warp_m, warp_n}, shape.stages, stages_b,
                                             shape.register_stages, !auto_pipeline, b_k_major);
        } else {
            schedule_contraction(out, prod, a_shared, b_shared, x, y, extra_blocks, {step}, streaming,
                                 {shape.block_m, shape.block_n, shape.thread_m, shape.thread_n, vector_width},
                                 shape.stages, stages_b, shape.register_stages, !auto_pipeline, b_k_major);
        }
    }

    /** Installs the pass with `options` (their target set here): alcop::auto_pipeline with
     * auto_pipeline=true, else Self's enable_pipelines. */
    void install_pass(alcop::Options options) {
        options.target = this->get_target();
        const std::string declared = limits;
        _halide_user_assert(declared.empty() || declared == "optin")
            << "The contraction generators' limits is \"" << declared << "\"; it takes \"\" (Halide 14's runtime) or \"optin\" (the app links HalideAlcop::cuda_opt_in).\n";
        options.cuda_opt_in = declared == "optin";
        if (auto_pipeline) {
            alcop::auto_pipeline(this->get_pipeline(), options);
        } else {
            static_cast<Self *>(this)->enable_pipelines(options);
        }
    }
};

}  // namespace alcop_generators

#endif
