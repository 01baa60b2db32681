#ifndef ALCOP_AUTOSCHEDULER_OPTIONS_H
#define ALCOP_AUTOSCHEDULER_OPTIONS_H

/** \file
 * What the Alcop autoscheduler is asked: its Options (defaults, overridden by the environment
 * of the process), the requests recorded on a pipeline's outputs (Requests.h), which override
 * those, and the GPU a target is modelled as.
 *
 * Assumes: nothing about the pipeline beyond its outputs' trace tags.
 * Guarantees: a GPU name or limit that neither the model nor the directive knows is a user
 * error that names what is known; nothing here changes the pipeline.
 */

#include "Halide.h"
#include "model/GpuSpec.h"
#include "model/Search.h"

#include <iosfwd>
#include <optional>
#include <vector>

namespace alcop {
namespace autoscheduler {

struct Options {
    /** The GPU the model predicts for; null: chosen from the target (gpu_for_target). */
    const model::GpuSpec *gpu = nullptr;
    /** Print the top candidates with their predicted times. */
    bool verbose = false;
    size_t top = 10;
    model::SearchOptions search;
    /** Where the summary (always) and the verbose table go. */
    std::ostream *log = nullptr;  // null: std::cerr
    /** Tuning: which of the candidates the schedule can express to apply, in the order of
     * preference (see AlcopAutoscheduler.h); 0 is the model's choice. request_candidate() on an
     * output overrides it. */
    size_t candidate = 0;

    /** The defaults, overridden by the environment:
     *  ALCOP_AUTOSCHEDULER_VERBOSE=1  print the top candidates (ALCOP_AUTOSCHEDULER_TOP=n of them)
     *  ALCOP_AUTOSCHEDULER_GPU=A100   the GPU the model predicts for (see model::find_gpu)
     *  ALCOP_AUTOSCHEDULER_LIMITS=optin the launch limits of an app linking apps/common/CudaOptIn
     *                                 (shared memory up to the GPU's maximum, 255 registers)
     *                                 instead of Halide's runtime defaults (48 KiB, 64 registers)
     *  ALCOP_AUTOSCHEDULER_CANDIDATE=n apply the n-th candidate instead of the model's choice */
    static Options from_environment();
};

/** The GPU a target is modelled as: its CUDA capability's GPU (sm_70 V100, sm_80 A100,
 * sm_86 RTX 3090, sm_89 RTX 4090, sm_90 H200), otherwise model::default_gpu(). */
const model::GpuSpec &gpu_for_target(const Halide::Target &target);

/** What one call of autoschedule() works with: the options with the requests recorded on the
 * pipeline's outputs applied over them. */
struct Settings {
    const model::GpuSpec *gpu = nullptr;
    model::SearchOptions search;
    size_t candidate = 0;  ///< not yet clamped to the number of candidates
};

Settings settings_for(const std::vector<Halide::Internal::Function> &outputs, const Halide::Target &target,
                      const Options &options);

/** Where the summary and the verbose table go. */
std::ostream &log_stream(const Options &options);

}  // namespace autoscheduler
}  // namespace alcop

#endif
