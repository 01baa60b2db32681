#ifndef ALCOP_TEST_AUTOSCHEDULER_UNSCHEDULED_H
#define ALCOP_TEST_AUTOSCHEDULER_UNSCHEDULED_H

// A plain generator's pipeline without a schedule, onto which a schedule source the Alcop
// plugin wrote (a .schedule.h) can be pasted.

#include "Halide.h"

#include <string>

/** A fresh copy of the generator's pipeline for `target` with `params`, unscheduled (built
 * once, with Halide's default schedule, which is what makes the generator hand its Pipeline
 * out). */
inline Halide::Pipeline unscheduled(const std::string &generator, const Halide::Target &target,
                                    const Halide::Internal::GeneratorParamsMap &params) {
    auto gen = Halide::Internal::GeneratorRegistry::create(generator, Halide::GeneratorContext(target));
    gen->set_generator_param_values(params);
    gen->build_module(generator);
    return gen->get_pipeline();
}

#endif
