#ifndef ALCOP_BENCH_VARIANT_H
#define ALCOP_BENCH_VARIANT_H

// One row of the benchmark's table: a Halide variant or a library anchor, run, checked and
// timed the same way.

#include "HalideBuffer.h"

#include "model/CostModel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace bench {

// The Halide variants use the Operands' buffers through pointers: a copy of a Buffer keeps
// dirty bits of its own.
struct Variant {
    std::string name;
    int stages = 0;                         // shared stages; 0: not one of our hand schedules
    alcop::model::Schedule schedule;        // its tiles, for the model's prediction
    std::function<int()> run;               // one run, asynchronous
    std::function<void()> sync;             // waits for it
    std::function<void()> poison;           // NaN into the output, so that unwritten outputs count
    std::function<const float *()> result;  // the output, on the host
    bool broken = false;                    // a fault: correct when it is caught (wrong outputs)
    double predicted_us = NAN;              // an autoscheduled variant: what the plugin predicted
    bool ours = true;                       // false for the libraries and Li2018: a run they
                                            // cannot make (status) is theirs to report, not a failure
    bool modelled = true;                   // the model predicts its time from `schedule` (SIMT tiles)
    double output_rounding = 0;             // relative error of an output rounded to fp16 / bf16
};

/** The median of `runs` timed runs after a warm-up, each ended by a sync, in milliseconds. */
inline double median_ms(const Variant &v, int runs) {
    v.run();  // warm-up (compiles the kernel)
    v.sync();
    std::vector<double> ms;
    for (int i = 0; i < runs; i++) {
        const auto t0 = std::chrono::steady_clock::now();
        v.run();
        v.sync();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace bench

#endif
