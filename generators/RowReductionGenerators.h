#ifndef ALCOP_GENERATORS_ROW_REDUCTION_GENERATORS_H
#define ALCOP_GENERATORS_ROW_REDUCTION_GENERATORS_H

// The row reductions of a transformer layer, scheduled as a CUDA programmer writes them: one warp
// per row, each lane reading the row's elements lane, lane + 32, ... (coalesced), its partial
// statistics combined across the warp by a butterfly of warp shuffles (Halide's gpu_lanes; on
// OpenCL the same schedule goes through shared memory), then each lane writing its elements.
//
//   softmax:   out(x, y) = exp(v(x, y) - max_x v) / sum_x exp(v(x, y) - max_x v),
//              v(x, y) = scale * in(x, y) [+ mask(x, y / mask_rows)]   (mask_rows an input)
//   layernorm: out(x, y) = (in(x, y) - mean_y) / sqrt(var_y + epsilon) * gamma(x) + beta(x)
//
// x is the reduced dimension (the keys of attention scores, the hidden features), y every row.
// softmax's statistics take one pass (the online maximum and rescaled sum: each lane keeps
// both, the butterfly combines pairs); layernorm's take two (the mean, then the centred sum of
// squares, which does not cancel as sum x^2 - n mean^2 does in fp32). The output pass reads
// the row again (from L1 / L2: a row of 512 fp16 values is 1 KB). Inputs and outputs are f32,
// f16 or bf16 (`type`, `out_type`); the arithmetic is fp32. With `aligned=true` a lane moves
// its row in 16-byte vectors, element (32 s + lane) 16/size + e, where the row allows.

#include "Halide.h"

#include "ContractionSchedule.h"

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace alcop_generators {

/** What the row reductions share: the element types, rows per block and the warp schedule. */
template<typename Self>
class RowReductionGenerator : public Halide::Generator<Self> {
public:
    // The input's and the output's element types (f32, f16, bf16).
    Halide::GeneratorParam<Operands> type{"type", Operands::F32, operand_type_names()};
    Halide::GeneratorParam<Operands> out_type{"out_type", Operands::F32, operand_type_names()};
    // Rows per block: one warp each.
    Halide::GeneratorParam<int> rows_per_block{"rows_per_block", 4, 1, 32};
    // The buffers promise 16-byte vectors (host alignment 16, rows from element 0, row strides a
    // whole number of vectors; Halide::Runtime::Buffer allocations of such rows are): a lane
    // then reads and writes 16 bytes of its row at a time (8 halves or 4 floats, in PTX vectors
    // of 8 bytes, the widest Halide 14 proves aligned in a kernel's buffer), where the row is a
    // whole number of the warp's vectors (a specialization); element by element in the
    // others. Without it, element by element everywhere.
    Halide::GeneratorParam<bool> aligned{"aligned", false};

protected:
    static constexpr int warp = 32;
    Halide::Var x{"x"}, y{"y"}, lane{"lane"};

    using Values = std::vector<Halide::Expr>;

    /** Elements a lane reads or writes at once: 16 bytes of the input with `aligned`, else 1. */
    int vector_elements() const {
        return aligned ? 16 / element_type(type).bytes() : 1;
    }

    /** With `aligned`, promises what a 16-byte vector needs of `b`. */
    template<typename Buffer>
    void promise_aligned(Buffer &b) const {
        if (aligned) promise_vectors(b, 16 / b.type().bytes());
    }

    /** A row of n elements is a whole number of the warp's vectors: every lane's every read and
     * write is a whole vector inside the row (out is specialized on it). */
    Halide::Expr whole_row(const Halide::Expr &n) const {
        return n % (warp * vector_elements()) == 0;
    }

    /** One lane's reads of its row of `f` (a Func of (x, y), n elements a row): lane l reads
     * elements l, l + 32, ... (one at a time: `at` over the RDom `r`, its `value`, and whether
     * it is `inside` the row; past it, the row's last element). With vectors of V > 1 elements
     * (`aligned`), in steps of the warp's vectors: lane l reads elements (32 s + l) V + e, e < V,
     * `loads(e, lane, s, y)` holding a step's vector (one vector load where the row is whole,
     * load_per_step; clamped elements where not), r = (e, s). */
    struct LaneReads {
        Halide::RDom r;
        Halide::Func loads;  ///< undefined without vectors
        Halide::Expr at, value, inside;
    };
    LaneReads lane_reads(Halide::Func f, const Halide::Expr &n, const std::string &name) const {
        using namespace Halide;
        const int v = vector_elements();
        LaneReads l;
        if (v == 1) {
            l.r = RDom(0, (n + warp - 1) / warp, name + "_r");
            l.at = l.r * warp + lane;
            l.value = f(min(l.at, n - 1), y);
            l.inside = l.at < n;
            return l;
        }
        Var e("e"), s("s");
        l.r = RDom(0, v, 0, (n + warp * v - 1) / (warp * v), name + "_r");
        Expr first = (s * warp + lane) * v + e;
        // Where the row is whole every element is inside: said so, so that a step's index is a
        // dense vector (the specialization folds the select); elsewhere clamped.
        Expr index = select(whole_row(n), unsafe_promise_clamped(first, 0, n - 1), min(first, n - 1));
        l.loads = Func(name + "_loads");
        l.loads(e, lane, s, y) = f(index, y);
        l.at = (l.r.y * warp + lane) * v + l.r.x;
        l.value = l.loads(l.r.x, lane, l.r.y, y);
        l.inside = whole_row(n) || l.at < n;
        return l;
    }

    /** With vectors, each step's vector of `reads` loaded at `partial`'s update step loop,
     * vectorized, and the step's elements unrolled. */
    void load_per_step(const LaneReads &reads, Halide::Func partial) {
        if (!reads.loads.defined()) return;
        Halide::Func loads = reads.loads;
        loads.compute_at(partial, reads.r.y).vectorize(loads.args()[0]);
        partial.update().unroll(reads.r.x);
    }

    /** The values of f (one or a Tuple's) at (l, row). */
    static Values values(Halide::Func f, const Halide::Expr &l, const Halide::Expr &row) {
        if (f.outputs() == 1) return {f(l, row)};
        Values v;
        for (int i = 0; i < f.outputs(); i++) {
            v.push_back(f(l, row)[i]);
        }
        return v;
    }

    /** The statistics of a row, `partial` per lane (a Func of (lane, y): lane l's, over the
     * row's elements l, l + 32, ...), combined across the warp by log2(32) butterfly steps (lane
     * l with lane l ^ w, w = 16 .. 1), so that every lane ends with the row's: `combine` is
     * commutative, so both lanes of a pair compute the same bits. The clamp, a no-op, bounds the
     * partner for Halide's bounds inference; each step is then one shfl.sync.idx per value.
     * Appends the partial and the steps to `per_row`; returns the last step. */
    Halide::Func butterfly(Halide::Func partial, const std::function<Values(const Values &, const Values &)> &combine,
                           std::vector<Halide::Func> &per_row) {
        Halide::Func last = partial;
        per_row.push_back(partial);
        for (int w = warp / 2; w >= 1; w /= 2) {
            Halide::Func step(partial.name() + "_" + std::to_string(w));
            const Values combined =
                combine(values(last, lane, y), values(last, Halide::clamp(lane ^ w, 0, warp - 1), y));
            if (combined.size() == 1) {
                step(lane, y) = combined[0];
            } else {
                step(lane, y) = Halide::Tuple(combined);
            }
            per_row.push_back(step);
            last = step;
        }
        return last;
    }

    /** out over blocks of rows_per_block rows, a warp per row, each lane writing its elements
     * lane, lane + 32, ... (with vectors, where the row of n elements is whole: its vectors);
     * every Func of `per_row` (the partials and butterfly steps) computed per row by the row's
     * 32 lanes (their update too). */
    void schedule_rows(Halide::Func out, const std::vector<Halide::Func> &per_row, const Halide::Expr &n) {
        using namespace Halide;
        Var yo("yo"), yi("yi"), xo("xo"), xi("xi"), xv("xv"), xe("xe");
        const bool cuda = this->get_target().has_feature(Target::CUDA);
        out.split(y, yo, yi, rows_per_block, TailStrategy::GuardWithIf);
        // Each lane's elements of its row: one at a time, x = 32 xo + lane, or, where the row
        // is whole (vectors), whole vectors, x = (32 xo + lane) V + e (the elements of a vector
        // left scalar in the other branch, whose tails would be masked stores).
        auto lanes = [&](Stage s, bool vectors) {
            if (vectors) {
                // (The branch's rows are whole vectors: rounding up adds nothing, and leaves no
                // masked tail, which OpenCL's backend cannot emit.)
                s.split(x, xv, xe, vector_elements(), TailStrategy::RoundUp)
                    .vectorize(xe)
                    .split(xv, xo, xi, warp, TailStrategy::GuardWithIf)
                    .reorder(xe, xo, xi, yi, yo);
            } else {
                s.split(x, xo, xi, warp, TailStrategy::GuardWithIf).reorder(xo, xi, yi, yo);
            }
            s.gpu_blocks(yo);
            if (cuda) {
                s.gpu_threads(yi).gpu_lanes(xi);
            } else {
                s.gpu_threads(xi, yi);
            }
        };
        if (vector_elements() > 1) lanes(out.specialize(whole_row(n)), true);
        lanes(out, false);
        if (cuda) {
            // A row's statistics live in its warp's registers, exchanged by warp shuffles.
            for (Func f : per_row) {
                f.compute_at(out, yi).gpu_lanes(lane);
                for (int u = 0; u < f.num_update_definitions(); u++) {
                    f.update(u).gpu_lanes(lane);
                }
            }
        } else {
            // Other GPU APIs have no gpu_lanes: the statistics go through shared memory, a
            // barrier between butterfly steps.
            for (Func f : per_row) {
                f.compute_at(out, yo).gpu_threads(lane, y);
                for (int u = 0; u < f.num_update_definitions(); u++) {
                    f.update(u).gpu_threads(lane, y);
                }
            }
        }
    }

    /** The lane that writes element x of a row (schedule_rows), whose registers hold the row's
     * statistics (every lane's do, after the butterfly: reading one's own needs no shuffle). */
    Halide::Expr lane_of(const Halide::Expr &x, const Halide::Expr &n) const {
        const int v = vector_elements();
        return v > 1 ? select(whole_row(n), (x / v) % warp, x % warp) : x % warp;
    }

    /** `v` (fp32) as out_type, after checking both element types against the target. */
    Halide::Expr narrowed(const std::string &generator, const Halide::Expr &v) const {
        check_opencl_element_type(generator, this->get_target(), "type", type);
        check_opencl_element_type(generator, this->get_target(), "out_type", out_type);
        return to_element_type(out_type, v);
    }
};

/** softmax over x of scale * in(x, y) (+ mask(x, y / mask_rows) with add_mask). */
class SoftmaxGenerator : public RowReductionGenerator<SoftmaxGenerator> {
public:
    Halide::GeneratorParam<float> scale{"scale", 1.0f};
    // Inputs `mask` (fp32: 0 or a large negative value per element) and `mask_rows`: one mask
    // row for mask_rows consecutive rows of `in` (attention: one per sequence, for its heads x
    // queries rows).
    Halide::GeneratorParam<bool> add_mask{"add_mask", false};

    Halide::GeneratorInput<Halide::Buffer<>> in{"in", 2};  // typed by `type` (configure())
    Halide::GeneratorOutput<Halide::Buffer<>> out{"out", 2};
    Halide::GeneratorInput<Halide::Buffer<>> *mask = nullptr;
    Halide::GeneratorInput<int> *mask_rows = nullptr;

    void configure() {
        in.set_type(element_type(type));
        out.set_type(element_type(out_type));
        if (add_mask) {
            mask = add_input<Halide::Buffer<>>("mask", Halide::Float(32), 2);
            mask_rows = add_input<int>("mask_rows");
        }
    }

    void generate() {
        using namespace Halide;
        const Expr n = in.dim(0).extent();
        Func v("v");
        v(x, y) = to_float32(in(x, y)) * scale + (mask ? (*mask)(x, y / max(Expr(*mask_rows), 1)) : Expr(0.0f));

        // Each lane's running maximum m and sum s of exp(v - m) over its elements.
        const float lowest = std::numeric_limits<float>::lowest();
        const LaneReads reads = lane_reads(v, n, "softmax");
        Func partial("softmax_partial");
        partial(lane, y) = Tuple(lowest, 0.0f);
        Expr m = partial(lane, y)[0], s = partial(lane, y)[1];
        Expr value = reads.value, inside = reads.inside;
        Expr m_new = select(inside, max(m, value), m);
        partial(lane, y) = Tuple(m_new, select(inside, s * exp(m - m_new) + exp(value - m_new), s));

        std::vector<Func> steps;
        Func row = butterfly(
            partial,
            [](const Values &a, const Values &b) {
                Expr top = max(a[0], b[0]);
                return Values{top, a[1] * exp(a[0] - top) + b[1] * exp(b[0] - top)};
            },
            steps);
        Expr row_max = row(lane_of(x, n), y)[0], row_sum = row(lane_of(x, n), y)[1];
        out(x, y) = narrowed("softmax", exp(v(x, y) - row_max) / row_sum);

        out.dim(0).set_min(0);
        promise_aligned(in);
        promise_aligned(out);
        if (mask) promise_aligned(*mask);
        schedule_rows(out, steps, n);
        load_per_step(reads, partial);
    }
};

/** layernorm over x: (in - mean) / sqrt(var + epsilon) * gamma(x) + beta(x). */
class LayerNormGenerator : public RowReductionGenerator<LayerNormGenerator> {
public:
    Halide::GeneratorParam<float> epsilon{"epsilon", 1e-12f};  // BERT's

    Halide::GeneratorInput<Halide::Buffer<>> in{"in", 2};  // typed by `type`
    Halide::GeneratorInput<Halide::Buffer<>> gamma{"gamma", 1};
    Halide::GeneratorInput<Halide::Buffer<>> beta{"beta", 1};
    Halide::GeneratorOutput<Halide::Buffer<>> out{"out", 2};

    void configure() {
        for (Halide::GeneratorInput<Halide::Buffer<>> *i : {&in, &gamma, &beta}) {
            i->set_type(element_type(type));
        }
        out.set_type(element_type(out_type));
    }

    void generate() {
        using namespace Halide;
        const Expr n = in.dim(0).extent();
        Func value("value");
        value(x, y) = to_float32(in(x, y));
        const LaneReads sums = lane_reads(value, n, "sum"), squares = lane_reads(value, n, "squares");
        auto add = [](const Values &a, const Values &b) { return Values{a[0] + b[0]}; };

        // The mean, then the centred sum of squares.
        Func sum_partial("sum_partial"), squares_partial("squares_partial");
        sum_partial(lane, y) = 0.0f;
        sum_partial(lane, y) += select(sums.inside, sums.value, 0.0f);
        std::vector<Func> steps;
        Func row_sum = butterfly(sum_partial, add, steps);
        Expr mean = row_sum(lane, y) / cast<float>(n);
        Expr centred = squares.value - mean;
        squares_partial(lane, y) = 0.0f;
        squares_partial(lane, y) += select(squares.inside, centred * centred, 0.0f);
        Func row_squares = butterfly(squares_partial, add, steps);

        Expr row_mean = row_sum(lane_of(x, n), y) / cast<float>(n);
        Expr rstd = 1.0f / sqrt(row_squares(lane_of(x, n), y) / cast<float>(n) + epsilon);
        out(x, y) = narrowed("layernorm", (value(x, y) - row_mean) * rstd * to_float32(gamma(x)) + to_float32(beta(x)));

        out.dim(0).set_min(0);
        for (Halide::GeneratorInput<Halide::Buffer<>> *b : {&in, &gamma, &beta}) promise_aligned(*b);
        promise_aligned(out);
        schedule_rows(out, steps, n);
        load_per_step(sums, sum_partial);
        load_per_step(squares, squares_partial);
    }
};

}  // namespace alcop_generators

#endif
