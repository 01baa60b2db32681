#include "analysis/PipelineAnalysis.h"

#include "Error.h"
#include "analysis/KernelContext.h"

#include <algorithm>
#include <optional>
#include <set>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

std::string without_unique_suffixes(const std::string &name) {
    std::string out;
    for (size_t i = 0; i < name.size(); i++) {
        if (name[i] == '$' && i + 1 < name.size() && isdigit((unsigned char)name[i + 1])) {
            while (i + 1 < name.size() && isdigit((unsigned char)name[i + 1])) i++;
            continue;
        }
        out += name[i];
    }
    return out;
}

std::string describe_loop(const For *loop) {
    return "the serial loop " + loop->name;
}

namespace {

/** The user's spelling of a name without suffixes: Func::in() wrappers are "<f>_global_wrapper",
 * "<f>_in_<g>" and "<f>_clone_in_<g>" (Halide 14's Func.cpp), and an ImageParam's Func is
 * "<name>_im". */
std::string spelled(const std::string &name, bool *is_wrapper) {
    auto ends_with = [&](const std::string &suffix) {
        return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    auto wrapped = [&](const std::string &base) {
        *is_wrapper = true;
        const bool image = base.size() > 3 && base.compare(base.size() - 3, 3, "_im") == 0;
        bool inner = false;
        return image ? base.substr(0, base.size() - 3) : spelled(base, &inner);
    };
    const std::string global = "_global_wrapper";
    if (ends_with(global)) {
        return wrapped(name.substr(0, name.size() - global.size())) + ".in()";
    }
    for (const std::string &sep : {std::string("_clone_in_"), std::string("_in_")}) {
        const size_t at = name.rfind(sep);
        if (at != std::string::npos && at > 0 && at + sep.size() < name.size()) {
            const std::string method = sep == "_in_" ? ".in(" : ".clone_in(";
            return wrapped(name.substr(0, at)) + method + name.substr(at + sep.size()) + ")";
        }
    }
    return name;
}

}  // namespace

std::string user_name(const std::string &func) {
    bool is_wrapper = false;
    return spelled(without_unique_suffixes(func), &is_wrapper);
}

std::string pipeline_call(const std::string &func, Level level) {
    bool is_wrapper = false;
    std::string call = "alcop::pipeline(" + spelled(without_unique_suffixes(func), &is_wrapper);
    call += level == Level::Register ? ", Level::Register)" : ")";
    return is_wrapper ? call + " (on Halide's " + func + ")" : call;
}

bool is_barrier(const Stmt &s) {
    const Evaluate *e = s.as<Evaluate>();
    const Call *c = e ? e->value.as<Call>() : nullptr;
    return c && c->is_intrinsic(Call::gpu_thread_barrier);
}

std::string first_produced(const Stmt &s, const std::set<std::string> &funcs) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const ProducerConsumer *op) override {
            if (found.empty() && op->is_producer && funcs.count(op->name)) found = op->name;
            IRVisitor::visit(op);
        }

    public:
        const std::set<std::string> &funcs;
        std::string found;
        Finder(const std::set<std::string> &funcs) : funcs(funcs) {
        }
    } finder(funcs);
    s.accept(&finder);
    return finder.found;
}

void cut_loop_body(const Stmt &s, const std::set<std::string> &pipelined, std::vector<Stmt> &out) {
    if (const Block *b = s.as<Block>()) {
        cut_loop_body(b->first, pipelined, out);
        cut_loop_body(b->rest, pipelined, out);
        return;
    }
    if (first_produced(s, pipelined).empty()) {
        out.push_back(s);
        return;
    }
    std::vector<Stmt> pieces;
    if (const LetStmt *l = s.as<LetStmt>()) {
        cut_loop_body(l->body, pipelined, pieces);
        for (const Stmt &p : pieces) {
            out.push_back(stmt_uses_var(p, l->name) ? LetStmt::make(l->name, l->value, p) : p);
        }
    } else if (const ProducerConsumer *pc = s.as<ProducerConsumer>(); pc && !pc->is_producer) {
        cut_loop_body(pc->body, pipelined, pieces);
        for (const Stmt &p : pieces) {
            out.push_back(ProducerConsumer::make_consume(pc->name, p));
        }
    } else {
        out.push_back(s);
    }
}

namespace {

/** Closed byte range [lo, hi] of a Load or Store of elements of type t at `index`. */
struct ByteRange {
    int64_t lo = 0, hi = -1;
    bool known = false;

    bool overlaps(int64_t begin, int64_t end) const {
        return lo < end && hi >= begin;
    }
    bool inside(int64_t begin, int64_t end) const {
        return lo >= begin && hi < end;
    }
};

ByteRange byte_range(const Expr &index, const Type &t, const KernelContext &ctx) {
    Interval i = ctx.bounds(index);
    ByteRange r;
    if (!i.is_bounded()) {
        return r;
    }
    const Expr min = simplify(i.min), max = simplify(i.max);
    const int64_t *lo = as_const_int(min);
    const int64_t *hi = as_const_int(max);
    if (!lo || !hi) {
        return r;
    }
    const int bytes = t.element_of().bytes();
    r.lo = *lo * bytes;
    r.hi = (*hi + 1) * bytes - 1;
    r.known = true;
    return r;
}

bool has_gpu_blocks(const Stmt &s) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const For *op) override {
            found = found || op->for_type == ForType::GPUBlock;
            IRVisitor::visit(op);
        }

    public:
        bool found = false;
    } finder;
    s.accept(&finder);
    return finder.found;
}

/** Where each requested Func is produced and consumed, and the context at each serial loop. */
class FindStreamingLoops : public KernelContextVisitor {
    using KernelContextVisitor::visit;

    const std::map<std::string, PipelineRequest> &requests;
    DeviceAPI device = DeviceAPI::None;
    const Allocate *shared = nullptr;
    std::vector<const For *> serial;

    void visit(const For *op) override {
        if (op->for_type == ForType::GPUBlock) {
            device = op->device_api;
        }
        const bool streaming_candidate = kernel_depth > 0 && op->for_type == ForType::Serial;
        if (streaming_candidate) {
            // The context at the loop's entry, without the loop itself: see KernelContext.h.
            loop_order.push_back(op);
            loop_device[op] = device;
            entry[op] = ctx;
            entry_allocation[op] = shared;
            serial.push_back(op);
        }
        KernelContextVisitor::visit(op);
        if (streaming_candidate) {
            serial.pop_back();
        }
    }

    void visit(const Allocate *op) override {
        const Allocate *old = shared;
        if (kernel_depth && op->memory_type == MemoryType::GPUShared) {
            shared = op;
        }
        IRVisitor::visit(op);
        shared = old;
    }

    void visit(const ProducerConsumer *op) override {
        auto it = requests.find(op->name);
        if (it != requests.end()) {
            const std::string &f = op->name;
            if (op->is_producer) {
                user_assert(kernel_depth > 0 || !has_gpu_blocks(op->body))
                    << pipeline_call(f) << ": " << user_name(f) << " is computed in a GPU kernel of its own, "
                    << "at the block level: its gpu_blocks loops run inside its production (it is that "
                    << "kernel's output), so no serial loop of the kernel is around it. Pipeline the tiles "
                    << "the kernel stages instead: a Func (e.g. an input's in()) computed at a serial "
                    << "(reduction) loop inside the kernel, with store_in(MemoryType::GPUShared).\n";
                user_assert(kernel_depth > 0)
                    << pipeline_call(f) << ": " << user_name(f) << " is not computed inside a GPU kernel. "
                    << "Pipelining needs " << user_name(f) << " computed inside a serial loop under gpu_blocks.\n";
                if (serial.empty()) {
                    // An error, told apart below by how often it happens (see produced_at_block_level).
                    produced_at_block_level[f]++;
                    IRVisitor::visit(op);
                    return;
                }
                produced_in[f].push_back(serial.back());
            } else {
                consumed_in[f].push_back(serial);
            }
        }
        IRVisitor::visit(op);
    }

public:
    FindStreamingLoops(const std::map<std::string, PipelineRequest> &requests) : requests(requests) {
    }

    std::vector<const For *> loop_order;  ///< serial loops of kernels, in program order
    std::map<const For *, DeviceAPI> loop_device;
    std::map<const For *, KernelContext> entry;
    std::map<const For *, const Allocate *> entry_allocation;
    std::map<std::string, std::vector<const For *>> produced_in;
    std::map<std::string, std::vector<std::vector<const For *>>> consumed_in;
    /** Produce nodes of each Func in a kernel but in no serial loop: one means it is computed
     * at the block level; more, that the loop it is computed at was unrolled. */
    std::map<std::string, int> produced_at_block_level;
};

/** One Load or Store of the shared allocation inside the streaming loop. */
struct Access {
    const IRNode *node;
    bool is_store;
    ByteRange range;
    std::string producing;  ///< innermost produce marker around it ("" when none)
};

/** Collects, for one statement of the streaming loop's body, its accesses to the shared
 * allocation and the names of every other buffer it loads and stores. */
class CollectAccesses : public KernelContextVisitor {
    using KernelContextVisitor::visit;

    const std::string &allocation;
    std::vector<std::string> producing;

    void visit(const ProducerConsumer *op) override {
        if (op->is_producer) producing.push_back(op->name);
        IRVisitor::visit(op);
        if (op->is_producer) producing.pop_back();
    }

    void record(const IRNode *node, bool is_store, const std::string &name, const Expr &index, Type t) {
        if (name == allocation) {
            accesses.push_back(
                {node, is_store, byte_range(index, t, ctx), producing.empty() ? std::string() : producing.back()});
        } else {
            (is_store ? stored : loaded).insert(name);
        }
    }

    void visit(const Load *op) override {
        record(op, false, op->name, op->index, op->type);
        IRVisitor::visit(op);
    }

    void visit(const Store *op) override {
        record(op, true, op->name, op->index, op->value.type());
        IRVisitor::visit(op);
    }

public:
    CollectAccesses(const std::string &allocation, const KernelContext &ctx)
        : KernelContextVisitor(ctx), allocation(allocation) {
    }

    std::vector<Access> accesses;
    std::set<std::string> loaded, stored;
};

/** Does any Load or Store of `alloc` in its scope belong to no pipelined buffer? */
bool has_unowned_access(const Allocate *alloc, const std::map<const IRNode *, std::string> &owner) {
    class Finder : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Load *op) override {
            found = found || (op->name == name && !owner.count(op));
            IRVisitor::visit(op);
        }
        void visit(const Store *op) override {
            found = found || (op->name == name && !owner.count(op));
            IRVisitor::visit(op);
        }

    public:
        const std::string &name;
        const std::map<const IRNode *, std::string> &owner;
        bool found = false;
        Finder(const std::string &name, const std::map<const IRNode *, std::string> &owner) : name(name), owner(owner) {
        }
    } finder(alloc->name, owner);
    alloc->body.accept(&finder);
    return finder.found;
}

/** The accesses of each statement of the loop body to the shared allocation `alloc`, and
 * what else each loads and stores. */
std::vector<CollectAccesses> collect_accesses(const std::vector<Stmt> &stmts, const Allocate *alloc,
                                              const KernelContext &entry) {
    std::vector<CollectAccesses> collected;
    for (const Stmt &s : stmts) {
        collected.emplace_back(alloc->name, entry);
        s.accept(&collected.back());
    }
    return collected;
}

/** The pipelined Func whose production stores in statement `c` ("" for none): one at most. */
std::string stored_production(const CollectAccesses &c, const std::set<std::string> &pipelined, const For *loop) {
    std::string produced;
    for (const Access &a : c.accesses) {
        if (a.is_store && pipelined.count(a.producing)) {
            user_assert(produced.empty() || produced == a.producing)
                << pipeline_call(a.producing) << ": " << user_name(a.producing) << " and " << user_name(produced)
                << " are produced by one statement of " << describe_loop(loop)
                << "; give each its own compute_at() so that each can be prefetched.\n";
            produced = a.producing;
        }
    }
    return produced;
}

/** The tile of `produced` from the accesses of its producer statement `c`, which must be
 * stores of its own production, to bytes with constant bounds, and no other writes. */
StagedBuffer producer_tile(const std::string &produced, const CollectAccesses &c, int stages, const For *loop,
                           const Allocate *alloc) {
    StagedBuffer b;
    b.func = produced;
    b.stages = stages;
    b.begin = std::numeric_limits<int64_t>::max();
    b.end = std::numeric_limits<int64_t>::min();
    for (const Access &a : c.accesses) {
        user_assert(a.producing == produced && a.is_store)
            << pipeline_call(produced) << ": the producer of " << user_name(produced)
            << " reads GPU shared memory. A pipelined producer may only read global memory: "
            << "its copy of iteration k + stages - 1 runs before the consumers of iteration k.\n";
        user_assert(a.range.known)
            << pipeline_call(produced) << ": the place of " << user_name(produced)
            << "'s tile in shared memory changes with the iterations of " << describe_loop(loop)
            << " or has no constant bounds. Pipelining needs a tile of constant size and place; "
            << "split the reduction exactly (e.g. RDom(0, tile, 0, count)) instead of guarding a tail.\n";
        b.begin = std::min(b.begin, a.range.lo);
        b.end = std::max(b.end, a.range.hi + 1);
    }
    user_assert(c.stored.empty()) << pipeline_call(produced) << ": the producer of " << user_name(produced)
                                  << " also writes " << *c.stored.begin()
                                  << "; a pipelined producer may only write its own shared tile.\n";
    debug(2) << "alcop: " << produced << " occupies bytes [" << b.begin << ", " << b.end << ") of " << alloc->name
             << " in " << describe_loop(loop) << "\n";
    return b;
}

/** The role of each statement of `body` (a barrier, the producer of a pipelined Func, or
 * compute), and the tile of each producer. */
std::map<std::string, StagedBuffer> classify_statements(LoopBody &body, const std::vector<CollectAccesses> &collected,
                                                        const std::set<std::string> &pipelined,
                                                        const std::map<std::string, PipelineRequest> &requests,
                                                        const For *loop, const Allocate *alloc) {
    std::map<std::string, StagedBuffer> buffers;
    for (size_t i = 0; i < body.stmts.size(); i++) {
        const Stmt &s = body.stmts[i];
        const std::string produced = stored_production(collected[i], pipelined, loop);
        if (is_barrier(s)) {
            body.roles.push_back(StmtRole::Barrier);
        } else if (!produced.empty() || !first_produced(s, pipelined).empty()) {
            user_assert(!produced.empty())
                << pipeline_call(first_produced(s, pipelined)) << ": " << user_name(first_produced(s, pipelined))
                << " does not store into the kernel's GPU shared allocation in " << describe_loop(loop)
                << ". Level::Shared needs store_in(MemoryType::GPUShared).\n";
            user_assert(!buffers.count(produced))
                << pipeline_call(produced) << ": " << user_name(produced) << " is produced more than once in "
                << describe_loop(loop) << ". Was a loop inside it, the one it is computed at, unrolled? Leave "
                << "that loop serial: the pass pipelines its iterations, which unrolling removes.\n";
            buffers[produced] = producer_tile(produced, collected[i], requests.at(produced).stages, loop, alloc);
            body.roles.push_back(StmtRole::Producer);
        } else {
            body.roles.push_back(StmtRole::Compute);
        }
        body.produced.push_back(produced);
    }
    return buffers;
}

/** Read-after-write: a producer runs stages - 1 iterations early, so it must not read
 * anything the loop writes. */
void check_producers_read_nothing_written(const LoopBody &body, const std::vector<CollectAccesses> &collected,
                                          const For *loop) {
    std::set<std::string> stored_in_loop;
    for (const CollectAccesses &c : collected) {
        stored_in_loop.insert(c.stored.begin(), c.stored.end());
    }
    for (size_t i = 0; i < body.stmts.size(); i++) {
        if (body.roles[i] != StmtRole::Producer) continue;
        for (const std::string &name : collected[i].loaded) {
            user_assert(!stored_in_loop.count(name))
                << pipeline_call(body.produced[i]) << ": the producer of " << user_name(body.produced[i]) << " reads "
                << name << ", which " << describe_loop(loop)
                << " writes. Prefetching it would read a value before it is written.\n";
        }
    }
}

/** The tiles must not overlap: every access is told apart by the tile it lies in. */
void check_tiles_apart(const std::map<std::string, StagedBuffer> &buffers) {
    for (const auto &a : buffers) {
        for (const auto &b : buffers) {
            user_assert(a.first == b.first || a.second.end <= b.second.begin || b.second.end <= a.second.begin)
                << pipeline_call(a.first) << ": the shared tiles of " << user_name(a.first) << " and "
                << user_name(b.first) << " cannot be told apart (their bounded ranges, bytes [" << a.second.begin
                << ", " << a.second.end << ") and [" << b.second.begin << ", " << b.second.end
                << "), overlap). This happens when a "
                << "tile's copy is guarded by a thread predicate that is not a whole number of rows of the "
                << "thread block; make the copy's thread count divide the tile.\n";
        }
    }
}

/** The pipelined buffer each access of the loop body belongs to (`owner`): a producer's, its
 * own; a consumer's, the tile it lies in, which must be produced before and not written there.
 * `has_other_buffers` is set where an access lies in no tile. */
void assign_owners(const LoopBody &body, const std::vector<CollectAccesses> &collected,
                   const std::map<std::string, StagedBuffer> &buffers, const For *loop,
                   std::map<const IRNode *, std::string> &owner, bool &has_other_buffers) {
    std::set<std::string> seen_produced;
    for (size_t i = 0; i < body.stmts.size(); i++) {
        if (body.roles[i] == StmtRole::Producer) {
            seen_produced.insert(body.produced[i]);
            for (const Access &a : collected[i].accesses) {
                owner[a.node] = body.produced[i];
            }
            continue;
        }
        for (const Access &a : collected[i].accesses) {
            std::string found;
            for (const auto &b : buffers) {
                const StagedBuffer &buf = b.second;
                if (!a.range.known || a.range.overlaps(buf.begin, buf.end)) {
                    user_assert(a.range.known && a.range.inside(buf.begin, buf.end))
                        << pipeline_call(buf.func) << ": an access to shared memory in " << describe_loop(loop) << " "
                        << (a.range.known ? "overlaps" : "cannot be bounded against") << " the tile of "
                        << user_name(buf.func) << " without lying inside it, so it cannot be "
                        << "told apart from " << user_name(buf.func) << ".\n";
                    found = buf.func;
                }
            }
            if (found.empty()) {
                has_other_buffers = true;
                continue;
            }
            user_assert(!a.is_store) << pipeline_call(found) << ": " << user_name(found)
                                     << " is written outside its producer "
                                     << "in " << describe_loop(loop) << ".\n";
            user_assert(seen_produced.count(found))
                << pipeline_call(found) << ": " << user_name(found) << " is read in " << describe_loop(loop)
                << " before it is produced there.\n";
            owner[a.node] = found;
        }
    }
}

/** Analyzes one streaming loop, phase by phase; raises the per-loop user errors of the header
 * comment. */
PipelineLoop analyze_loop(const For *loop, const Allocate *alloc, const KernelContext &entry,
                          const std::map<std::string, PipelineRequest> &requests, const std::vector<std::string> &funcs,
                          std::map<const IRNode *, std::string> &owner, bool &has_other_buffers) {
    PipelineLoop result;
    result.loop = loop;
    const std::set<std::string> pipelined(funcs.begin(), funcs.end());
    cut_loop_body(loop->body, pipelined, result.body.stmts);
    const std::vector<CollectAccesses> collected = collect_accesses(result.body.stmts, alloc, entry);
    const std::map<std::string, StagedBuffer> buffers =
        classify_statements(result.body, collected, pipelined, requests, loop, alloc);
    check_producers_read_nothing_written(result.body, collected, loop);
    check_tiles_apart(buffers);
    assign_owners(result.body, collected, buffers, loop, owner, has_other_buffers);
    for (const std::string &f : funcs) {
        user_assert(buffers.count(f)) << pipeline_call(f) << ": " << user_name(f)
                                      << " is not stored in the kernel's GPU shared memory. "
                                      << "Level::Shared needs store_in(MemoryType::GPUShared).\n";
        result.buffers.push_back(buffers.at(f));
    }
    return result;
}

}  // namespace

PipelineAnalysis analyze_pipelines(const Stmt &s, const std::map<std::string, PipelineRequest> &all_requests) {
    std::map<std::string, PipelineRequest> requests;
    for (const auto &r : all_requests) {
        if (r.second.level != Level::Shared) continue;  // see FragmentAnalysis.h
        if (r.second.stages > 1) requests.insert(r);
    }

    PipelineAnalysis result;
    if (requests.empty()) return result;

    FindStreamingLoops finder(requests);
    s.accept(&finder);
    for (const auto &b : finder.produced_at_block_level) {
        const std::string &f = b.first;
        user_assert(b.second == 1)
            << pipeline_call(f) << ": " << user_name(f) << " is produced " << b.second << " times at the GPU "
            << "block level, in no serial loop. Was the loop it is computed at unrolled? Leave that loop "
            << "serial: the pass pipelines its iterations, which unrolling removes.\n";
        user_error << pipeline_call(f) << ": " << user_name(f) << " is computed at the GPU block level, "
                   << "not inside a serial loop. compute_at() it inside the serial (reduction) loop "
                   << "whose iterations it should be prefetched across.\n";
    }

    // Group the requested Funcs by streaming loop, and the loops by allocation.
    std::map<const For *, std::vector<std::string>> funcs_of_loop;
    for (const auto &r : requests) {
        auto it = finder.produced_in.find(r.first);
        user_assert(it != finder.produced_in.end())
            << pipeline_call(r.first) << ": " << user_name(r.first) << " is not produced in the lowered "
            << "pipeline (is it inlined, or not part of this Pipeline?). Pipelining needs " << user_name(r.first)
            << " computed inside a serial loop under gpu_blocks.\n";
        for (const For *loop : it->second) {
            auto &funcs = funcs_of_loop[loop];
            if (std::find(funcs.begin(), funcs.end(), r.first) == funcs.end()) {
                funcs.push_back(r.first);
            }
        }
        for (const auto &loops : finder.consumed_in[r.first]) {
            bool inside = false;
            for (const For *l : it->second) {
                inside = inside || std::find(loops.begin(), loops.end(), l) != loops.end();
            }
            user_assert(inside)
                << pipeline_call(r.first) << ": " << user_name(r.first) << " is read after the loop that "
                << "produces it; its slots rotate, so only that loop may read it (compute_at and store_at "
                << "it inside the loop).\n";
        }
    }

    for (const For *loop : finder.loop_order) {
        auto l = funcs_of_loop.find(loop);
        if (l == funcs_of_loop.end()) continue;
        const Allocate *alloc = finder.entry_allocation.at(loop);
        user_assert(alloc) << pipeline_call(l->second.front()) << ": " << user_name(l->second.front())
                           << " is not stored in "
                           << "GPU shared memory. Level::Shared needs store_in(MemoryType::GPUShared).\n";
        auto k = std::find_if(result.kernels.begin(), result.kernels.end(),
                              [&](const KernelPipelines &k) { return k.allocation == alloc; });
        if (k == result.kernels.end()) {
            result.kernels.emplace_back();
            k = result.kernels.end() - 1;
            k->allocation = alloc;
            k->device = finder.loop_device.at(loop);
            if (alloc->extents.size() == 1) {
                const Expr bytes = simplify(alloc->extents[0] * alloc->type.bytes());
                if (const int64_t *b = as_const_int(bytes)) k->allocation_bytes = *b;
            }
        }
        k->loops.push_back(
            analyze_loop(loop, alloc, finder.entry.at(loop), requests, l->second, result.owner, k->has_other_buffers));
    }
    for (KernelPipelines &k : result.kernels) {
        k.has_other_buffers = k.has_other_buffers || has_unowned_access(k.allocation, result.owner);
    }
    return result;
}

}  // namespace alcop
