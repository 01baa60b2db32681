// libautoschedule_alcop.so: registers the Alcop autoscheduler (AlcopAutoscheduler.h) with
// Halide when the library is loaded, like Halide's own autoscheduler plugins:
//   generator -p libautoschedule_alcop.so -s Alcop auto_schedule=true ...
//   Halide::load_plugin("libautoschedule_alcop.so"); pipeline.auto_schedule("Alcop", target);
// Options come from the environment (AlcopAutoscheduler.h, Options::from_environment).

#include "autoscheduler/AlcopAutoscheduler.h"

namespace {

struct RegisterAlcop {
    RegisterAlcop() {
        alcop::autoscheduler::register_with_halide();
    }
} register_alcop;

}  // namespace
