#include "plan/Swizzle.h"

#include "Error.h"

#include <set>

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

/** Whether `e` is linear in the variable `x`: x reached only through sums, differences and
 * products whose other factor does not use it. Then e == e[x := 0] + x * (e[x := 1] - e[x := 0]). */
bool linear_in(const Expr &e, const std::string &x) {
    if (!Internal::expr_uses_var(e, x)) return true;
    if (const Internal::Variable *v = e.as<Internal::Variable>()) return v->name == x;
    if (const Internal::Add *a = e.as<Internal::Add>()) return linear_in(a->a, x) && linear_in(a->b, x);
    if (const Internal::Sub *s = e.as<Internal::Sub>()) return linear_in(s->a, x) && linear_in(s->b, x);
    if (const Internal::Mul *m = e.as<Internal::Mul>()) {
        const bool in_a = Internal::expr_uses_var(m->a, x), in_b = Internal::expr_uses_var(m->b, x);
        return !(in_a && in_b) && linear_in(in_a ? m->a : m->b, x);
    }
    return false;
}

/** The candidates for terms to pull out of an index: its variables, and its `x % c` (the slots
 * of a ring). */
std::vector<Expr> symbols_of(const Expr &e) {
    struct Find : Internal::IRVisitor {
        std::vector<Expr> found;
        std::set<std::string> vars;
        using IRVisitor::visit;
        void visit(const Internal::Variable *v) override {
            if (vars.insert(v->name).second) found.push_back(v);
        }
        void visit(const Internal::Mod *m) override {
            if (Internal::is_const(m->b)) found.push_back(m);
            IRVisitor::visit(m);
        }
    } find;
    e.accept(&find);
    return find.found;
}

/** `index` as inner + outer, where outer collects the terms of index that are multiples of
 * `period` elements: a symbol's (see symbols_of) term where index is linear in it with a
 * coefficient the period divides, and the period's multiples in its constant. A slot's base,
 * a warp's rows and the k steps of a row-major tile's rows are such terms. */
std::pair<Expr, Expr> split_at_period(Expr index, int64_t period) {
    const Type t = index.type();
    Expr outer = Internal::make_zero(t);
    const std::string x = Internal::unique_name("alcop_term");
    const Expr var = Internal::Variable::make(t, x);
    for (const Expr &symbol : symbols_of(index)) {
        if (symbol.type() != t) continue;
        const Expr f = Internal::substitute(symbol, var, index);
        if (!Internal::expr_uses_var(f, x) || !linear_in(f, x)) continue;
        const Expr f0 = Internal::simplify(Internal::substitute(x, Internal::make_zero(t), f));
        const Expr d = Internal::simplify(Internal::substitute(x, Internal::make_one(t), f) - f0);
        const int64_t *c = Internal::as_const_int(d);
        if (!c || *c % period != 0 || Internal::expr_uses_var(f0, x)) continue;
        index = f0;
        outer = outer + symbol * d;
    }
    index = Internal::simplify(index);
    if (const Internal::Add *a = index.as<Internal::Add>()) {
        if (const int64_t *k = Internal::as_const_int(a->b)) {
            const int64_t low = ((*k % period) + period) % period;
            if (*k != low) {
                index = a->a + make_const(t, low);
                outer = outer + make_const(t, *k - low);
            }
        }
    }
    return {Internal::simplify(index), Internal::simplify(outer)};
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
    s.period_terms_outside = false;
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
    // Adding a multiple of the map's period leaves every flip and the low bits the flip lands
    // on as they were, so such terms are added after the map rather than sent through it: what
    // stays inside is, for a slot's reads and writes, the thread's own offset, which the
    // compiler computes once before the loop, and the slot's base and the constant offsets
    // become one add (or an immediate).
    Type t = index.type();
    const auto [inner, outer] = period_terms_outside ? split_at_period(index, period_bytes() / element_bytes)
                                                     : std::make_pair(index, Internal::make_zero(t));
    Expr row = inner / make_const(t, row_bytes / element_bytes);
    Expr mapped = element_in_row(row, inner, element_bytes);
    return Internal::is_const_zero(outer) ? mapped : mapped + outer;
}

int64_t Swizzle::address(int64_t index, int element_bytes) const {
    if (is_identity()) {
        return index;
    }
    return element_in_row(index / (row_bytes / element_bytes), index, element_bytes);
}

}  // namespace alcop
