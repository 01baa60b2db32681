#ifndef ALCOP_PIPELINE_HAZARDS_H
#define ALCOP_PIPELINE_HAZARDS_H

/** \file
 * A static check of the synchronization of the lowered kernels: read-after-write and
 * write-after-read hazards on shared memory, found by running one block of each GPU kernel
 * with concrete sizes, thread by thread, on the addresses alone (no data).
 *
 * Every thread of block 0 walks the kernel's statements with its own thread indices: serial
 * loops run their concrete trip counts, ifs take the branch their condition gives, and each
 * access to a shared allocation is recorded with the bytes it touches (its index evaluated),
 * the barriers the thread has passed (its phase) and its place in the thread's order. A copy is
 * a store into shared memory; it is asynchronous when its value is a cp.async marker
 * (codegen/AsyncCopyMarkers.h), and then lands at the wait that retires its commit group (or
 * at the end of the kernel), else where it is stored. A write is published by the first
 * barrier after it lands. So, for a write into some bytes and a read of them:
 *  - by another thread: the read is a hazard when it comes in a phase from the write's issue to
 *    its landing, both included (the two are not ordered by any barrier);
 *  - by the writing thread: when it comes after the issue and before the landing.
 * A hazard whose read precedes the write in the phase of the write's issue (by the place in
 * the threads' order, the same code for every thread) is a write-after-read (a copy into a
 * slot still being read: the barrier before it is missing); any other a read-after-write (a
 * read of a slot whose copy is not waited for, or not published by a barrier).
 *
 * A serial loop longer than 12 trips runs its first 12 (a pipeline's steady state repeats
 * with the period of its stages: auto_pipeline's are at most 8, and a deeper explicit one is
 * checked over its first 12 trips only; the tails are checked at the small sizes), and then
 * goes on after the loop as if it had ended there.
 *
 * Sizes: every free variable named `<buffer>.min.<d>`, `.extent.<d>` or `.stride.<d>` (the
 * shapes of the pipeline's buffers) takes the value of a dense buffer, unless `values` names
 * it: mins 0, extents as hazard_check_extent() says (or `values`), strides their products.
 * Other free variables only from `values`. A condition or loop bound that cannot be evaluated
 * makes that kernel unchecked, with the reason.
 */

#include "Halide.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace alcop {

struct PipelineHazard {
    enum class Kind { ReadAfterWrite, WriteAfterRead };
    Kind kind = Kind::ReadAfterWrite;
    std::string func;                                     ///< the Func whose copy wrote the bytes (its `produce` node)
    std::string buffer;                                   ///< the shared allocation
    int64_t byte = 0;                                     ///< the first byte of the buffer both touch
    int reader = 0, writer = 0;                           ///< linear thread ids in the block
    std::string read_at, write_at;                        ///< the serial loops' values there, e.g. "k=3"
    int read_phase = 0, write_phase = 0, land_phase = 0;  ///< barriers passed

    std::string to_string() const;
};

struct KernelHazards {
    std::string kernel;    ///< the outermost gpu_block loop's name
    int64_t extent = 0;    ///< the buffers' extent it ran with (dimensions 0 and 1)
    bool checked = false;  ///< false: `reason` says what could not be evaluated
    std::string reason;
    int64_t threads = 0, reads = 0, writes = 0;
    int truncated_loops = 0;  ///< serial loops cut to their first 12 trips
    /** Run with the sizes the specializations fix or round up (find_pipeline_hazards_at). */
    bool specialized = false;
    /** Distinct hazards: one per kind, Func and pair of places (read_at, write_at). */
    std::vector<PipelineHazard> hazards;
};

/** Runs block 0 of every GPU kernel of `s` (a lowered Stmt, e.g. the pass's output) for buffers
 * of `extent` (see above), and reports its hazards. */
std::vector<KernelHazards> find_pipeline_hazards(const Halide::Internal::Stmt &s, int64_t extent,
                                                 const std::map<std::string, int64_t> &values = {});

/** What the pipeline's specializations say of its sizes outside its kernels, in the
 * conjuncts of an if's condition there: a variable equal to a constant (`A.extent.0 == 2048`;
 * the first constant) or a multiple of one (`A.extent.0 % 32 == 0`, the Alcop autoscheduler's
 * branch of a runtime K on tensor cores; the least common multiple). */
struct SpecializedSizes {
    std::map<std::string, int64_t> values;
    std::map<std::string, int64_t> multiples;

    bool empty() const {
        return values.empty() && multiples.empty();
    }
    /** The `values` of a run at `extent` that reaches the kernels those branches launch: the
     * constants, and each multiple's size at that extent (hazard_check_extent for a buffer's
     * `.extent.<d>`, else `extent`) rounded up to a multiple. */
    std::map<std::string, int64_t> at(int64_t extent) const;
    /** "A.extent.0 = 2048, out.extent.0 rounded up to a multiple of 8". */
    std::string to_string() const;
};

SpecializedSizes specialized_sizes(const Halide::Internal::Stmt &s);

/** find_pipeline_hazards at each of `extents`, and again with fixed.at(extent) where `fixed`
 * (specialized_sizes(s)) has any (those runs marked `specialized`): so every kernel a
 * specialization launches runs at one size at least. */
std::vector<KernelHazards> find_pipeline_hazards_at(const Halide::Internal::Stmt &s,
                                                    const std::vector<int64_t> &extents, const SpecializedSizes &fixed);
inline std::vector<KernelHazards> find_pipeline_hazards_at(const Halide::Internal::Stmt &s,
                                                           const std::vector<int64_t> &extents) {
    return find_pipeline_hazards_at(s, extents, specialized_sizes(s));
}

/** A multiple of every tile up to 128: at a multiple of it every kernel's tiles are whole. */
constexpr int64_t whole_tile_extent = 128;
/** The extent of the dimensions past the first two at other extents (hazard_check_extent). */
constexpr int64_t other_dimensions_extent = 3;

/** The extent of dimension `dim` of each buffer in a run at `extent`: `extent` in dimensions 0
 * and 1 (a matrix's, a tensor's channels and columns), other_dimensions_extent in the others
 * (batches, rows of images, filter taps: a convolution's reduction stays a few tiles long),
 * except at a multiple of whole_tile_extent, which every dimension gets, so that the branch of
 * a specialization on whole tiles runs where a convolution's pixel tiles span several rows. */
int64_t hazard_check_extent(int64_t extent, int dim);

/** The extents the report checks each kernel at: a tail in every dimension with several K tiles,
 * fewer K tiles than stages, one partial tile, and whole tiles (whole_tile_extent). */
const std::vector<int64_t> &hazard_check_extents();

}  // namespace alcop

#endif
