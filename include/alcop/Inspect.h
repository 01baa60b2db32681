#ifndef ALCOP_INSPECT_H
#define ALCOP_INSPECT_H

/** \file
 * What the ALCOP pass made of a pipeline, read without a GPU: the report alcop_inspect prints,
 * for any pipeline a user lowers with the pass.
 */

#include "Halide.h"

#include <functional>
#include <string>
#include <vector>

namespace alcop {

struct InspectOptions {
    /** Also print the Stmt before and after the pass. */
    bool print_stmt = false;
    /** Where not empty: write the module's PTX (CUDA targets) to <ptx_dir>/<name>.ptx. */
    std::string ptx_dir;
    /** Also list each shared access with bank conflicts (each kernel's total is always given). */
    bool list_conflicting_accesses = false;
    /** Also count each CUDA kernel's main loop in its SASS for sm_80 and sm_90: assembled by the
     * ptxas beside nvdisasm (PATH, then /usr/local/cuda/bin) and disassembled by it; where there
     * is none, the report says so. */
    bool sass = false;
};

/** Runs `compile`, which lowers a pipeline the pass is installed on (alcop::enable or
 * alcop::auto_pipeline; e.g. a Generator's build_module, or Pipeline::compile_to_module), and
 * reports as text, headed by `name` and `target`:
 *  - the requests the pass saw, and alcop::auto_pipeline's choice for each candidate and why;
 *  - the pipelined loop before and after the pass: stages, slots, copies by kind (cp.async,
 *    staged through registers, synchronous), guards, barriers;
 *  - each kernel's shared-memory bank conflicts, counted from its index math for warp 0;
 *  - for CUDA, each kernel's main loop counted in its PTX (what it issues per mma.sync or fma,
 *    docs/mainloop.md), and its registers and spills as ptxas -v gives them for sm_80 and
 *    sm_90 where ptxas is found (PATH, then /usr/local/cuda/bin), else why they are missing.
 * The pass's warnings go to stderr as usual. Throws what `compile` throws. */
std::string inspect(const std::string &name, const Halide::Target &target,
                    const std::function<Halide::Module()> &compile, const InspectOptions &options = {});

/** The same for a Pipeline, compiled with `args` for `target`. */
std::string inspect(Halide::Pipeline p, const std::vector<Halide::Argument> &args, const Halide::Target &target,
                    const InspectOptions &options = {});

/** The main loops of any PTX (a peer's kernel, nvcc's output) and their registers, as above;
 * with `sass`, in its SASS too (InspectOptions::sass). */
std::string inspect_ptx(const std::string &ptx, bool sass = false);

/** The PTX modules a compiled file holds, in its order: an object, library or executable with
 * Halide's CUDA kernels, which keep each module's PTX as NUL-terminated text (LLVM's NVPTX
 * output). nvcc's fatbins are not read. */
std::vector<std::string> embedded_ptx(const std::string &bytes);

/** Writes `ptx` to <dir>/<file>, making the folder where it is not there, and returns the
 * report's line for it: "PTX written to <path>", or "PTX not written: cannot write <path>". */
std::string write_ptx(const std::string &dir, const std::string &file, const std::string &ptx);

/** The main loops of a SASS listing (`nvdisasm` or `cuobjdump -sass` of a cubin), counted as
 * the PTX's are under SASS's names (HMMA, LDSM, LDGSTS, ...: docs/mainloop.md). */
std::string inspect_sass(const std::string &listing);

}  // namespace alcop

#endif
