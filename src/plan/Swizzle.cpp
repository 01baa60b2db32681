#include "plan/Swizzle.h"

#include "Error.h"

namespace alcop {

using namespace Halide;
using Halide::Internal::make_const;

namespace {

// log2 of how many elements share a 16-byte chunk: the shift that turns a chunk flip into an
// element flip.
int elements_per_chunk_log2(int element_bytes) {
    switch (element_bytes) {
    case 1:
        return 4;
    case 2:
        return 3;
    case 4:
        return 2;
    case 8:
        return 1;
    case 16:
        return 0;
    default:
        internal_assert(false) << "Swizzle: element size " << element_bytes
                               << " is not a power of two up to 16 bytes\n";
        return 0;
    }
}

}  // namespace

Swizzle Swizzle::for_rows(int64_t row_bytes) {
    Swizzle s;
    s.row_bytes = row_bytes;
    if (row_bytes > 0 && row_bytes % 128 == 0) {
        s.chunk_bits = 3;  // 8 chunks per 128-byte segment, 1 row per window: all 3 bits from the row
        s.row_shift = 0;
    } else if (row_bytes == 64) {
        s.chunk_bits = 2;  // 4 chunks per row, 2 rows per window: the row's bit 0 already differs
        s.row_shift = 1;
    } else if (row_bytes == 32) {
        s.chunk_bits = 1;  // 2 chunks per row, 4 rows per window: bits 0, 1 already differ
        s.row_shift = 2;
    }
    return s;
}

Swizzle Swizzle::for_windows(int flip_bits) {
    internal_assert(flip_bits >= 0 && flip_bits <= 3) << "Swizzle: " << flip_bits << " chunk bits\n";
    Swizzle s;
    s.row_bytes = 128;
    s.chunk_bits = flip_bits;
    s.row_shift = 0;
    return s;
}

int64_t Swizzle::flip(int64_t row) const {
    return (row >> row_shift) & ((int64_t(1) << chunk_bits) - 1);
}

int64_t Swizzle::byte_in_row(int64_t row, int64_t byte) const {
    return byte ^ (flip(row) * chunk_bytes);
}

int64_t Swizzle::element_in_row(int64_t row, int64_t column, int element_bytes) const {
    return column ^ (flip(row) << elements_per_chunk_log2(element_bytes));
}

Expr Swizzle::byte_in_row(const Expr &row, const Expr &byte) const {
    return element_in_row(row, byte, 1);
}

Expr Swizzle::element_in_row(const Expr &row, const Expr &column, int element_bytes) const {
    const int shift = elements_per_chunk_log2(element_bytes);
    if (is_identity()) {
        return column;
    }
    Type t = column.type();
    Expr r = cast(t, row);
    Expr flip = (r >> make_const(t, row_shift)) & make_const(t, (int64_t(1) << chunk_bits) - 1);
    return Internal::simplify(column ^ (flip << make_const(t, shift)));
}

Expr Swizzle::address(const Expr &index, int element_bytes) const {
    if (is_identity()) {
        return index;
    }
    // The row of an element: index / (row_bytes / element_bytes). Rows are whole chunks, so
    // that is an exact number of elements.
    internal_assert(row_bytes % element_bytes == 0);
    Type t = index.type();
    Expr row = index / make_const(t, row_bytes / element_bytes);
    return element_in_row(row, index, element_bytes);
}

int64_t Swizzle::address(int64_t index, int element_bytes) const {
    if (is_identity()) {
        return index;
    }
    return element_in_row(index / (row_bytes / element_bytes), index, element_bytes);
}

}  // namespace alcop
