// The GEMM, batched matmul and conv2d generators with what only the tests may ask for:
// deliberately broken pipelines (`fault`, PipelineFaults.h; `tc_fault`, made on the pass's
// output before the tensor-core emulation, TensorCoreFaults.h), which prove that the numerical,
// IR, PTX and hazard checks bite, and the async-visibility emulation (`emulated_async=true`,
// EmulatedAsyncCopies.h).
// Everything else is the production generator's (generators/MatMulGenerator.h,
// Conv2dGenerator.h); these go in through the pass's internal test hook
// (src/directive/TestHooks.h), never through the public Options. One more, `register_limit`,
// is a public Option that the production generators derive from `limits` (limited() says why
// the tests set it). On an OpenCL target every
// testing generator emulates the tensor-core instructions (EmulatedTensorCores.h), so that
// pocl runs them; and testing_tc_gemm is the user's fp16/bf16 GEMM of the tensor-core tests
// (test/tensorcore/TensorCoreGemm.h) as a generator.

#include "Conv2dGenerator.h"
#include "MatMulGenerator.h"

#include "EmulatedAsyncCopies.h"
#include "EmulatedTensorCores.h"
#include "PipelineFaults.h"
#include "TensorCoreFaults.h"
#include "TensorCoreGemm.h"
#include "directive/TestHooks.h"

namespace {

using alcop::testing::Fault;

const std::map<std::string, Fault> fault_names{{"none", Fault::None},
                                               {"drop_barrier", Fault::DropBarrier},
                                               {"slot_off_by_one", Fault::SlotOffByOne},
                                               {"wait_one_group_short", Fault::WaitOneGroupShort},
                                               {"drop_wait", Fault::DropWait},
                                               {"missing_war_barrier", Fault::MissingWarBarrier},
                                               {"fragment_before_barrier", Fault::FragmentBeforeBarrier}};

using alcop::testing::TensorCoreFault;

const std::map<std::string, TensorCoreFault> tensor_core_fault_names{
    {"none", TensorCoreFault::None},
    {"lane_mapping", TensorCoreFault::LaneMapping},
    {"drop_trans", TensorCoreFault::DropTrans},
    {"unswizzled_rows", TensorCoreFault::UnswizzledRows},
    {"fragment_before_barrier", TensorCoreFault::FragmentBeforeBarrier}};

/** The hooks of every testing generator, in one place: the async-copy emulation on request,
 * on OpenCL the tensor-core emulation (which changes nothing in a kernel without tensor-core
 * markers or 16-bit floats) after the tensor-core fault if any, and the pipeline fault. */
alcop::testing::Hooks testing_hooks(const Halide::Target &target, Fault fault, bool emulated_async,
                                    TensorCoreFault tc_fault = TensorCoreFault::None) {
    alcop::testing::Hooks hooks;
    if (emulated_async) {
        alcop::testing::emulate_async_copies(hooks);
    }
    if (target.has_feature(Halide::Target::OpenCL)) {
        hooks.output = [tc_fault](const Halide::Internal::Stmt &s) {
            return alcop::testing::emulate_tensor_cores(alcop::testing::break_tensor_cores(s, tc_fault));
        };
        hooks.emulates_tensor_cores = true;
    }
    alcop::testing::add_fault(hooks, fault);
    return hooks;
}

/** `options` with the testing generators' `register_limit` (0: as they are). At 64, the
 * limit of Halide 14's CUDA runtime, a main loop of small warp tiles stays rolled
 * (model::expanded_chunks) where OpenCL's default of 255 expands it by its three to six slots:
 * pocl then compiles the kernel in minutes rather than seconds, which one variant of a test
 * pays and the rest need not. */
alcop::Options limited(alcop::Options options, int register_limit) {
    if (register_limit) options.register_limit = register_limit;
    return options;
}

template<bool Batched>
class TestingMatMul : public alcop_generators::MatMulGenerator<TestingMatMul<Batched>, Batched> {
    using Base = alcop_generators::MatMulGenerator<TestingMatMul<Batched>, Batched>;

public:
    template<typename T>
    using GeneratorParam = typename Base::template GeneratorParam<T>;

    GeneratorParam<Fault> fault{"fault", Fault::None, fault_names};
    // Copies with cp.async's semantics at their latest, on any GPU target.
    GeneratorParam<bool> emulated_async{"emulated_async", false};
    // A defect of the tensor-core rewrite (TensorCoreFaults.h), on OpenCL only.
    GeneratorParam<TensorCoreFault> tc_fault{"tc_fault", TensorCoreFault::None, tensor_core_fault_names};
    // alcop::Options::register_limit (0: the target's default), see limited().
    GeneratorParam<int> register_limit{"register_limit", 0, 0, 255};

    void enable_pipelines(const alcop::Options &options) {
        alcop::testing::enable(this->get_pipeline(), limited(options, register_limit),
                               testing_hooks(this->get_target(), fault, emulated_async, tc_fault));
    }
};

class TestingConv2d : public alcop_generators::Conv2dGenerator<TestingConv2d> {
public:
    GeneratorParam<Fault> fault{"fault", Fault::None, fault_names};
    GeneratorParam<bool> emulated_async{"emulated_async", false};
    // As TestingMatMul's.
    GeneratorParam<int> register_limit{"register_limit", 0, 0, 255};

    void enable_pipelines(const alcop::Options &options) {
        alcop::testing::enable(get_pipeline(), limited(options, register_limit),
                               testing_hooks(get_target(), fault, emulated_async));
    }
};

/** out(n, m) = sum_k A(k, m) B(n, k) on tensor cores: tc_test::Gemm with copies that read
 * zeros outside the inputs (any M, N and K; past K the pass's zero fill where k_tail), f16 or
 * bf16, A K- or M-major and B N- or K-major in shared memory, `stages` shared stages,
 * `register_stages` stages of the fragments, copies of `vector` elements. */
class TestingTensorCoreGemm : public Halide::Generator<TestingTensorCoreGemm> {
public:
    enum class Element { F16, BF16 };
    GeneratorParam<Element> type{"type", Element::F16, {{"f16", Element::F16}, {"bf16", Element::BF16}}};
    GeneratorParam<int> block_m{"block_m", 64, 16, 256};
    GeneratorParam<int> block_n{"block_n", 64, 16, 256};
    GeneratorParam<int> warp_m{"warp_m", 32, 16, 256};
    GeneratorParam<int> warp_n{"warp_n", 32, 16, 256};
    GeneratorParam<int> tile_k{"tile_k", 32, 16, 256};
    GeneratorParam<bool> a_m_major{"a_m_major", false};
    GeneratorParam<bool> b_k_major{"b_k_major", false};
    GeneratorParam<int> stages{"stages", 1, 1, 8};
    GeneratorParam<int> vector{"vector", 1, 1, 8};
    GeneratorParam<int> register_stages{"register_stages", 1, 1, 4};
    // tc_test::Gemm::k_tail: K split with a guarded last chunk, which the pass zero-fills.
    GeneratorParam<bool> k_tail{"k_tail", false};
    // tc_test::Gemm::unroll_copies: each round of copies its own store.
    GeneratorParam<bool> unroll_copies{"unroll_copies", false};
    // tc_test::Gemm::clamp_vectors: the vectors' index clamped too.
    GeneratorParam<bool> clamp_vectors{"clamp_vectors", false};
    GeneratorParam<Fault> fault{"fault", Fault::None, fault_names};
    GeneratorParam<bool> emulated_async{"emulated_async", false};
    // A defect of the tensor-core rewrite (TensorCoreFaults.h), on OpenCL only.
    GeneratorParam<TensorCoreFault> tc_fault{"tc_fault", TensorCoreFault::None, tensor_core_fault_names};

    Output<Halide::Buffer<float>> out{"out", 2};

    void configure() {
        A = add_input<Halide::Buffer<>>("A", element(), 2);
        B = add_input<Halide::Buffer<>>("B", element(), 2);
    }

    void generate() {
        tc_test::Gemm g;
        g.a_type = g.b_type = element();
        g.block_m = block_m, g.block_n = block_n, g.warp_m = warp_m, g.warp_n = warp_n, g.tile_k = tile_k;
        g.a_m_major = a_m_major, g.b_k_major = b_k_major, g.stages = stages, g.vector = vector;
        g.register_stages = register_stages;
        g.guarded = true;
        g.k_tail = k_tail;
        g.unroll_copies = unroll_copies;
        g.clamp_vectors = clamp_vectors;
        out = g.define(*A, *B);
    }

    void schedule() {
        alcop::Options options;
        options.target = get_target();
        alcop::testing::enable(get_pipeline(), options, testing_hooks(get_target(), fault, emulated_async, tc_fault));
    }

private:
    Input<Halide::Buffer<>> *A = nullptr, *B = nullptr;
    Halide::Type element() const {
        return type == Element::BF16 ? Halide::BFloat(16) : Halide::Float(16);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(TestingMatMul<false>, testing_gemm)
HALIDE_REGISTER_GENERATOR(TestingMatMul<true>, testing_bmm)
HALIDE_REGISTER_GENERATOR(TestingConv2d, testing_conv2d)
HALIDE_REGISTER_GENERATOR(TestingTensorCoreGemm, testing_tc_gemm)
