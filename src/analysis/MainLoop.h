#ifndef ALCOP_MAIN_LOOP_H
#define ALCOP_MAIN_LOOP_H

/** \file
 * The main-loop report: the steady-state loop of each kernel of a PTX module, found in the
 * control-flow graph and counted per iteration, so that the instructions a pipeline spends
 * around its math can be read (and held to a budget) without a GPU.
 *
 * The loop of a kernel is the strongly connected component of its basic blocks that holds the
 * most mma.sync (tensor-core kernels) or, where none does, the most fp32 fma (SIMT kernels): the
 * work. Its instructions are counted for one iteration: each block's as it stands, times the
 * trips of the inner loops that hold it (a copy loop the pass left rolled, as the
 * autoscheduler's edge kernels had), where an inner loop's trips are a constant that the PTX
 * shows (LLVM's counted form: a counter set by mov of a constant, perhaps through other
 * registers, stepped by a constant add and tested against a constant by the one branch that
 * leaves the loop). An inner loop of any other form, or of more than 65536 runs a block, and
 * every inner loop of a SASS listing, counts once, and the report says how many did. The basic
 * blocks and conditional branches are counted as they stand: they describe the code's shape.
 *
 * The categories (docs/mainloop.md gives the same definitions, so that a peer's PTX can be
 * counted the same way):
 *  - work: `mma.sync` (or, where the loop holds none, `fma.rn.f32`);
 *  - data movement: `ldmatrix`, `cp.async` (by its copy size), shared loads and stores, global
 *    loads;
 *  - synchronization: `cp.async.commit_group`, `cp.async.wait_group` / `wait_all`,
 *    `bar.sync` / `barrier.sync`;
 *  - retyping moves: a `mov.b16/b32/b64` from a register of another register class (`%f` from
 *    `%r`), which renames bits and costs no instruction in SASS;
 *  - other: every remaining instruction (integer and address arithmetic, predicates, branches,
 *    conversions, moves).
 * The overhead per work instruction is every instruction but the work and the retyping moves,
 * divided by the work: what a warp scheduler must issue beside each mma.sync (or fma).
 * The longest stretch is the most instructions (of any category but the retyping moves) between
 * two work instructions in the loop's textual order, each block repeated by its runs, wrapping
 * around the back edge: how long the tensor or FMA pipe can starve within one warp. (An fp16
 * mma.sync takes its operands in `%hh` registers where a bf16 one takes `%r`: the same loop
 * spells 32 more moves in fp16, none in SASS.)
 *
 * The same report reads SASS, the machine code ptxas makes of the PTX (main_loops_sass(), on a
 * listing by nvdisasm or cuobjdump -sass), under its names: HMMA (mma.sync) or FFMA, LDSM
 * (ldmatrix), LDGSTS (cp.async, sized by its suffix in bits), LDGDEPBAR (commit), DEPBAR (wait),
 * LDS / STS / LDG, BAR; SASS registers have no types, so it has no retyping moves. Uniform
 * datapath instructions (UIADD3, ...) take issue slots as the others do and count as other.
 *
 * It reads text and changes nothing; it knows PTX as LLVM 14's NVPTX backend and nvcc print it,
 * and SASS as nvdisasm and cuobjdump (CUDA 11.8 to 13) print it.
 */

#include <map>
#include <string>
#include <vector>

namespace alcop {

struct MainLoopReport {
    std::string kernel;                ///< the .entry name
    bool found = false;                ///< a loop holds work
    bool tensor_cores = false;         ///< the work is mma.sync (else fp32 fma)
    bool sass = false;                 ///< counted in a SASS listing, not in PTX
    int blocks = 0;                    ///< basic blocks in the loop
    int conditional_branches = 0;      ///< predicated bra in the loop
    int instructions = 0;              ///< all instructions of one iteration
    int work = 0;                      ///< mma.sync, or fp32 fma
    int ldmatrix = 0;
    std::map<int, int> cp_async;       ///< copy bytes -> count
    int shared_loads = 0, shared_stores = 0, global_loads = 0;
    int barriers = 0, commits = 0, waits = 0;
    int retyping_moves = 0;
    int other = 0;
    int longest_stretch = 0;           ///< most issued instructions between two work instructions
    /** The trips of each inner loop whose instructions are counted by them (PTX: a loop LLVM
     * left counted by a constant), in the order found. */
    std::vector<int> inner_loop_trips;
    int inner_loops_counted_once = 0;  ///< inner loops of no constant trip count (or in SASS)
    /** Where the other instructions come from, by opcode (its first word), most first. */
    std::vector<std::pair<std::string, int>> other_by_opcode;

    /** Every instruction of an iteration but the work and the retyping moves, per work
     * instruction: the figure a main loop's budget bounds ("non-tensor instructions per
     * mma.sync"; CUTLASS's sm80 GEMM at 128x128x32, warp 64x64, 3 stages: 1.78). */
    double overhead_per_work() const {
        return work ? (double)(instructions - work - retyping_moves) / work : 0.0;
    }
    int cp_async_total() const;
};

/** The main loop of every .entry of `ptx`, in the module's order; a kernel without a loop
 * holding work is reported with found = false. */
std::vector<MainLoopReport> main_loops(const std::string &ptx);

/** The main loop of every kernel of a SASS listing (nvdisasm's, or cuobjdump -sass's), in its
 * order, counted as above under SASS's names. */
std::vector<MainLoopReport> main_loops_sass(const std::string &listing);

/** The counts of one iteration, the other instructions by opcode, the overhead per work
 * instruction, the blocks and the longest stretch, in the listing's names. */
std::string describe_iteration(const MainLoopReport &r);

/** One line per kernel: "main loop of <kernel>: " and describe_iteration(). */
std::string to_string(const MainLoopReport &r);

}  // namespace alcop

#endif
