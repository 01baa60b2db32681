#ifndef ALCOP_BANK_CONFLICTS_H
#define ALCOP_BANK_CONFLICTS_H

/** \file
 * Counts shared-memory bank conflicts of warp-wide accesses from their real index math: the
 * address expression is evaluated for every lane of a warp (thread variables replaced by the
 * lane's values, simplified to constants), and the lanes' addresses are checked against the
 * banks. It changes nothing; the swizzle tests, the rewrite's checks and the inspect tool's
 * "bank conflicts: N" line per kernel use it.
 *
 * The bank model (sm_80 and newer; 32 banks of 4 bytes, so 128 bytes per wavefront): a warp's
 * access is served in phases of 128 / max(access_bytes, 4) lanes, lanes 0.. first: 32 lanes for
 * accesses of up to 4 bytes, 16 for 8-byte ones, 8 for 16-byte ones (ld.shared.v4,
 * st.shared.v4, 16-byte cp.async; and ldmatrix, whose lanes 8i..8i+7 give the 16-byte rows of
 * matrix i). Within a phase each lane touches one naturally aligned unit of max(access_bytes,
 * 4) bytes; units in the same 128-byte window position (the same banks) but at different
 * addresses need one wavefront each, equal addresses are broadcast. A phase costs the largest
 * number of distinct units that share banks; conflicts = wavefronts - phases.
 */

#include "Halide.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace alcop {

constexpr int warp_lanes = 32;

/** The cost of one warp-wide shared-memory access. */
struct BankConflicts {
    int phases = 0;      ///< phases with at least one active lane
    int wavefronts = 0;  ///< passes through the banks; == phases when conflict-free
    int conflicts() const {
        return wavefronts - phases;
    }
};

/** Byte address of each lane's access; nullopt for a lane that does not take part. */
using LaneAddresses = std::vector<std::optional<int64_t>>;

/** The cost of an access of `access_bytes` (1, 2, 4, 8 or 16) per lane at `lanes` (up to 32
 * entries, lane 0 first). Addresses are assumed naturally aligned. */
BankConflicts count_bank_conflicts(const LaneAddresses &lanes, int access_bytes);

/** One gpu_thread dimension of a block: its loop variable and extent. */
struct ThreadDim {
    std::string var;
    int64_t extent = 1;
};

/** The byte address of every lane of warp `warp`: `address` with the thread variables replaced
 * by the lane's thread ids and the variables in `fixed` by their values, simplified. `threads`
 * lists the block's dimensions innermost (x) first; thread ids are linear in x fastest, and
 * lane l of warp w is the thread of linear id 32 w + l (a lane past the block's threads is
 * inactive). nullopt when some lane's address does not fold to a constant. */
std::optional<LaneAddresses> lane_addresses(const Halide::Expr &address, const std::vector<ThreadDim> &threads,
                                            const std::map<std::string, Halide::Expr> &fixed = {}, int warp = 0);

/** One shared-memory access of a kernel whose address depends on the thread ids. */
struct SharedAccess {
    std::string buffer;
    bool is_store = false;
    bool is_ldmatrix = false;   ///< the row address of an ldmatrix marker (TensorCoreMarkers.h)
    int access_bytes = 0;       ///< per lane
    Halide::Expr byte_address;  ///< lets inlined, in the thread (and other loop) variables
    BankConflicts cost;         ///< of warp 0
    LaneAddresses lanes;        ///< warp 0's byte addresses, from which `cost` is counted
};

/** The accesses of one kernel (a gpu_block loop nest) and their costs. */
struct KernelBankConflicts {
    std::string kernel;  ///< the outermost gpu_block loop's name
    std::vector<SharedAccess> accesses;
    /** Accesses that depend on the thread ids but could not be evaluated: an address that does
     * not fold to constants, a non-dense vector index, a size the model does not cover. */
    int unanalyzed = 0;
    int conflicts() const;
};

/** Walks `s` (a lowered Stmt) and, for each kernel, the loads and stores of GPUShared
 * allocations and the ldmatrix markers whose index depends on the gpu_thread variables.
 * Assumes the innermost gpu_thread loop is the x dimension and the loops start at 0 (as
 * Halide lowers them). Each access is evaluated for warp 0 at the first iteration of the
 * other loops around it (block loops and serial loops at their minimum); an if around the
 * access narrows the active lanes as far as KernelContext can bound it. A 16-byte or smaller
 * dense vector (Ramp of stride 1) is one access; ldmatrix markers count once per row
 * address (their call j = 0), as 16-byte accesses. */
std::vector<KernelBankConflicts> find_bank_conflicts(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
