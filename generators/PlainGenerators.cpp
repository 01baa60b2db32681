// Pipelines written plainly, with estimates and no schedule, for the Alcop autoscheduler:
//
//   as_gemm:   out(x, y)        = sum_r A(r, y) * B(x, r)
//   as_gemm_into_output: the same GEMM accumulated in the output itself (out = 0; out += A * B)
//   as_gemm_relu: max(GEMM, 0), an epilogue the autoscheduler fuses into the GEMM's output stage
//   as_gemm_shifted: the GEMM read one row down (out(x, y) = prod(x, y + 1)), which it does not
//              recognize (plain GPU schedule)
//   as_gemm_bias: the GEMM accumulated onto a bias (prod(x, y) = bias(x); prod += A * B), whose
//              edge blocks compute the bias past N (the plugin clamps its reads)
//   as_bmm:    out(x, y, b)     = sum_r A(r, y, b) * B(x, r, b)
//   as_conv2d: out(co, x, y, n) = sum_{ci, kx, ky} input(ci, x + kx, y + ky, n) * weights(co, ci, kx, ky)
//              (NHWC input, HWIO weights, stride 1, no padding: a valid 3x3 convolution)
// And two row reductions, which the autoscheduler schedules as rows of lanes (RowReduction.h):
//   as_softmax:   out(x, y) = exp(v(x, y) - max_r v) / sum_r exp(v(r, y) - max_r v),
//              v = scale in(x, y) [+ mask(x, y / mask_rows)]; with heads > 0, rows in(x, y, h)
//              (and batch > 0: in(x, y, h, b))
//   as_layernorm: out(x, y) = (in(x, y) - mean_y) / sqrt(variance_y + epsilon) * gamma(x) + beta(x)
//              (`type=f16`: fp16 inputs and output, fp32 arithmetic)
//
// Every size is a runtime size (but K with as_gemm constant_k=true); the estimates are what
// the autoscheduler tunes for. as_gemm,
// as_bmm and as_conv2d take them as generator params (defaults: the autoscheduler tests' sizes),
// so that the benchmarks' "ALCOP auto" variants are tuned for the benchmarks' shapes. Built with
// `-p libautoschedule_alcop.so -s Alcop auto_schedule=true` (alcop_library ... AUTOSCHEDULE in
// generators/CMakeLists.txt) by test/autoscheduler and apps/bench.
//
// as_gemm, as_bmm and as_conv2d take `type=f16|bf16` (default f32): the operands are then fp16 or
// bf16, multiplied in fp32 (prod += f32(A) * f32(B)) into an fp32 output, the tensor-core form
// the autoscheduler gives mma.sync on CUDA sm_80+ (and its SIMT schedule, with a warning,
// elsewhere). With a 16-bit type, K (as_gemm, as_bmm) and CI (as_conv2d) are fixed to their
// estimates, the kernels the benchmarks measure; `runtime_k=true` leaves them runtime sizes, as
// with f32, and the autoscheduler then gives mma.sync the branch where its k tile divides the
// size (as_conv2d: where CI is the estimate; AlcopAutoscheduler.h). as_bmm's 16-bit reduction is a Func of its own, prod(x, y, b) (an
// inline sum() would put y first among its arguments).
//
// as_gemm, as_bmm and as_conv2d take `auto_pipeline=true`: schedule() then calls
// alcop::auto_pipeline, which lowers whatever schedule the autoscheduler applies after it
// (Halide 14's Generator runs the autoscheduler after schedule(), and the pass runs when the
// pipeline is lowered): Li2018's schedules plus the switch.

#include "Halide.h"

#include "alcop/Autoscheduler.h"
#include "alcop/Directive.h"

namespace {

using namespace Halide;

// `aligned=true`: the generator promises what a 16-byte cp.async needs of an operand (host
// pointer 16-byte aligned, rows starting at element 0 and a whole number of 16-byte vectors
// apart), and that the output's innermost dimension starts at 0 (its tiles pick the columns of
// the operand indexed by it), so that the Alcop autoscheduler's copies can be asynchronous;
// callers must pass such buffers (Halide::Runtime::Buffer allocations are). Without it the
// copies are staged through registers, correct for any buffer.
template<typename Input>
void declare_aligned(Input &in) {
    const int elements_per_vector = 16 / in.type().bytes();
    in.set_host_alignment(16);
    in.dim(0).set_min(0);
    for (int d = 1; d < in.dimensions(); d++) {
        in.dim(d).set_stride((in.dim(d).stride() / elements_per_vector) * elements_per_vector);
    }
}

// The operands' element type a generator's `type` names.
Type operand_type(const std::string &name) {
    if (name == "f16") return Float(16);
    if (name == "bf16") return BFloat(16);
    if (name != "f32") {
        // user_error (Halide.h undefines the macro for user code).
        Halide::Internal::ErrorReport(__FILE__, __LINE__, nullptr, Halide::Internal::ErrorReport::User)
            << "type=" << name << ": the plain generators take f32, f16 or bf16.\n";
    }
    return Float(32);
}

// An operand's value in the product: fp32 as it is, a 16-bit one converted (fp32 accumulation).
Expr factor(const Expr &e) {
    return e.type() == Float(32) ? e : cast(Float(32), e);
}

// What the three contractions' GeneratorParams gpu, limits and aligned ask of the autoscheduler
// and promise of their operands `a` and `b` and their output.
template<typename Input, typename Output>
void request_and_promise(Output &out, Input &a, Input &b, const std::string &gpu, const std::string &limits,
                         bool aligned) {
    alcop::autoscheduler::request_gpu(out, gpu);
    alcop::autoscheduler::request_limits(out, limits);
    if (aligned) {
        declare_aligned(a);
        declare_aligned(b);
        out.dim(0).set_min(0);
    }
}

class Gemm : public Generator<Gemm> {
public:
    GeneratorParam<int> M{"M", 128}, N{"N", 128}, K{"K", 128};  // the estimates
    // K fixed at compile time (A is then M x K exactly): the autoscheduler's one-branch case.
    GeneratorParam<bool> constant_k{"constant_k", false};
    // With type=f16 / bf16: K a runtime size, as with f32 (see the file comment).
    GeneratorParam<bool> runtime_k{"runtime_k", false};
    // Tuning: the autoscheduler's candidate to apply (0: the model's choice).
    GeneratorParam<int> candidate{"candidate", 0, 0, 1000};
    // The operands' type: f32, or f16 / bf16 (fp32 accumulation; K then constant, but with
    // runtime_k).
    GeneratorParam<std::string> type{"type", "f32"};
    // The GPU the autoscheduler models ("": the target's; see alcop/Autoscheduler.h).
    GeneratorParam<std::string> gpu{"gpu", ""};
    // The launch limits it assumes: "optin" where the app links apps/common/CudaOptIn ("": the
    // runtime's defaults; see alcop/Autoscheduler.h).
    GeneratorParam<std::string> limits{"limits", ""};
    // The operands meet cp.async's alignment (declare_aligned).
    GeneratorParam<bool> aligned{"aligned", false};
    // alcop::auto_pipeline on the schedule the autoscheduler applies (see the file comment).
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    GeneratorInput<Buffer<>> *A = nullptr, *B = nullptr;
    Output<Buffer<float>> out{"out", 2};

    void configure() {
        A = add_input<Buffer<>>("A", operand_type(type), 2);
        B = add_input<Buffer<>>("B", operand_type(type), 2);
    }

    void generate() {
        const bool fixed_k = constant_k || (operand_type(type) != Float(32) && !runtime_k);
        if (fixed_k) {
            A->dim(0).set_extent(K);
        }
        RDom r(0, fixed_k ? Expr((int)K) : A->dim(0).extent(), "r");
        Func prod("prod");
        prod(x, y) = 0.0f;
        prod(x, y) += factor((*A)(r, y)) * factor((*B)(x, r));
        out(x, y) = prod(x, y);
        if (candidate > 0) {
            alcop::autoscheduler::request_candidate(out, candidate);
        }
        request_and_promise(out, *A, *B, gpu, limits, aligned);

        A->set_estimates({{0, K}, {0, M}});
        B->set_estimates({{0, N}, {0, K}});
        out.set_estimates({{0, N}, {0, M}});
    }

    void schedule() {
        if (auto_pipeline) {
            alcop::auto_pipeline(get_pipeline(), get_target());
        }
    }

private:
    Var x{"x"}, y{"y"};
};

class GemmIntoOutput : public Generator<GemmIntoOutput> {
public:
    Input<Buffer<float>> A{"A", 2};
    Input<Buffer<float>> B{"B", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        RDom r(0, A.dim(0).extent(), "r");
        out(x, y) = 0.0f;
        out(x, y) += A(r, y) * B(x, r);

        const int M = 96, N = 64, K = 128;
        A.set_estimates({{0, K}, {0, M}});
        B.set_estimates({{0, N}, {0, K}});
        out.set_estimates({{0, N}, {0, M}});
    }

private:
    Var x{"x"}, y{"y"};
};

class GemmBias : public Generator<GemmBias> {
public:
    GeneratorParam<int> M{"M", 128}, N{"N", 128}, K{"K", 128};  // the estimates
    Input<Buffer<float>> A{"A", 2};
    Input<Buffer<float>> B{"B", 2};
    Input<Buffer<float>> bias{"bias", 1};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        RDom r(0, A.dim(0).extent(), "r");
        Func prod("prod");
        prod(x, y) = bias(x);
        prod(x, y) += A(r, y) * B(x, r);
        out(x, y) = prod(x, y);

        A.set_estimates({{0, K}, {0, M}});
        B.set_estimates({{0, N}, {0, K}});
        bias.set_estimates({{0, N}});
        out.set_estimates({{0, N}, {0, M}});
    }

private:
    Var x{"x"}, y{"y"};
};

/** A 64 x 64 x 64 GEMM whose output is an elementwise function of its product, `Self::epilogue(prod,
 * x, y)`, reading `Self::rows_below` rows of the product past the output's. */
template<typename Self>
class GemmEpilogue : public Generator<Self> {
public:
    GeneratorInput<Buffer<float>> A{"A", 2};
    GeneratorInput<Buffer<float>> B{"B", 2};
    GeneratorOutput<Buffer<float>> out{"out", 2};

    void generate() {
        RDom r(0, A.dim(0).extent(), "r");
        Func prod("prod");
        prod(x, y) = 0.0f;
        prod(x, y) += A(r, y) * B(x, r);
        out(x, y) = Self::epilogue(prod, x, y);

        A.set_estimates({{0, 64}, {0, 64 + Self::rows_below}});
        B.set_estimates({{0, 64}, {0, 64}});
        out.set_estimates({{0, 64}, {0, 64}});
    }

private:
    Var x{"x"}, y{"y"};
};

class GemmRelu : public GemmEpilogue<GemmRelu> {
public:
    static constexpr int rows_below = 0;
    static Expr epilogue(Func prod, const Var &x, const Var &y) {
        return max(prod(x, y), 0.0f);
    }
};

class GemmShifted : public GemmEpilogue<GemmShifted> {
public:
    static constexpr int rows_below = 1;
    static Expr epilogue(Func prod, const Var &x, const Var &y) {
        return prod(x, y + 1);
    }
};

class Bmm : public Generator<Bmm> {
public:
    GeneratorParam<int> batch{"batch", 3}, M{"M", 64}, N{"N", 64}, K{"K", 64};  // the estimates
    GeneratorParam<std::string> gpu{"gpu", ""}, limits{"limits", ""};           // as in as_gemm
    GeneratorParam<bool> aligned{"aligned", false};                             // as in as_gemm
    GeneratorParam<std::string> type{"type", "f32"};                            // as in as_gemm
    GeneratorParam<bool> runtime_k{"runtime_k", false};                         // as in as_gemm
    // alcop::auto_pipeline on the schedule the autoscheduler applies (see the file comment).
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    GeneratorInput<Buffer<>> *A = nullptr, *B = nullptr;
    Output<Buffer<float>> out{"out", 3};

    void configure() {
        A = add_input<Buffer<>>("A", operand_type(type), 3);
        B = add_input<Buffer<>>("B", operand_type(type), 3);
    }

    void generate() {
        if (operand_type(type) == Float(32)) {
            // An inline reduction: the autoscheduler finds the anonymous Func that sum() makes.
            RDom r(0, A->dim(0).extent(), "r");
            out(x, y, b) = sum((*A)(r, y, b) * (*B)(x, r, b));
        } else {
            if (!runtime_k) A->dim(0).set_extent(K);
            RDom r(0, runtime_k ? A->dim(0).extent() : Expr((int)K), "r");
            Func prod("prod");
            prod(x, y, b) = 0.0f;
            prod(x, y, b) += factor((*A)(r, y, b)) * factor((*B)(x, r, b));
            out(x, y, b) = prod(x, y, b);
        }
        request_and_promise(out, *A, *B, gpu, limits, aligned);

        A->set_estimates({{0, K}, {0, M}, {0, batch}});
        B->set_estimates({{0, N}, {0, K}, {0, batch}});
        out.set_estimates({{0, N}, {0, M}, {0, batch}});
    }

    void schedule() {
        if (auto_pipeline) {
            alcop::auto_pipeline(get_pipeline(), get_target());
        }
    }

private:
    Var x{"x"}, y{"y"}, b{"b"};
};

class Conv2d : public Generator<Conv2d> {
public:
    // The estimates (of the output; the 3 x 3 filter is fixed). The defaults, 8 x 8 outputs:
    // the model's 16-pixel M tile becomes 8 x 2 pixels (x and y both tiled).
    GeneratorParam<int> N{"N", 2}, H{"H", 8}, W{"W", 8}, CI{"CI", 32}, CO{"CO", 32};
    GeneratorParam<std::string> gpu{"gpu", ""}, limits{"limits", ""};  // as in as_gemm
    GeneratorParam<bool> aligned{"aligned", false};                    // as in as_gemm
    GeneratorParam<std::string> type{"type", "f32"};                   // as in as_gemm
    GeneratorParam<bool> runtime_k{"runtime_k", false};                // as in as_gemm, for CI
    // alcop::auto_pipeline on the schedule the autoscheduler applies (see the file comment).
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    GeneratorInput<Buffer<>> *input = nullptr;    // (ci, x, y, n)
    GeneratorInput<Buffer<>> *weights = nullptr;  // (co, ci, kx, ky)
    Output<Buffer<float>> out{"out", 4};          // (co, x, y, n)

    void configure() {
        input = add_input<Buffer<>>("input", operand_type(type), 4);
        weights = add_input<Buffer<>>("weights", operand_type(type), 4);
    }

    void generate() {
        const int KH = 3, KW = 3;
        RDom r;
        if (operand_type(type) == Float(32)) {
            r = RDom(0, input->dim(0).extent(), 0, weights->dim(2).extent(), 0, weights->dim(3).extent(), "r");
        } else {
            // The filter's extents at compile time, and CI too unless runtime_k.
            if (!runtime_k) input->dim(0).set_extent(CI);
            weights->dim(2).set_extent(KW);
            weights->dim(3).set_extent(KH);
            r = RDom(0, runtime_k ? input->dim(0).extent() : Expr((int)CI), 0, KW, 0, KH, "r");
        }
        Func conv("conv");
        conv(co, x, y, n) = 0.0f;
        conv(co, x, y, n) += factor((*input)(r.x, x + r.y, y + r.z, n)) * factor((*weights)(co, r.x, r.y, r.z));
        out(co, x, y, n) = conv(co, x, y, n);
        request_and_promise(out, *input, *weights, gpu, limits, aligned);

        input->set_estimates({{0, CI}, {0, W + KW - 1}, {0, H + KH - 1}, {0, N}});
        weights->set_estimates({{0, CO}, {0, CI}, {0, KW}, {0, KH}});
        out.set_estimates({{0, CO}, {0, W}, {0, H}, {0, N}});
    }

    void schedule() {
        if (auto_pipeline) {
            alcop::auto_pipeline(get_pipeline(), get_target());
        }
    }

private:
    Var co{"co"}, x{"x"}, y{"y"}, n{"n"};
};

/** Softmax over rows, written plainly (docs/autoscheduler.md, "Row reductions"). */
class Softmax : public Generator<Softmax> {
public:
    GeneratorParam<int> keys{"keys", 128}, rows{"rows", 512};  // the estimates
    // A third dimension of rows (attention's heads: in(x, y, h)) of this estimate; 0: none. And
    // with it a fourth (the batch: in(x, y, h, b)).
    GeneratorParam<int> heads{"heads", 0}, batch{"batch", 0};
    GeneratorParam<float> scale{"scale", 0.125f};
    // The input's and the output's type: f32, f16 or bf16 (the arithmetic is fp32; on CUDA the
    // pass the plugin installs converts bf16 in integer arithmetic, codegen/BFloat16Casts.h).
    GeneratorParam<std::string> type{"type", "f32"};
    // Inputs `mask` (fp32, mask(x, y / mask_rows) added to the scaled input) and `mask_rows`
    // (as the softmax generator's).
    GeneratorParam<bool> add_mask{"add_mask", false};

    GeneratorInput<Buffer<>> *in = nullptr;
    GeneratorInput<Buffer<float>> *mask = nullptr;
    GeneratorInput<int> *mask_rows = nullptr;
    GeneratorOutput<Buffer<>> *out = nullptr;

    void configure() {
        _halide_user_assert(batch == 0 || heads > 0)
            << "The as_softmax generator: batch=" << (int)batch << " needs heads > 0 (rows in(x, y, h, b)).\n";
        const int dims = 2 + (heads > 0) + (batch > 0);
        in = add_input<Buffer<>>("in", operand_type(type), dims);
        if (add_mask) {
            mask = add_input<Buffer<float>>("mask", 2);
            mask_rows = add_input<int>("mask_rows");
        }
        out = add_output<Buffer<>>("out", operand_type(type), dims);
    }

    void generate() {
        RDom r(0, in->dim(0).extent(), "r");
        std::vector<Var> row{y}, element{x, y};
        for (const auto &[estimate, v] : {std::pair<int, Var>{heads, h}, {batch, b}}) {
            if (estimate > 0) {
                row.push_back(v);
                element.push_back(v);
            }
        }
        auto at = [&](const Expr &along) {
            std::vector<Expr> args{along};
            args.insert(args.end(), row.begin(), row.end());
            return args;
        };
        Func v("v"), row_max("row_max"), e("e"), row_sum("row_sum");
        v(element) = cast<float>((*in)(element)) * scale + (mask ? (*mask)(x, y / max(Expr(*mask_rows), 1)) : 0.0f);
        row_max(row) = maximum(v(at(r)));
        e(element) = exp(v(element) - row_max(row));
        row_sum(row) = sum(e(at(r)));
        (*out)(element) = cast(operand_type(type), e(element) / row_sum(row));

        Region extents{{0, keys}, {0, rows}};
        if (heads > 0) extents.emplace_back(0, heads);
        if (batch > 0) extents.emplace_back(0, batch);
        in->set_estimates(extents);
        if (mask) {
            mask->set_estimates({{0, keys}, {0, rows}});
            mask_rows->set_estimate(1);
        }
        out->set_estimates(extents);
    }

private:
    Var x{"x"}, y{"y"}, h{"h"}, b{"b"};
};

/** Layernorm over rows, written plainly: (in - mean) / sqrt(variance + epsilon) * gamma + beta. */
class LayerNorm : public Generator<LayerNorm> {
public:
    GeneratorParam<int> features{"features", 768}, rows{"rows", 512};  // the estimates
    GeneratorParam<float> epsilon{"epsilon", 1e-12f};
    GeneratorParam<std::string> type{"type", "f32"};  // as Softmax's

    GeneratorInput<Buffer<>> *in = nullptr, *gamma = nullptr, *beta = nullptr;
    GeneratorOutput<Buffer<>> *out = nullptr;

    void configure() {
        in = add_input<Buffer<>>("in", operand_type(type), 2);
        gamma = add_input<Buffer<>>("gamma", operand_type(type), 1);
        beta = add_input<Buffer<>>("beta", operand_type(type), 1);
        out = add_output<Buffer<>>("out", operand_type(type), 2);
    }

    void generate() {
        RDom r(0, in->dim(0).extent(), "r");
        const Expr n = cast<float>(in->dim(0).extent());
        Func value("value"), mean("mean"), centred("centred"), variance("variance");
        value(x, y) = cast<float>((*in)(x, y));
        mean(y) = sum(value(r, y)) / n;
        centred(x, y) = value(x, y) - mean(y);
        variance(y) = sum(centred(r, y) * centred(r, y)) / n;
        const Expr scaled = centred(x, y) / sqrt(variance(y) + epsilon) * cast<float>((*gamma)(x));
        (*out)(x, y) = cast(operand_type(type), scaled + cast<float>((*beta)(x)));

        in->set_estimates({{0, features}, {0, rows}});
        gamma->set_estimates({{0, features}});
        beta->set_estimates({{0, features}});
        out->set_estimates({{0, features}, {0, rows}});
    }

private:
    Var x{"x"}, y{"y"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Gemm, as_gemm)
HALIDE_REGISTER_GENERATOR(GemmIntoOutput, as_gemm_into_output)
HALIDE_REGISTER_GENERATOR(GemmRelu, as_gemm_relu)
HALIDE_REGISTER_GENERATOR(GemmShifted, as_gemm_shifted)
HALIDE_REGISTER_GENERATOR(GemmBias, as_gemm_bias)
HALIDE_REGISTER_GENERATOR(Bmm, as_bmm)
HALIDE_REGISTER_GENERATOR(Conv2d, as_conv2d)
HALIDE_REGISTER_GENERATOR(Softmax, as_softmax)
HALIDE_REGISTER_GENERATOR(LayerNorm, as_layernorm)
