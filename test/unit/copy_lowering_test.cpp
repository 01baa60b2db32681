// copy/CopyLowering.h: a 16-byte gather clamped into its input, in a copy whose zero fill keeps
// only lanes inside the clamp, becomes one cp.async of the dense vector with a src-size that
// stops where the kept lanes end. Checked by what it means: at sampled values of every variable,
// each lane of the cp.async (its address, and whether src-size reads it) gives what the gather
// gave, the clamped element or zero.

#include "codegen/AsyncCopyMarkers.h"
#include "copy/CopyLowering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

namespace {

using namespace Halide;
using namespace Halide::Internal;

const int lanes = 8;                          // fp16: 16 bytes
const Expr g = Variable::make(Int(32), "g");  // the first lane's k, a multiple of 8 (below)
const Expr k_extent = Variable::make(Int(32), "K");
const Expr row = Variable::make(Int(32), "row");  // the row's offset, a multiple of 8 (known)
const Expr t = Variable::make(Int(32), "t");      // the first lane's k in the tile
const Expr trips = Variable::make(Int(32), "trips");

/** A[clamp(ramp(g, 1, 8), 0, K - 1) + row], zeroed where `kept` is false, into the tile. */
Stmt clamped_copy(const Expr &kept) {
    Parameter a(Float(16), true, 2, "A");
    a.set_host_alignment(16);
    const Expr k = Ramp::make(g, 1, lanes);
    const Expr index =
        max(min(k, Broadcast::make(k_extent - 1, lanes)), Broadcast::make(0, lanes)) + Broadcast::make(row, lanes);
    const Expr gather = Load::make(Float(16, lanes), "A", index, Buffer<>(), a, const_true(lanes), ModulusRemainder());
    const Expr value = select(kept, gather, Broadcast::make(make_zero(Float(16)), lanes));
    const Stmt store =
        Store::make("tile", value, Ramp::make(t, 1, lanes), Parameter(), const_true(lanes), ModulusRemainder(8, 0));
    return ProducerConsumer::make_produce("A_tile", store);
}

/** The zero fill of rewrite/ZeroFilledTails.h: k in the tile before the step count, and the
 * clamp's facts, ramp(g, 1, 8) < (K - 1) + 1 and 0 <= g. */
Expr zero_fill(const Expr &upper, const Expr &lower) {
    Expr kept = Ramp::make(t, 1, lanes) < Broadcast::make(trips, lanes);
    if (upper.defined()) kept = kept && Ramp::make(g, 1, lanes) < Broadcast::make(upper, lanes);
    if (lower.defined()) kept = kept && Broadcast::make(lower <= g, lanes);
    return kept;
}

/** The cp.async marker the lowering made of `copy`, or null. */
const Call *lowered_marker(const Stmt &copy, Stmt *holder) {
    std::set<std::string> unaligned;
    // The row's offset a multiple of 8 elements (a stride constraint, GlobalAlignment.h), and g.
    const alcop::KnownAlignments known{{"row", ModulusRemainder(8, 0)}, {"g", ModulusRemainder(8, 0)}};
    auto lowering = alcop::make_copy_lowering(alcop::CopyKind::Async, &unaligned, known);
    *holder = lowering->issue(copy, const_true(), true).before_compute;
    struct Find : IRVisitor {
        const Call *marker = nullptr;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if (op->name.rfind(alcop::async_copy_prefix, 0) == 0) marker = op;
            IRVisitor::visit(op);
        }
    } find;
    holder->accept(&find);
    return find.marker;
}

int64_t value_at(const Expr &e, const std::map<std::string, Expr> &at) {
    const Expr v = simplify(substitute(at, e));
    const int64_t *c = as_const_int(v);
    EXPECT_NE(c, nullptr) << e << " at the sample is " << v;
    return c ? *c : 0;
}

/** Whether every lane of the cp.async `marker` gives what the gather under `zero_fill(upper,
 * lower)` gives, at every sample (each wrong lane a failure); the count of samples whose
 * src-size cut the vector in `partial`. */
void expect_lanes_as_the_gather(const Call *marker, const Expr &upper, const Expr &lower, int *partial) {
    // The source: the dense vector from g + row, moved as 4 x 32-bit words.
    const Call *bits = marker->args[0].as<Call>();
    const Load *words = bits && bits->is_intrinsic(Call::reinterpret) ? bits->args[0].as<Load>() : nullptr;
    ASSERT_NE(words, nullptr) << marker->args[0];
    const Ramp *word_ramp = words->index.as<Ramp>();
    ASSERT_TRUE(word_ramp && is_const_one(word_ramp->stride)) << words->index;
    for (int gv = -2; gv <= 6; gv++) {
        for (int k : {1, 5, 8, 13, 16, 21, 40}) {
            for (int tv : {0, 8, 16, 24}) {
                for (int n : {0, 3, 8, 12, 17, 32}) {
                    const std::map<std::string, Expr> at{{"g", gv * 8}, {"K", k}, {"row", 64}, {"t", tv}, {"trips", n}};
                    const int64_t first = value_at(word_ramp->base, at) * 2, src_bytes = value_at(marker->args[1], at);
                    ASSERT_TRUE(src_bytes >= 0 && src_bytes <= 16 && src_bytes % 2 == 0) << src_bytes;
                    *partial += src_bytes > 0 && src_bytes < 16;
                    for (int i = 0; i < lanes; i++) {
                        // The gather: kept lanes read their clamped element, the others zero.
                        const int64_t kv = gv * 8 + i;
                        const bool kept = tv + i < n && (!upper.defined() || kv < value_at(upper, at)) &&
                                          (!lower.defined() || value_at(lower, at) <= gv * 8);
                        const int64_t clamped = std::min<int64_t>(std::max<int64_t>(kv, 0), k - 1) + 64;
                        const bool read = i * 2 < src_bytes;
                        if (read != kept || (read && first + i != clamped)) {
                            ADD_FAILURE()
                                << "lane " << i << " at g " << gv * 8 << ", K " << k << ", t " << tv << ", trips " << n
                                << ": the gather gives " << (kept ? "A[" + std::to_string(clamped) + "]" : "0")
                                << ", the cp.async " << (read ? "A[" + std::to_string(first + i) + "]" : "0");
                            return;
                        }
                    }
                }
            }
        }
    }
}

TEST(CopyLowering, ClampedGatherKeptInsideItsClampIsOneCpAsync) {
    Stmt holder;
    const Expr upper = k_extent - 1 + 1, lower = 0;
    const Call *marker = lowered_marker(clamped_copy(zero_fill(upper, lower)), &holder);
    ASSERT_NE(marker, nullptr) << holder;
    int partial = 0;
    expect_lanes_as_the_gather(marker, upper, lower, &partial);
    EXPECT_GT(partial, 0) << "no sample cut a vector";
    std::printf("%d samples with a partial src-size: each lane as the gather\n", partial);
}

// Conditions that leave some kept lane outside the clamp: the gather stays a gather (no
// cp.async; staged through registers), whatever else it holds. (A lowering that made one a
// cp.async anyway would read past the clamp: its lanes are checked too.)
TEST(CopyLowering, ClampedGatherNotBoundedByItsZeroFillStaysAGather) {
    const Expr none;
    for (const auto &[upper, lower, why] :
         {std::make_tuple(none, Expr(0), "no bound above"), std::make_tuple(k_extent + 1, Expr(0), "a bound past K"),
          std::make_tuple(k_extent, none, "no bound below"), std::make_tuple(k_extent, Expr(-1), "a bound below 0")}) {
        SCOPED_TRACE(why);
        Stmt holder;
        const Call *marker = lowered_marker(clamped_copy(zero_fill(upper, lower)), &holder);
        EXPECT_EQ(marker, nullptr) << holder;
        int partial = 0;
        if (marker) expect_lanes_as_the_gather(marker, upper, lower, &partial);
    }
}

}  // namespace
