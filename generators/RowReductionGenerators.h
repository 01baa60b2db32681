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
// f16 or bf16 (`type`, `out_type`); the arithmetic is fp32.

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

protected:
    static constexpr int warp = 32;
    Halide::Var x{"x"}, y{"y"}, lane{"lane"};

    using Values = std::vector<Halide::Expr>;

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
     * lane, lane + 32, ...; every Func of `per_row` (the partials and butterfly steps) computed
     * per row by the row's 32 lanes (their update too). */
    void schedule_rows(Halide::Func out, const std::vector<Halide::Func> &per_row) {
        using namespace Halide;
        Var yo("yo"), yi("yi"), xo("xo"), xi("xi");
        out.split(y, yo, yi, rows_per_block, TailStrategy::GuardWithIf)
            .split(x, xo, xi, warp, TailStrategy::GuardWithIf)
            .reorder(xo, xi, yi, yo)
            .gpu_blocks(yo);
        if (this->get_target().has_feature(Target::CUDA)) {
            // A row's statistics live in its warp's registers, exchanged by warp shuffles.
            out.gpu_threads(yi).gpu_lanes(xi);
            for (Func f : per_row) {
                f.compute_at(out, yi).gpu_lanes(lane);
                for (int u = 0; u < f.num_update_definitions(); u++) {
                    f.update(u).gpu_lanes(lane);
                }
            }
        } else {
            // Other GPU APIs have no gpu_lanes: the statistics go through shared memory, a
            // barrier between butterfly steps.
            out.gpu_threads(xi, yi);
            for (Func f : per_row) {
                f.compute_at(out, yo).gpu_threads(lane, y);
                for (int u = 0; u < f.num_update_definitions(); u++) {
                    f.update(u).gpu_threads(lane, y);
                }
            }
        }
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
        RDom r(0, (n + warp - 1) / warp, "r");
        Expr at = r * warp + lane;
        Func partial("softmax_partial");
        partial(lane, y) = Tuple(lowest, 0.0f);
        Expr m = partial(lane, y)[0], s = partial(lane, y)[1];
        Expr value = v(min(at, n - 1), y), inside = at < n;
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
        Expr row_max = row(x % warp, y)[0], row_sum = row(x % warp, y)[1];
        out(x, y) = narrowed("softmax", exp(v(x, y) - row_max) / row_sum);

        out.dim(0).set_min(0);
        schedule_rows(out, steps);
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
        RDom r(0, (n + warp - 1) / warp, "r");
        Expr at = r * warp + lane, inside = at < n;
        Expr value = to_float32(in(min(at, n - 1), y));
        auto add = [](const Values &a, const Values &b) { return Values{a[0] + b[0]}; };

        // The mean, then the centred sum of squares.
        Func sum_partial("sum_partial"), squares_partial("squares_partial");
        sum_partial(lane, y) = 0.0f;
        sum_partial(lane, y) += select(inside, value, 0.0f);
        std::vector<Func> steps;
        Func row_sum = butterfly(sum_partial, add, steps);
        Expr mean = row_sum(lane, y) / cast<float>(n);
        squares_partial(lane, y) = 0.0f;
        squares_partial(lane, y) += select(inside, (value - mean) * (value - mean), 0.0f);
        Func row_squares = butterfly(squares_partial, add, steps);

        Expr row_mean = row_sum(x % warp, y) / cast<float>(n);
        Expr rstd = 1.0f / sqrt(row_squares(x % warp, y) / cast<float>(n) + epsilon);
        out(x, y) = narrowed("layernorm", (to_float32(in(x, y)) - row_mean) * rstd * to_float32(gamma(x)) + to_float32(beta(x)));

        out.dim(0).set_min(0);
        schedule_rows(out, steps);
    }
};

}  // namespace alcop_generators

#endif
