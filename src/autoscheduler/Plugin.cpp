// libautoschedule_alcop.so: registers the Alcop autoscheduler (AlcopAutoscheduler.h) with
// Halide when the library is loaded, like Halide's own autoscheduler plugins:
//   generator -p libautoschedule_alcop.so -s Alcop auto_schedule=true ...
//   Halide::load_plugin("libautoschedule_alcop.so"); pipeline.auto_schedule("Alcop", target);
// Options come from the environment (AlcopAutoscheduler.h, Options::from_environment).

#include "autoscheduler/AlcopAutoscheduler.h"

namespace {

struct RegisterAlcop {
    RegisterAlcop() {
        Halide::Pipeline::add_autoscheduler("Alcop", [](const Halide::Pipeline &p, const Halide::Target &target,
                                                        const Halide::MachineParams &params,
                                                        Halide::AutoSchedulerResults *results) {
            alcop::autoscheduler::Result r =
                alcop::autoscheduler::autoschedule(p, target, alcop::autoscheduler::Options::from_environment());
            results->scheduler_name = "Alcop";
            results->target = target;
            results->machine_params_string = params.to_string();
            results->schedule_source = r.schedule_source;
        });
    }
} register_alcop;

}  // namespace
