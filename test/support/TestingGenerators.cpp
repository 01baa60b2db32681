// The GEMM and batched matmul generators with what only the tests may ask for: deliberately
// broken pipelines (`fault`), which prove that the numerical, IR and PTX checks bite, and the
// async-visibility emulation (`emulated_async=true`, EmulatedAsyncCopies.h). Everything else
// is the production generator's (generators/MatMulGenerator.h); these go in through the pass's
// internal test hook (src/directive/TestHooks.h), never through the public Options.

#include "MatMulGenerator.h"

#include "EmulatedAsyncCopies.h"
#include "directive/TestHooks.h"

namespace {

using alcop::testing::Fault;

template<bool Batched>
class TestingMatMul : public alcop_generators::MatMulGenerator<TestingMatMul<Batched>, Batched> {
    using Base = alcop_generators::MatMulGenerator<TestingMatMul<Batched>, Batched>;

public:
    template<typename T>
    using GeneratorParam = typename Base::template GeneratorParam<T>;

    GeneratorParam<Fault> fault{"fault",
                                Fault::None,
                                {{"none", Fault::None},
                                 {"drop_barrier", Fault::DropBarrier},
                                 {"slot_off_by_one", Fault::SlotOffByOne},
                                 {"wait_one_group_short", Fault::WaitOneGroupShort},
                                 {"drop_wait", Fault::DropWait},
                                 {"missing_war_barrier", Fault::MissingWarBarrier},
                                 {"fragment_before_barrier", Fault::FragmentBeforeBarrier}}};
    // Copies with cp.async's semantics at their latest, on any GPU target.
    GeneratorParam<bool> emulated_async{"emulated_async", false};

    void enable_pipelines(const alcop::Options &options) {
        alcop::testing::Hooks hooks;
        hooks.fault = fault;
        if (emulated_async) {
            hooks.copies = alcop::testing::make_emulated_async_copies;
        }
        alcop::testing::enable(this->get_pipeline(), options, hooks);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(TestingMatMul<false>, testing_gemm)
HALIDE_REGISTER_GENERATOR(TestingMatMul<true>, testing_bmm)
