#include "alcop/Directive.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"
#include "copy/CopyLowering.h"
#include "directive/Requests.h"
#include "directive/TestHooks.h"
#include "rewrite/LowerPipelines.h"

#include <cstring>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// Each request is a trace tag "<prefix><value>", read back by recorded(): the last one wins.
const std::string tag_prefix = "alcop.pipeline ";                   // <stages> <level>
const std::string launch_bounds_prefix = "alcop.min_blocks_per_sm ";  // <blocks>
const std::string tensor_cores_prefix = "alcop.tensor_cores ";       // <warp_m> <warp_n>

// schedule_tensor_core_tile's loop over a lane's two adjacent elements along x (e below).
const char *const lane_pair = "tc_e";

std::optional<Level> parse_level(const std::string &s) {
    if (s == "shared") return Level::Shared;
    if (s == "register") return Level::Register;
    return std::nullopt;
}

}  // namespace

const char *to_string(Level level) {
    switch (level) {
    case Level::Shared:
        return "shared";
    case Level::Register:
        return "register";
    }
    return "?";
}

Halide::Func pipeline(Halide::Func f, int stages, Level level) {
    user_assert(stages >= 1) << "alcop::pipeline(" << user_name(f.name()) << ", " << stages
                             << "): the number of stages must be at "
                             << "least 1 (1 means no pipelining).\n";
    user_assert(f.defined()) << "alcop::pipeline(" << user_name(f.name()) << "): the Func has no definition.\n";
    std::ostringstream tag;
    tag << tag_prefix << stages << " " << to_string(level);
    f.add_trace_tag(tag.str());
    return f;
}

std::optional<std::string> recorded(const Function &f, const std::string &prefix) {
    std::optional<std::string> value;
    for (const std::string &tag : f.get_trace_tags()) {
        if (tag.rfind(prefix, 0) == 0) value = tag.substr(prefix.size());
    }
    return value;
}

std::optional<PipelineRequest> requested_pipeline(const Function &f) {
    const std::optional<std::string> tag = recorded(f, tag_prefix);
    if (!tag) return std::nullopt;
    std::istringstream in(*tag);
    PipelineRequest r;
    std::string level;
    in >> r.stages >> level;
    std::optional<Level> l = parse_level(level);
    internal_assert(in && l) << "Malformed ALCOP tag on " << f.name() << ": " << *tag << "\n";
    r.level = *l;
    return r;
}

Halide::Func min_blocks_per_sm(Halide::Func f, int blocks) {
    user_assert(blocks >= 1) << "alcop::min_blocks_per_sm(" << user_name(f.name()) << ", " << blocks
                             << "): at least one block must fit on an SM.\n";
    f.add_trace_tag(launch_bounds_prefix + std::to_string(blocks));
    return f;
}

std::optional<int> requested_min_blocks_per_sm(const Function &f) {
    const std::optional<std::string> tag = recorded(f, launch_bounds_prefix);
    return tag ? std::optional<int>(std::stoi(*tag)) : std::nullopt;
}

Halide::Func tensor_cores(Halide::Func f, int warp_m, int warp_n) {
    user_assert(f.defined()) << "alcop::tensor_cores(" << user_name(f.name()) << "): the Func has no definition.\n";
    user_assert(warp_m > 0 && warp_n > 0 && warp_m % 16 == 0 && warp_n % 16 == 0)
        << "alcop::tensor_cores(" << user_name(f.name()) << ", " << warp_m << ", " << warp_n << "): the warp tile "
        << warp_m << " x " << warp_n << " (M x N) is not a multiple of the instruction "
        << "shape: mma.sync.m16n8k16 computes 16 x 8 tiles and one ldmatrix.x4 loads B for two of them, so "
        << "warp_m and warp_n must be positive multiples of 16.\n";
    f.add_trace_tag(tensor_cores_prefix + std::to_string(warp_m) + " " + std::to_string(warp_n));
    return f;
}

std::optional<TensorCoreRequest> requested_tensor_cores(const Function &f) {
    const std::optional<std::string> tag = recorded(f, tensor_cores_prefix);
    if (!tag) return std::nullopt;
    std::istringstream in(*tag);
    TensorCoreRequest r;
    in >> r.warp_m >> r.warp_n;
    internal_assert(in) << "Malformed ALCOP tag on " << f.name() << ": " << *tag << "\n";
    return r;
}

Halide::Stage schedule_block_tile(Halide::Stage stage, Var x, Var y, int block_m, int block_n,
                                  const std::vector<std::pair<Var, int>> &rows, const std::vector<Var> &batches,
                                  TailStrategy m_tail, TailStrategy n_tail) {
    bool positive = block_m > 0 && block_n > 0;
    for (const auto &row : rows) positive = positive && row.second > 0;
    user_assert(positive) << "alcop::schedule_block_tile(" << user_name(stage.name()) << ", " << block_m << ", "
                          << block_n << "): a block tile needs positive extents, its rows' too.\n";
    for (const auto &[tail, along] : {std::pair{m_tail, "M"}, std::pair{n_tail, "N"}}) {
        user_assert(tail == TailStrategy::GuardWithIf || tail == TailStrategy::ShiftInwards)
            << "alcop::schedule_block_tile(" << user_name(stage.name()) << ", " << block_m << ", " << block_n
            << "): the edge blocks along " << along
            << " are guarded (GuardWithIf) or shifted inwards (ShiftInwards), so that every block tile has one "
               "size.\n";
    }
    Var xo(x.name() + "_o"), xi(x.name() + "_i"), yo(y.name() + "_o"), yi(y.name() + "_i");
    stage.split(x, xo, xi, block_n, n_tail).split(y, yo, yi, block_m, m_tail);
    std::vector<VarOrRVar> order{xi, yi};
    std::string m_name = y.name();
    for (const auto &[row, extent] : rows) {
        Var ro(row.name() + "_o"), ri(row.name() + "_i");
        stage.split(row, ro, ri, extent, m_tail);
        m_name += "_" + row.name();
        Var fused(m_name + "_o");
        stage.fuse(yo, ro, fused);
        yo = fused;
        order.push_back(ri);
    }
    std::vector<VarOrRVar> blocks{xo, yo};
    if (!batches.empty()) {  // a GPU has three block dimensions
        Var batch = batches[0];
        for (size_t i = 1; i < batches.size(); i++) {
            Var fused(batch.name() + "_" + batches[i].name());
            stage.fuse(batch, batches[i], fused);
            batch = fused;
        }
        blocks.push_back(batch);
    }
    order.insert(order.end(), blocks.begin(), blocks.end());
    stage.reorder(order);
    if (blocks.size() == 2) {
        stage.gpu_blocks(blocks[0], blocks[1]);
    } else {
        stage.gpu_blocks(blocks[0], blocks[1], blocks[2]);
    }
    return stage;
}

Halide::Func store_block_accumulators(Halide::Func acc, Halide::Func output, Var block_loop,
                                      const std::vector<std::pair<Var, int>> &tile) {
    acc.compute_at(output, block_loop).store_in(MemoryType::Register);
    for (const auto &[v, extent] : tile) acc.bound_extent(v, extent);
    return acc;
}

Halide::Stage schedule_tensor_core_tile(Halide::Stage stage, Var x, Var y, int warp_m, int warp_n,
                                        const std::vector<RVar> &within_chunk, const std::vector<RVar> &chunks) {
    user_assert(warp_m > 0 && warp_n > 0 && warp_m % 16 == 0 && warp_n % 16 == 0)
        << "alcop::schedule_tensor_core_tile(" << user_name(stage.name()) << ", " << warp_m << ", " << warp_n
        << "): the warp tile is not a multiple of the instruction shape (warp_m and warp_n multiples of 16).\n";
    // x = xw * warp_n + 8 i + 2 t + e,  y = yw * warp_m + 16 j + 8 h + g,  lane = t + 4 g.
    Var xw("tc_xw"), xl("tc_xl"), yw("tc_yw"), yl("tc_yl"), i("tc_i"), xq("tc_xq"), t("tc_t"), e(lane_pair);
    Var j("tc_j"), yq("tc_yq"), h("tc_h"), g("tc_g"), lane("tc_lane"), warp("tc_warp");
    stage.split(x, xw, xl, warp_n)
        .split(y, yw, yl, warp_m)
        .split(xl, i, xq, 8)
        .split(xq, t, e, 2)
        .split(yl, j, yq, 16)
        .split(yq, h, g, 8);
    std::vector<VarOrRVar> order{e, h, i, j};
    order.insert(order.end(), within_chunk.begin(), within_chunk.end());
    order.insert(order.end(), {t, g, xw, yw});
    order.insert(order.end(), chunks.begin(), chunks.end());
    stage.reorder(order).fuse(t, g, lane).fuse(xw, yw, warp).gpu_threads(lane, warp);
    stage.unroll(e).unroll(h).unroll(i).unroll(j);
    return stage;
}

Halide::Func schedule_tensor_core_tile(Halide::Func f, Var x, Var y, int warp_m, int warp_n) {
    schedule_tensor_core_tile(Halide::Stage(f), x, y, warp_m, warp_n);
    // The lane's pair x = ... + 2 t + e: 32 bits of 16-bit values, one store.
    if (f.output_types()[0].bits() < 32) f.vectorize(Var(lane_pair));
    return f;
}

Halide::Stage schedule_thread_tile(Halide::Stage stage, Var x, Var y, int thread_m, int thread_n,
                                   const std::vector<RVar> &within_chunk, const std::vector<RVar> &chunks,
                                   const std::vector<Var> &rows, TailStrategy tail) {
    user_assert(thread_m > 0 && thread_n > 0)
        << "alcop::schedule_thread_tile(" << user_name(stage.name()) << ", " << thread_m << ", " << thread_n
        << "): a thread's register tile needs positive extents.\n";
    Var xt(x.name() + "_t"), xr(x.name() + "_r"), yt(y.name() + "_t"), yr(y.name() + "_r");
    stage.split(x, xt, xr, thread_n, tail).split(y, yt, yr, thread_m, tail);
    for (const Var &row : rows) {
        Var fused(yt.name() + "_" + row.name());
        stage.fuse(yt, row, fused);
        yt = fused;
    }
    std::vector<VarOrRVar> order{xr, yr};
    order.insert(order.end(), within_chunk.begin(), within_chunk.end());
    order.insert(order.end(), {xt, yt});
    order.insert(order.end(), chunks.begin(), chunks.end());
    stage.reorder(order).gpu_threads(xt, yt).unroll(xr).unroll(yr);
    return stage;
}

Halide::Stage schedule_staged_copy(Halide::Stage stage, const std::vector<Var> &dims, int vector_width,
                                   int threads_x, int threads, bool unroll_rounds) {
    user_assert(!dims.empty() && vector_width > 0 && threads_x > 0 && threads > 0 && threads % threads_x == 0)
        << "alcop::schedule_staged_copy(" << user_name(stage.name()) << ", vector_width " << vector_width
        << ", threads_x " << threads_x << ", threads " << threads
        << "): needs a dimension, positive counts, and threads a multiple of threads_x.\n";
    Var copied = dims[0];
    if (vector_width > 1) {
        Var vectors(dims[0].name() + "_o"), lanes(dims[0].name() + "_v");
        stage.split(dims[0], vectors, lanes, vector_width, TailStrategy::RoundUp).vectorize(lanes);
        copied = vectors;
    }
    for (size_t i = 1; i < dims.size(); i++) {
        Var fused("t" + std::to_string(i));
        stage.fuse(copied, dims[i], fused);
        copied = fused;
    }
    Var rounds("t_o"), in_round("t_i"), tx("t_x"), ty("t_y");
    stage.split(copied, rounds, in_round, threads, TailStrategy::GuardWithIf)
        .split(in_round, ty, tx, threads_x)
        .reorder(tx, ty, rounds)
        .gpu_threads(tx, ty);
    if (unroll_rounds) stage.unroll(rounds);
    return stage;
}

Halide::Func schedule_register_fragment(Halide::Func frag, const Var &dense, int extent) {
    user_assert(extent > 0) << "alcop::schedule_register_fragment(" << user_name(frag.name()) << ", " << dense.name()
                            << ", " << extent << "): the extent must be positive.\n";
    const int width = extent % 4 == 0 ? 4 : extent % 2 == 0 ? 2 : 1;
    if (width > 1) {
        Var lanes(dense.name() + "_v");
        frag.split(dense, dense, lanes, width).vectorize(lanes);
    }
    return schedule_register_fragment(frag);
}

Halide::Func schedule_register_fragment(Halide::Func frag) {
    frag.store_in(MemoryType::Register);
    for (const Var &v : frag.args()) frag.unroll(v);
    return frag;
}

namespace {

void add_function(const Function &f, std::map<std::string, Function> &env) {
    if (env.count(f.name())) return;
    env.emplace(f.name(), f);
    for (const auto &c : find_direct_calls(f)) {
        add_function(c.second, env);
    }
    for (const auto &w : f.schedule().wrappers()) {
        add_function(Function(w.second), env);
    }
}

}  // namespace

std::map<std::string, Function> pipeline_functions(const std::vector<Function> &outputs) {
    std::map<std::string, Function> env;
    for (const Function &f : outputs) {
        add_function(f, env);
    }
    return env;
}

Func &Func::pipeline(int stages, Level level) {
    alcop::pipeline(*this, stages, level);
    return *this;
}

Func &Func::tensor_cores(int warp_m, int warp_n) {
    alcop::tensor_cores(*this, warp_m, warp_n);
    return *this;
}

Func &Func::min_blocks_per_sm(int blocks) {
    alcop::min_blocks_per_sm(*this, blocks);
    return *this;
}

bool uses_async_copies(const Target &target, CopyKind copies) {
    return copy_kind_for(DeviceAPI::CUDA, target, copies) == CopyKind::Async;
}

bool operator==(const Options &a, const Options &b) {
    return a.target == b.target && a.copies == b.copies && a.shared_memory_limit == b.shared_memory_limit &&
           a.register_limit == b.register_limit && a.cuda_opt_in == b.cuda_opt_in &&
           a.spills_are_errors == b.spills_are_errors;
}

namespace {

void install(Pipeline p, const Options &options, const testing::Hooks &hooks, bool automatic) {
    for (const CustomLoweringPass &pass : p.custom_lowering_passes()) {
        if (auto *installed = dynamic_cast<LowerPipelines *>(pass.pass)) {
            // The last call wins, and what was compiled before may be stale.
            installed->set_options(options, hooks, automatic);
            p.invalidate_cache();
            return;
        }
    }
    std::vector<Function> outputs;
    for (const Halide::Func &f : p.outputs()) {
        outputs.push_back(f.function());
    }
    p.add_custom_lowering_pass(new LowerPipelines(outputs, options, hooks, automatic));
}

}  // namespace

void enable(Pipeline p, const Options &options) {
    install(std::move(p), options, testing::Hooks(), false);
}

void testing::enable(Pipeline p, const Options &options, const Hooks &hooks) {
    install(std::move(p), options, hooks, false);
}

void auto_pipeline(Pipeline p, const Options &options) {
    // The policy learns why a candidate is rejected by catching the analysis's user error.
    user_assert(exceptions_enabled())
        << "alcop::auto_pipeline needs Halide built with exceptions (HALIDE_WITH_EXCEPTIONS): it tells the "
        << "buffers that cannot be pipelined by the errors the analysis raises for them.\n";
    install(std::move(p), options, testing::Hooks(), true);
}

void auto_pipeline(Pipeline p, const Target &target) {
    Options options;
    options.target = target;
    auto_pipeline(std::move(p), options);
}

void enable(Pipeline p, const Target &target) {
    Options options;
    options.target = target;
    enable(std::move(p), options);
}

}  // namespace alcop
