#ifndef ALCOP_SWIZZLE_H
#define ALCOP_SWIZZLE_H

/** \file
 * The swizzled layout of a shared-memory tile: one replaceable piece beside the slot layout
 * (PipelinePlan.h), shared by the writers (cp.async into the slot) and the readers (ldmatrix,
 * or fp32 fragments), since the map is its own inverse. Two rules, one map.
 *
 * Tensor-core operands (for_rows):
 * A tile is row-major with rows of `row_bytes`; a "row" is the M or N index of an operand
 * whose contiguous dimension is K (or the K index of one read with ldmatrix.trans). Its bytes
 * are grouped in 16-byte chunks, c = byte / 16. The 8 row addresses of one ldmatrix phase
 * (8 consecutive rows, one chunk each), and 8 lanes of 16-byte copies down a column, must
 * fall in the 8 distinct 16-byte bank groups of a 128-byte window. The rule is the XOR one
 * that CUTLASS, Triton, TVM and CuTe share:
 *  - rows of 128 bytes or a multiple of it: c' = c ^ (row % 8) on the low 3 bits of c, i.e.
 *    within each 128-byte segment of the row;
 *  - 64-byte rows (two rows per 128-byte window): c' = c ^ ((row >> 1) % 4);
 *  - 32-byte rows (four rows per window): c' = c ^ ((row >> 2) % 2);
 *  - any other width (rows under 32 bytes, widths not 32, 64 or a multiple of 128): the
 *    identity. Such rows either leave no room to permute (16 bytes) or would need a map that
 *    crosses the row end; the bank-conflict checker (analysis/BankConflicts.h) reports what
 *    they cost.
 *
 * fp32 fragments (for_windows): a thread's fragment of TN floats read as 16-byte vectors puts
 * the lanes of one 8-lane phase 2^b chunks apart (TN = 8: b = 1), so 8 lanes span 2^b
 * windows of 128 bytes and share 8 / 2^b bank groups. Treating each 128-byte window as a
 * "row" of the rule above, c' = c ^ (window % 2^b) on the low b chunk bits, sends the lanes
 * of each window to distinct bank groups, and leaves a dense phase (8 consecutive chunks of
 * one window: the copies, TN = 4 fragments) and broadcasts conflict-free, since it permutes
 * the chunks of every window. Which b, if any, is measured on the kernel's real accesses
 * (rewrite/SwizzleOperands.h).
 *
 * Guarantees: for a fixed row the map permutes the row's chunks and is an involution
 * (swizzling twice is the identity), so the tile's bytes are a bijection of themselves; the
 * byte within its chunk is unchanged, so 16-byte alignment is kept (2-, 4- and 8-byte ones
 * too); a swizzled byte stays in its row. Slots hold whole tiles, so a slot base that is a
 * multiple of 128 bytes (rows of 32 and 64 bytes: 8 x 128 / row_bytes rows of period) keeps
 * the rule conflict-free; a 1024-byte aligned slot is always enough.
 */

#include "Halide.h"

#include <cstdint>
#include <string>

namespace alcop {

/** The bytes after which every rule repeats (8 rows of 128 bytes): slots that start on a
 * multiple of it and span whole periods all get the same swizzled layout (PipelinePlan.h). */
constexpr int64_t swizzle_period = 1024;

/** The XOR swizzle of the 16-byte chunks of one tile's rows. */
struct Swizzle {
    int64_t row_bytes = 0;
    int chunk_bits = 0;  ///< how many low bits of the chunk index are flipped: 3, 2, 1, or 0 (identity)
    int row_shift = 0;   ///< the flip is (row >> row_shift) masked to chunk_bits bits
    /** address() adds an index's multiples of the period after the map (see there). Off for
     * the fp32 windows: there the offsets it hoists out of the loop cost more registers than
     * the arithmetic they save (128x128x32 8x8-thread tiles spilled under two blocks per SM). */
    bool period_terms_outside = true;

    static constexpr int64_t chunk_bytes = 16;

    /** The rule for rows of `row_bytes` bytes (see the file comment). */
    static Swizzle for_rows(int64_t row_bytes);

    /** The rule for fragments whose lanes are 2^flip_bits chunks apart (flip_bits <= 3): the
     * chunks of 128-byte window w flipped by w % 2^flip_bits. */
    static Swizzle for_windows(int flip_bits);

    bool is_identity() const {
        return chunk_bits == 0;
    }
    /** The bytes after which the map repeats: a row's flip depends on (row >> row_shift) modulo
     * 2^chunk_bits, so it repeats every row_bytes << (chunk_bits + row_shift) bytes (1024 for
     * rows of 128 bytes, 2048 for 256, 512 for 64, 256 for 32). Adding a multiple of it to an
     * address commutes with the map. */
    int64_t period_bytes() const {
        return row_bytes << (chunk_bits + row_shift);
    }

    /** The chunk bits XORed into the chunks of `row`. */
    int64_t flip(int64_t row) const;

    /** Where byte `byte` (0 <= byte < row_bytes) of row `row` lives, as a byte offset in the row. */
    int64_t byte_in_row(int64_t row, int64_t byte) const;

    /** Where element `column` (elements of `element_bytes`, a power of two up to 16) of row
     * `row` lives, as an element offset in the row. */
    int64_t element_in_row(int64_t row, int64_t column, int element_bytes) const;

    /** The same maps as Halide expressions (Int(32) or any integer type of `row`), for the
     * rewrite to index the slots with. Constant operands fold to constants. */
    Halide::Expr byte_in_row(const Halide::Expr &row, const Halide::Expr &byte) const;
    Halide::Expr element_in_row(const Halide::Expr &row, const Halide::Expr &column, int element_bytes) const;

    /** Where element `index` of a shared allocation (elements of `element_bytes`) lives when
     * the tile holding it is swizzled: the row is index * element_bytes / row_bytes, counted
     * from byte 0 of the allocation, and the flip lands on the chunk bits of the address
     * itself. This is the one map that the writers and the readers of a swizzled tile both
     * call (rewrite/SwizzleOperands.h), so they cannot disagree. Counting rows from the
     * allocation instead of the tile changes which flip a row gets, not the guarantees: the
     * map permutes the chunks of every 128-byte aligned window, and 8 consecutive rows still
     * get 8 (64-byte rows: 4 windows, 32-byte rows: 2) distinct flips. It stays inside the
     * tile only when the tile covers whole 128-byte windows, which the caller checks.
     * Scalar or vector `index`; a vector is mapped lane by lane. */
    Halide::Expr address(const Halide::Expr &index, int element_bytes) const;
    int64_t address(int64_t index, int element_bytes) const;
};

/** A buffer whose shared tile is swizzled in one kernel: what the plan records beside the
 * slot layout. Bytes [begin, end) of the kernel's merged shared allocation `allocation` are
 * whole 128-byte windows. */
struct SwizzledBuffer {
    std::string func;
    std::string allocation;
    int64_t row_bytes = 0;
    int64_t begin = 0, end = 0;
    Swizzle swizzle;
};

}  // namespace alcop

#endif
