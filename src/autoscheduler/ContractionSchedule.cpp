#include "autoscheduler/ContractionSchedule.h"

#include "Error.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;
using Halide::Func;  // not alcop::Func, which names the directives' subclass

namespace {

/** The extents of an operand's tile: each argument's range when the N, M and chunk variables
 * run over one block tile and one chunk of kt, every other variable fixed; -1 where the range
 * is not a constant. */
std::vector<int64_t> tile_extents(const Contraction &c, const Operand &o, const Mapping &m, int kt) {
    Scope<Interval> scope;
    const Function &f = c.reduction;
    for (const std::string &v : f.args()) scope.push(v, Interval(0, 0));
    const std::vector<int> md = c.m_dims();
    scope.push(c.dims[c.n_dim()].reduction_var, Interval(0, m.s.bn - 1));
    for (size_t i = 0; i < m.m_tile.size(); i++) {
        scope.push(c.dims[md[i]].reduction_var, Interval(0, m.m_tile[i] - 1));
    }
    for (size_t i = 0; i < c.rvars.size(); i++) {
        scope.push(c.rvars[i].name, Interval(0, i == 0 ? kt - 1 : 0));
    }
    std::vector<int64_t> extents;
    for (const Expr &arg : o.args) {
        Interval in = bounds_of_expr_in_scope(arg, scope);
        int64_t e = -1;
        if (in.is_bounded()) {
            const Expr extent = simplify(in.max - in.min + 1);  // as_const_int points into it
            if (const int64_t *i = as_const_int(extent)) e = *i;
        }
        extents.push_back(e);
    }
    return extents;
}

/** The name of the serial chunk loop of the update. */
Dim chunk_loop(const Contraction &c) {
    return {Schedule::sanitize(c.rvars[0].name) + "_o", true};
}

/** The name of the loop over the k steps of a chunk. */
Dim step_loop(const Contraction &c) {
    return {Schedule::sanitize(c.rvars[0].name) + "_i", true};
}

/** Whether the update reads register fragments of the staged tiles, one k step at a time: with
 * register stages (R >= 2, pipelined) and, for one M dimension (GEMM, batched GEMM), also with
 * R = 1, so that the fragments' reads from shared memory are the vectors below. */
bool uses_fragments(const Contraction &c, const Mapping &m) {
    if (m.s.tensor_cores) return false;  // ldmatrix reads the shared tiles
    return m.s.reg_stages > 1 || (m.s.reg_stages == 1 && c.m_dims().size() == 1);
}

/** The dimension of operand `o`'s tile along which one thread's fragment of one k step is
 * contiguous: the one indexed by the M (a) or N (b) reduction variable alone; -1 if none. */
int fragment_dim(const Contraction &c, const Operand &o) {
    const std::string v = c.dims[&o == &c.a ? c.m_dims()[0] : c.n_dim()].reduction_var;
    for (size_t d = 0; d < o.args.size(); d++) {
        const Variable *var = o.args[d].as<Variable>();
        if (var && var->name == v) return (int)d;
    }
    return -1;
}

/** Whether A's tile is stored transposed (M innermost): A is indexed (k, m, ...) with k
 * innermost, so a thread's TM values of one k step would be KT apart, TM scalar loads; M
 * innermost makes them one vector (ld.shared.v4 for TM = 4, 8) without bank conflicts. Its
 * copies then move one element per thread, consecutive threads along M: dense, conflict-free
 * shared stores, 4-byte cp.async on sm_80 (no vector is dense in both global and shared). */
bool transposes_a(const Contraction &c, const Mapping &m) {
    return uses_fragments(c, m) && c.m_dims().size() == 1 && c.a.args.size() >= 2 && fragment_dim(c, c.a) == 1 &&
           expr_uses_var(c.a.args[0], c.rvars[0].name);
}

/** Splits the first RDom variable of the update into chunks of kt, the serial step loop inside a
 * chunk, and fuses the chunks with the RDom's other variables into one serial chunk loop, so that
 * the pipeline runs across all of them. Where Halide cannot prove kt divides the extent, it
 * guards the update of the last chunk's tail (TailStrategy::GuardWithIf, the only one an RVar
 * takes), and the staged tiles keep kt along k (bound_extent in stage_operand). */
void split_into_chunks(Chain &s, const Contraction &c, int kt) {
    const std::string r0 = Schedule::sanitize(c.rvars[0].name);
    const Dim chunk = chunk_loop(c);
    Dim k = c.rvars.size() > 1 ? Dim{r0 + "_c", true} : chunk;
    s.split({c.rvars[0].name, true}, k, step_loop(c), kt);
    for (size_t i = 1; i < c.rvars.size(); i++) {
        Dim next = (i + 1 == c.rvars.size()) ? chunk : Dim{r0 + "_c" + std::to_string(i), true};
        s.fuse(k, {c.rvars[i].name, true}, next);
        k = next;
    }
}

/** The block's threads and register tiles (alcop::schedule_thread_tile) on `stage`, a stage of
 * f: N along the threads' x, the first M dimension along their y and the register tile, a
 * second M dimension fused into the thread rows. */
void thread_tile(Schedule &schedule, const StageRef &stage, const Contraction &c, const Mapping &m,
                 const std::vector<Dim> &within_chunk = {}, const std::vector<Dim> &chunks = {}) {
    const std::vector<int> md = c.m_dims();
    std::vector<Dim> rows;
    if (md.size() > 1) rows.push_back({c.dims[md[1]].reduction_var});
    schedule.thread_tile(stage, {c.dims[c.n_dim()].reduction_var}, {c.dims[md[0]].reduction_var}, m.s.tm, m.s.tn,
                         within_chunk, chunks, rows);
}

/** Schedules the update (`update`, a branch of f's): K in chunks of kt (split_into_chunks), then
 * threads and register tiles. The same in every branch: only whether the last chunk is guarded
 * differs. */
void schedule_update(Schedule &schedule, const StageRef &update, const Contraction &c, const Mapping &m) {
    Chain chunks = schedule.stage(update);
    split_into_chunks(chunks, c, m.s.kt);
    // With pipelined register fragments (R >= 2) the step loop stays serial, for the pass to
    // unroll after pipelining; with plain ones (R = 1) it is unrolled here.
    if (m.s.reg_stages <= 1) chunks.unroll(step_loop(c));
    chunks.done();
    thread_tile(schedule, update, c, m, {step_loop(c)}, {chunk_loop(c)});
}

/** How the staged copies of the operands are specialized: the branch that reads the operands
 * directly (where K is split exactly and the output is a whole number of block tiles, under
 * `condition` when defined) and the generic one, which reads them at clamped coordinates (the
 * edge blocks and the last chunk's tail); the threads of a row of the block. */
struct Copies {
    bool direct = false, generic = true;
    Condition condition;
    int threads_x = 0;
    /** K is a constant the k tile divides: the generic branch reads along K only where the
     * algorithm does, and only its edge blocks' coordinates need clamping. */
    bool k_exact = false;
};

/** The handles of a contraction's Funcs, declared in one order for both schedules (the
 * handles' ids and the printed schedule's declarations follow it): the output, the reduction
 * f, then the operands. */
struct ContractionFuncs {
    FuncRef out, f, a, b;

    FuncRef operand(const Contraction &c, const Operand &o) const {
        return &o == &c.a ? a : b;
    }
};

ContractionFuncs pipeline_funcs(Schedule &schedule, const Contraction &c) {
    ContractionFuncs funcs;
    funcs.out = schedule.pipeline_func(c.output);
    funcs.f = schedule.pipeline_func(c.reduction);
    funcs.a = schedule.pipeline_func(c.a.func);
    funcs.b = schedule.pipeline_func(c.b.func);
    return funcs;
}

/** The dimensions of `o` that the generic copies must clamp: where K is exact (Copies::k_exact),
 * those whose coordinate depends on the output's position (the over-computed edge blocks
 * read past the buffer there), else all. Empty: all. */
std::vector<int> clamped_dims(const Contraction &c, const Operand &o, bool k_exact) {
    if (!k_exact) return {};
    std::vector<int> dims;
    for (size_t d = 0; d < o.args.size(); d++) {
        for (const ContractionDim &cd : c.dims) {
            if (Halide::Internal::expr_uses_var(o.args[d], cd.reduction_var)) {
                dims.push_back((int)d);
                break;
            }
        }
    }
    if (dims.size() == o.args.size()) dims.clear();
    return dims;
}

/** The elements of one copy along the tile's innermost dimension (extent 0: unknown): 16 bytes
 * (8 halves or 4 floats) where the tile's rows hold whole ones, else 1. */
int copy_vector(const Contraction &c, int64_t innermost_extent) {
    const int width = vector_elements(c);
    return innermost_extent > 0 && innermost_extent % width == 0 ? width : 1;
}

/** Stages `operand` (`func`, read by f) per chunk in GPU shared memory through a wrapper copied
 * by all threads of the block, specialized as `copies` says, and pipelines it with the
 * candidate's shared stages. Returns the wrapper. */
FuncRef stage_operand(Schedule &schedule, const Contraction &c, const Operand &operand, FuncRef func, FuncRef f,
                      const Mapping &m, const Copies &copies, std::vector<std::string> &warnings) {
    const Dim chunk = chunk_loop(c);
    const Operand *o = &operand;
    const model::Schedule &s = m.s;
    const FuncRef w = schedule.wrapper(func, f);
    schedule.func(w).compute_at(f, chunk).store_in(MemoryType::GPUShared).done();
    std::vector<Dim> args;
    for (const Var &v : schedule.handle(w).args()) args.push_back({v.name()});
    const bool transposed = o == &c.a && transposes_a(c, m);
    std::vector<Dim> copy_order = args;  // the copy's loops, innermost first
    if (transposed) {
        std::swap(copy_order[0], copy_order[1]);
        schedule.func(w).reorder_storage(copy_order).done();
    }
    // Pipelining needs every chunk's tile to have one size and place, and the tile's extents
    // are the same in every chunk of every branch: say so. Halide's bounds would otherwise
    // shrink the last chunk's tile to the guarded tail of K, and widen the fused copy loops by
    // what the guards cannot prove. (The copy of the tail reads the operand past K at clamped
    // coordinates; the guarded update never uses those elements.)
    const std::vector<int64_t> extents = tile_extents(c, *o, m, s.kt);
    for (size_t d = 0; d < args.size(); d++) {
        if (extents[d] > 0) schedule.func(w).bound_extent(args[d], (int)extents[d]).done();
    }
    if (copies.direct) {
        // 16-byte vectors: the copy lowering makes each one cp.async where the operand's promises
        // prove its global address aligned (the plain generators' aligned=true); a 2-byte copy
        // has no cp.async at all.
        const int vector_width = transposed ? 1 : copy_vector(c, extents[0]);
        // The rounds of 16-byte copies are unrolled: each copy's addresses are then its own
        // constant offsets from one per-thread base a chunk (the plugin's fp16 GEMM 2048^3: 85
        // other instructions a chunk rolled, 55 unrolled, for 213 -> 216 registers). Those of a
        // tensor-core tile's 2-byte copies stay a loop: unrolled, their addresses held
        // registers past the model's estimate (ptxas gave the 128x128x16 w32x64 S3 GEMM 158
        // registers unrolled, 127 rolled, for an estimate of 126).
        schedule.staged_copy({w, -1, copies.condition}, copy_order, vector_width, copies.threads_x, s.threads(),
                             !s.tensor_cores || vector_width > 1);
    }
    if (copies.generic || copies.condition.defined()) {
        // Vectors too where the innermost coordinate is not clamped (a clamped one is a gather),
        // and on tensor cores where it is. One clamped along the chunked K becomes one cp.async
        // whose src-size stops at K (the last chunk's zero fill, rewrite/ZeroFilledTails.h); one
        // clamped along M or N stays a gather, lane by lane, whose 16 bytes reach shared memory
        // in one store at one swizzled address, where 2-byte copies take a store and an address
        // each: the fp16 GEMM's edge kernel (2048^3) 11.12 -> 3.28 instructions beside each
        // mma.sync, counted by trips (a loop of 16 trips a chunk became 2, which LLVM unrolls),
        // 225 -> 220 registers; its batched matmul 21.69 -> 6.12.
        const std::vector<int> clamped = clamped_dims(c, *o, copies.k_exact);
        const bool inner_clamped = clamped.empty() || clamped[0] == 0;
        const int vector_width = transposed || (inner_clamped && !s.tensor_cores) ? 1 : copy_vector(c, extents[0]);
        // A tensor-core tile's clamped copies stay a loop: unrolled, each copy's clamps are its
        // own (the 16-byte gathers: the fp16 GEMM's edge kernel 3.28 -> 3.12 for 220 -> 244
        // registers, at a runtime K 6.42 -> 3.87 but 20 bytes spilled; 2-byte copies spilled
        // 128).
        schedule.staged_copy({w}, copy_order, vector_width, copies.threads_x, s.threads(), !s.tensor_cores);
        if (o->image) {
            schedule.clamp_to_input_bounds(w, clamped,
                                           std::string("Outside the branch above, the edge blocks") +
                                               (copies.k_exact ? "" : " and the tail of K") + " read " +
                                               o->image->name() + " at clamped coordinates (AlcopAutoscheduler.h).");
        } else {
            warnings.push_back("the operand " + o->func.name() +
                               " is not an input buffer, so the edge blocks of a size that is not a multiple of the "
                               "block tile, and the last chunk of a K that is not a multiple of the k tile, read it "
                               "past the output's edges and past K unclamped (safe for a Func defined everywhere, a "
                               "bounds error otherwise)");
        }
    }
    schedule.pipeline(w, s.smem_stages);
    return w;
}

/** The input buffers f starts from (a bias, Contraction::init_inputs) read at clamped
 * coordinates: f is computed over whole block tiles, past the output's edges. */
void clamp_initial_inputs(Schedule &schedule, const Contraction &c, FuncRef f) {
    for (const Operand &in : c.init_inputs) {
        const FuncRef w = schedule.wrapper(schedule.pipeline_func(in.func), f);
        schedule.clamp_to_input_bounds(w, {},
                                       "The edge blocks compute " + c.reduction.name() +
                                           "'s initial value past the output's edges: they read " +
                                           in.image->name() + " at clamped coordinates.");
    }
}

}  // namespace

void split_off_reduction(Schedule &schedule, const Contraction &c) {
    // The handles of the output and the operands come first, as the Funcs of the pipeline
    // before the rfactor adds one.
    const FuncRef out = schedule.pipeline_func(c.output);
    schedule.pipeline_func(c.a.func);
    schedule.pipeline_func(c.b.func);
    schedule.rfactor(out);
}

namespace {

/** Where the reduction's split by KT is exact: at a constant K it divides, or in a branch
 * specialized on a runtime K (`k_cond`, on f): one that KT divides, as it does the estimate (the
 * pass proves its chunks whole), or a convolution's estimate. Every other K runs the same chunks
 * with the last one guarded (schedule_update, stage_operand). */
Chunking chunk_reduction(Schedule &schedule, const Contraction &c, const Mapping &m, FuncRef f, Condition &k_cond) {
    const ContractionRVar &r0 = c.rvars[0];
    Chunking chunking;
    if (m.k_divisible && is_const(r0.extent)) {
        chunking.exact = true;
        chunking.guarded = false;
    } else if (m.k_divisible && r0.extent_is_size()) {
        // The specialized definition's split is exact. The source names the size through the
        // RDom, which is all the schedule's scope has. Halide's simplifier keeps the guards of
        // the last chunk under `K % KT == 0`; the pass proves them true (rewrite/WholeChunks.h).
        // A convolution's chunks are fused with its filter taps, so at a runtime number of
        // chunks each chunk's channels and taps are divisions by it, in every chunk: its branch
        // is the estimate, where Halide substitutes the number (the plugin's fp32
        // 8x14x14x256x256 convolution: 0.42 other instructions per FMA there, 0.75 under
        // `CI % 32 == 0` with every guard proven; f16 2.42 and 3.19 per mma.sync).
        chunking.exact = true;
        using Kind = Condition::Term::Kind;
        if (c.rvars.size() > 1) {
            k_cond.terms.push_back({Kind::RDomExtentIs, f, 0, r0.extent_estimate});
            chunking.exact_where = "is the estimated " + std::to_string(r0.extent_estimate);
        } else {
            k_cond.terms.push_back({Kind::RDomExtentDivides, f, 0, m.s.kt});
            chunking.exact_where = "is a multiple of the k tile, " + std::to_string(m.s.kt);
        }
    } else if (m.k_divisible) {
        std::ostringstream e;
        e << r0.extent;
        chunking.why_guarded = "its extent (" + e.str() + ") is neither a constant nor a Param or buffer size";
    } else {
        chunking.why_guarded =
            "the estimated extent " + std::to_string(r0.extent_estimate) + " is not a multiple of the k tile";
    }
    chunking.condition = schedule.expr(k_cond);
    return chunking;
}

/** How a block's threads lay out its tile of the output (a stage of it): over the loops of N
 * and the first M dimension, and the rows of a second. */
using OutputThreads =
    std::function<void(const StageRef &stage, const Dim &n, const Dim &m, const std::vector<Dim> &rows)>;

/** The output in block tiles on GPU blocks (alcop::schedule_block_tile): N by bn, the first M
 * dimensions by m_tiles (a convolution's output width, then its rows and images), every other
 * dimension fused into one block dimension, `tail` at the edges along M and N; in each block
 * `threads` lays out the threads. When the output accumulates f (out = init; out += f), its
 * init is one kernel and its update, which reads f, the other: both tiled alike. `branch`: the
 * specialization tiled (none: the generic stage). Returns the N block loop. */
Dim tile_output(Schedule &schedule, const Contraction &c, FuncRef out, int bn, const std::vector<int> &m_tiles,
                const OutputThreads &threads, const Condition &branch = {},
                TailStrategy tail = TailStrategy::GuardWithIf) {
    const std::vector<int> md = c.m_dims();
    const std::string n = c.dims[c.n_dim()].output_var, mx = c.dims[md[0]].output_var;
    std::vector<std::pair<Dim, int>> rows;  // the further M dimensions, and their loops in the block tile
    std::vector<Dim> row_loops;
    std::set<int> tiled{c.n_dim(), md[0]};
    for (size_t i = 1; i < m_tiles.size(); i++) {
        const std::string v = c.dims[md[i]].output_var;
        rows.push_back({{v}, m_tiles[i]});
        row_loops.push_back({v + "_i"});
        tiled.insert(md[i]);
    }
    std::vector<Dim> batches;
    for (size_t i = 0; i < c.dims.size(); i++) {
        if (!tiled.count((int)i)) batches.push_back({c.dims[i].output_var});
    }
    const int reading_stage = c.output_accumulates ? 1 : 0;
    for (int stage = 0; stage <= reading_stage; stage++) {
        const StageRef s{out, stage ? 0 : -1, branch};
        schedule.block_tile(s, {n}, {mx}, m_tiles[0], bn, rows, batches, tail, tail);
        threads(s, {n + "_i"}, {mx + "_i"}, row_loops);
    }
    return {n + "_o"};
}

/** The block tile's extent along each of c's dimensions it tiles (by index in c.dims): N and
 * the M dimensions of m.m_tile. */
std::map<int, int> block_tile(const Contraction &c, const Mapping &m) {
    std::map<int, int> tile{{c.n_dim(), m.s.bn}};
    const std::vector<int> md = c.m_dims();
    for (size_t i = 0; i < m.m_tile.size(); i++) {
        tile[md[i]] = m.m_tile[i];
    }
    return tile;
}

/** The accumulators: one block tile in registers, computed at the N block loop `n_o` of the
 * output (alcop::store_block_accumulators), each dimension bounded to its extent in
 * `tile_extents` (by index in c.dims; 1 for the others). (When the output accumulates f, only
 * its update stage has a use of f inside n_o, which is where Halide places f.) */
void place_accumulators(Schedule &schedule, const Contraction &c, FuncRef f, FuncRef out, const Dim &n_o,
                        const std::map<int, int> &tile_extents) {
    std::vector<std::pair<Dim, int>> tile;
    for (size_t i = 0; i < c.dims.size(); i++) {
        auto e = tile_extents.find((int)i);
        tile.push_back({{c.dims[i].reduction_var}, e == tile_extents.end() ? 1 : e->second});
    }
    schedule.block_accumulators(f, out, n_o, tile);
}

/** f's initialization: each thread its TN x TM window of the block tile. */
void schedule_init(Schedule &schedule, const Contraction &c, const Mapping &m, FuncRef f) {
    thread_tile(schedule, {f, -1, {}}, c, m);
}

/** Each thread's fragment of operand `o`'s staged tile `w` at one k step, in registers, R
 * slots: read as vectors along the dimension where it is contiguous (B's N; A's M when its
 * tile is transposed), so that the Stmt has the ld.shared.v4 the PTX has and the bank conflict
 * check sees the real accesses. */
void schedule_fragment(Schedule &schedule, const Contraction &c, const Mapping &m, const Operand *o, FuncRef w,
                       FuncRef f) {
    const model::Schedule &s = m.s;
    const bool transposed = o == &c.a && transposes_a(c, m);
    const FuncRef frag = schedule.wrapper(w, f);
    schedule.func(frag).compute_at(f, step_loop(c)).done();
    const int dense = fragment_dim(c, *o);
    if (dense >= 0 && (o != &c.a || transposed)) {
        schedule.register_fragment(frag, {schedule.handle(frag).args()[dense].name()}, o == &c.a ? s.tm : s.tn);
    } else {
        schedule.register_fragment(frag, {}, 1);
    }
    if (s.reg_stages > 1) schedule.pipeline(frag, s.reg_stages, true);
}

/** The condition under which the operands are copied directly: K split exactly (`k_cond`) and
 * the output a whole number of block tiles, or with the edge blocks shifted inwards
 * (`shifted`) at least one block tile along each dimension and along N a whole number of copy
 * vectors (so that the last block's copies start on one). */
Condition direct_copy_condition(const Contraction &c, const Mapping &m, FuncRef out, const Condition &k_cond,
                                bool shifted = false) {
    using Kind = Condition::Term::Kind;
    Condition cond = k_cond;
    const std::vector<int> md = c.m_dims();
    const int n_dim = c.dims[c.n_dim()].output_dim;
    if (shifted) {
        cond.terms.push_back({Kind::OutputExtentAtLeast, out, n_dim, m.s.bn});
        cond.terms.push_back({Kind::OutputExtentDivides, out, n_dim, vector_elements(c)});
    } else {
        cond.terms.push_back({Kind::OutputExtentDivides, out, n_dim, m.s.bn});
    }
    for (size_t i = 0; i < m.m_tile.size(); i++) {
        cond.terms.push_back({shifted ? Kind::OutputExtentAtLeast : Kind::OutputExtentDivides, out,
                              c.dims[md[i]].output_dim, m.m_tile[i]});
    }
    return cond;
}

}  // namespace

Chunking schedule_contraction(Schedule &schedule, const Contraction &c, const Mapping &m,
                              std::vector<std::string> &warnings) {
    const ContractionFuncs funcs = pipeline_funcs(schedule, c);
    const FuncRef out = funcs.out, f = funcs.f;
    const std::vector<int> md = c.m_dims();

    Condition k_cond;
    const Chunking chunking = chunk_reduction(schedule, c, m, f, k_cond);
    // The staged operands are copied directly where K is split exactly and every block's tile
    // lies inside the output; with the edge blocks shifted inwards (a pure output) that is every
    // output at least one tile large along each dimension and whole copy vectors along N.
    const bool shifted = shifts_edge_blocks(c);
    Copies copies;
    copies.direct = chunking.exact;
    copies.generic = chunking.guarded;
    copies.condition = direct_copy_condition(c, m, out, k_cond, shifted);
    copies.threads_x = m.s.bn / m.s.tn;
    copies.k_exact = chunking.exact && !k_cond.defined();
    // The fast branch gets a kernel of its own. With both branches of every copy in one loop,
    // the generic copies' clamped addresses (hoisted out of the loop) hold registers in the
    // fast path too: ptxas gives the 128 x 128, 8 x 8-per-thread GEMM 168 registers (one block
    // per SM) in one kernel, 128 in its own (two), as the hand-written kernel. Inside out's
    // branch the copies' identical conditions simplify away. A shifted branch tiles
    // differently from the generic one, so it is specialized before either is tiled (a
    // specialization copies the schedule made before it); a guarded one after.
    const bool own_kernel = chunking.exact && copies.condition.defined();
    const OutputThreads thread_layout = [&](const StageRef &stage, const Dim &n_loop, const Dim &m_loop,
                                            const std::vector<Dim> &rows) {
        schedule.thread_tile(stage, n_loop, m_loop, m.s.tm, m.s.tn, {}, {}, rows, TailStrategy::GuardWithIf);
    };
    if (own_kernel && shifted) {
        tile_output(schedule, c, out, m.s.bn, m.m_tile, thread_layout, copies.condition, TailStrategy::ShiftInwards);
    }
    const Dim n_o = tile_output(schedule, c, out, m.s.bn, m.m_tile, thread_layout);
    place_accumulators(schedule, c, f, out, n_o, block_tile(c, m));
    schedule_init(schedule, c, m, f);
    // The update: the exact branch first (a specialization copies the schedule so far).
    if (chunking.exact) schedule_update(schedule, {f, 0, k_cond}, c, m);
    if (chunking.guarded) schedule_update(schedule, {f, 0, {}}, c, m);
    if (own_kernel && !shifted) schedule.stage(out, c.output_accumulates ? 0 : -1, copies.condition).done();

    // The staged operands, and their register fragments.
    for (const Operand *o : {&c.a, &c.b}) {
        const FuncRef w = stage_operand(schedule, c, *o, funcs.operand(c, *o), f, m, copies, warnings);
        if (uses_fragments(c, m)) schedule_fragment(schedule, c, m, o, w, f);
    }
    clamp_initial_inputs(schedule, c, f);
    schedule.enable();
    return chunking;
}

Chunking schedule_tensor_core_contraction(Schedule &schedule, const Contraction &c, const Mapping &m,
                                          std::vector<std::string> &warnings) {
    const ContractionFuncs funcs = pipeline_funcs(schedule, c);
    const FuncRef out = funcs.out, f = funcs.f;
    const model::Schedule &s = m.s;
    const std::vector<int> md = c.m_dims();

    // The M tile of a block: along the first M dimension and, for a convolution, its rows and
    // images (Mapping::m_tile), fused into one M loop (x innermost) for the warp layout. The
    // accumulators and A's staged tile (one filter tap's pixels) are stored dense along it, so
    // a 16-row mma tile and its ldmatrix rows step one pixel at a time across the image's rows,
    // as an implicit GEMM's M does.
    auto m_loop_of = [&](const StageRef &stage, const Dim &mx, const std::vector<Dim> &rows) {
        if (rows.empty()) return mx;
        std::vector<Dim> dims{mx};
        dims.insert(dims.end(), rows.begin(), rows.end());
        Chain chain = schedule.stage(stage);
        const Dim m_loop = fuse_into_one(chain, dims);
        chain.done();
        return m_loop;
    };
    std::vector<Dim> acc_rows;  // the accumulators' further M dimensions
    for (size_t i = 1; i < m.m_tile.size(); i++) {
        acc_rows.push_back({c.dims[md[i]].reduction_var});
    }

    // The output in blocks, and in each block the accumulators' warp layout on the threads, which
    // is what lets each thread read only the accumulators its lane holds. The operands are read
    // directly where every block's tile lies inside the output (a kernel of its own), at clamped
    // coordinates elsewhere. With the edge blocks shifted inwards that is every output at least
    // one tile large along each dimension and whole copy vectors along N: its branch tiles
    // differently from the generic one, so it is specialized before either is tiled (a
    // specialization copies the schedule made before it).
    const bool shifted = shifts_edge_blocks(c);
    Condition k_cond;
    const Chunking chunking = chunk_reduction(schedule, c, m, f, k_cond);
    const Condition whole_tiles = direct_copy_condition(c, m, out, k_cond, shifted);
    const OutputThreads warp_layout = [&](const StageRef &stage, const Dim &n_loop, const Dim &m_loop,
                                          const std::vector<Dim> &rows) {
        schedule.tensor_core_tile(stage, n_loop, m_loop_of(stage, m_loop, rows), s.tm, s.tn);
    };
    if (shifted) tile_output(schedule, c, out, s.bn, m.m_tile, warp_layout, whole_tiles, TailStrategy::ShiftInwards);
    const Dim n_o = tile_output(schedule, c, out, s.bn, m.m_tile, warp_layout);
    // The accumulators, in the same warp layout.
    place_accumulators(schedule, c, f, out, n_o, block_tile(c, m));
    const Dim x{c.dims[c.n_dim()].reduction_var};
    const Dim y = m_loop_of({f, -1}, {c.dims[md[0]].reduction_var}, acc_rows);
    schedule.tensor_core_tile({f, -1}, x, y, s.tm, s.tn);
    // The update: K in chunks of KT, whose k loop the pass replaces by mma.sync steps, inside
    // the threads; the chunk loop outside them. Where KT divides K (a constant, or a runtime
    // size in the branch specialized on it, chunk_reduction); the generic branch of a runtime
    // K, its last chunk guarded, keeps the same loops on the threads' multiply-adds.
    auto update_on_warps = [&](const StageRef &update) {
        Chain chunks = schedule.stage(update);
        split_into_chunks(chunks, c, s.kt);
        chunks.done();
        m_loop_of(update, {c.dims[md[0]].reduction_var}, acc_rows);
        schedule.tensor_core_tile(update, x, y, s.tm, s.tn, {step_loop(c)}, {chunk_loop(c)});
    };
    update_on_warps({f, 0, k_cond});
    if (chunking.guarded) update_on_warps({f, 0, {}});

    // The staged operands, read directly in the branch of whole tiles and at clamped
    // coordinates elsewhere.
    Copies copies;
    copies.direct = true;
    copies.generic = chunking.guarded;
    copies.threads_x = 32;
    copies.k_exact = !k_cond.defined();
    copies.condition = whole_tiles;
    if (!shifted) schedule.stage(out, c.output_accumulates ? 0 : -1, copies.condition).done();
    for (const Operand *o : {&c.a, &c.b}) {
        stage_operand(schedule, c, *o, funcs.operand(c, *o), f, m, copies, warnings);
    }
    schedule.tensor_cores(f, s.tm, s.tn);
    // The mma fragments in R register slots: ldmatrix R - 1 k steps ahead, across chunks
    // (map_candidate keeps R >= 2 to where it applies).
    if (s.reg_stages > 1) schedule.pipeline(f, s.reg_stages, true);
    clamp_initial_inputs(schedule, c, f);
    schedule.enable();
    return chunking;
}

}  // namespace autoscheduler
}  // namespace alcop
