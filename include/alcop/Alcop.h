#ifndef ALCOP_ALCOP_H
#define ALCOP_ALCOP_H

/** \file
 * Halide-ALCOP's public interface, in one header: the directives (alcop::Func::pipeline,
 * alcop::pipeline, alcop::min_blocks_per_sm), the pass (alcop::enable and its Options), and
 * the requests a Generator makes to the Alcop autoscheduler (alcop::autoscheduler::request_*),
 * and fp32 to bf16 where the pass does not convert (alcop::round_to_bfloat16).
 * Link HalideAlcop::HalideAlcop; schedule with `AUTOSCHEDULER HalideAlcop::Alcop`.
 */

#include "alcop/Autoscheduler.h"
#include "alcop/BFloat16.h"
#include "alcop/Directive.h"
#include "alcop/Inspect.h"

#endif
