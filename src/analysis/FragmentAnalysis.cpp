#include "analysis/FragmentAnalysis.h"

#include "Error.h"

#include <algorithm>
#include <set>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Where each requested fragment is produced, consumed and stored. */
class FindFragmentLoops : public IRVisitor {
    using IRVisitor::visit;

    const std::map<std::string, PipelineRequest> &requests;
    const std::set<std::string> &shared;  ///< Funcs pipelined at the shared level
    int kernel_depth = 0, thread_depth = 0;
    std::vector<const For *> serial;  ///< serial loops inside the thread loops, outermost first
    /** Per-thread allocations in scope, with the number of serial loops around each. */
    std::vector<std::pair<const Allocate *, size_t>> per_thread;

    void visit(const For *op) override {
        const bool block = op->for_type == ForType::GPUBlock, thread = op->for_type == ForType::GPUThread;
        const bool step_loop = thread_depth > 0 && op->for_type == ForType::Serial;
        kernel_depth += block;
        thread_depth += thread;
        if (step_loop) serial.push_back(op);
        IRVisitor::visit(op);
        if (step_loop) serial.pop_back();
        kernel_depth -= block;
        thread_depth -= thread;
    }

    void visit(const Allocate *op) override {
        if (thread_depth > 0) per_thread.emplace_back(op, serial.size());
        IRVisitor::visit(op);
        if (thread_depth > 0) per_thread.pop_back();
    }

    void visit(const ProducerConsumer *op) override {
        if (op->is_producer && shared.count(op->name) && !serial.empty()) {
            streaming.insert(serial.back());
        }
        if (!requests.count(op->name)) {
            IRVisitor::visit(op);
            return;
        }
        const std::string &f = op->name;
        if (!op->is_producer) {
            consumed_in[f].push_back(serial);
            IRVisitor::visit(op);
            return;
        }
        user_assert(kernel_depth > 0 && thread_depth > 0)
            << pipeline_call(f, Level::Register) << ": " << user_name(f) << " is not computed inside the "
            << "gpu_threads loops of a kernel. Register slots are per thread: compute_at() " << user_name(f)
            << " inside the thread loops, in the serial loop whose steps it should be prefetched across.\n";
        user_assert(!serial.empty())
            << pipeline_call(f, Level::Register) << ": " << user_name(f) << " is not computed inside a serial "
            << "loop within the GPU threads. compute_at() it inside the serial (reduction) loop whose steps "
            << "it should be prefetched across.\n";
        const For *loop = serial.back();
        const std::set<std::string> stored = stored_buffers(op->body);
        user_assert(stored.size() == 1) << pipeline_call(f, Level::Register) << ": the producer of " << user_name(f)
                                        << " writes " << stored.size()
                                        << " buffers; a fragment's producer writes only its own registers.\n";
        const Allocate *storage = nullptr;
        for (auto it = per_thread.rbegin(); it != per_thread.rend() && !storage; ++it) {
            if (it->first->name != *stored.begin()) continue;
            user_assert(it->second < serial.size())
                << pipeline_call(f, Level::Register) << ": " << user_name(f) << " is stored inside "
                << describe_loop(loop) << "; its registers must live across the loop's steps "
                << "(store_at() it outside the loop, or leave store_at() to Halide).\n";
            storage = it->first;
        }
        user_assert(storage && storage->memory_type != MemoryType::GPUShared &&
                    storage->memory_type != MemoryType::GPUTexture && storage->memory_type != MemoryType::Heap)
            << pipeline_call(f, Level::Register) << ": " << user_name(f) << " is not stored in per-thread "
            << "memory. Level::Register needs store_in(MemoryType::Register) on a Func computed inside "
            << "the GPU thread loops.\n";
        produced_in[f].push_back(loop);
        this->storage[{f, loop}] = storage;
        if (std::find(loop_order.begin(), loop_order.end(), loop) == loop_order.end()) {
            loop_order.push_back(loop);
        }
        IRVisitor::visit(op);
    }

public:
    FindFragmentLoops(const std::map<std::string, PipelineRequest> &requests, const std::set<std::string> &shared)
        : requests(requests), shared(shared) {
    }

    std::set<const For *> streaming;  ///< serial loops that produce a shared-level pipelined Func
    std::vector<const For *> loop_order;
    std::map<std::string, std::vector<const For *>> produced_in;
    std::map<std::string, std::vector<std::vector<const For *>>> consumed_in;
    std::map<std::pair<std::string, const For *>, const Allocate *> storage;  ///< per Func and loop
};

/** The buffers one statement of the loop body loads and stores, and the stores made
 * outside any produce node of a fragment. */
class CollectBuffers : public IRVisitor {
    using IRVisitor::visit;

    const std::set<std::string> &fragments;
    int producing = 0;

    void visit(const ProducerConsumer *op) override {
        const bool p = op->is_producer && fragments.count(op->name);
        producing += p;
        IRVisitor::visit(op);
        producing -= p;
    }
    void visit(const Load *op) override {
        loaded.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        stored.insert(op->name);
        if (!producing) stored_outside_producers.insert(op->name);
        IRVisitor::visit(op);
    }

public:
    explicit CollectBuffers(const std::set<std::string> &fragments) : fragments(fragments) {
    }
    std::set<std::string> loaded, stored, stored_outside_producers;
};

/** The statement of a streaming loop's body that is one step of its fragments: reached
 * through lets, consume markers and the one statement of each block that produces fragments,
 * it is the block in which the fragments' produce nodes stand (with their consumers, which
 * Halide puts next to them). Undefined when anything else (an if, a loop) lies on the way. */
Stmt one_step_body(const Stmt &loop_body, const std::set<std::string> &fragments) {
    auto is_fragment_producer = [&](const Stmt &s) {
        const ProducerConsumer *pc = s.as<ProducerConsumer>();
        return pc && pc->is_producer && fragments.count(pc->name);
    };
    Stmt s = loop_body;
    while (s.defined()) {
        if (const LetStmt *l = s.as<LetStmt>()) {
            s = l->body;
        } else if (const ProducerConsumer *pc = s.as<ProducerConsumer>(); pc && !pc->is_producer) {
            s = pc->body;
        } else if (s.as<Block>()) {
            std::vector<Stmt> pieces;
            for (Stmt b = s; b.defined();) {
                const Block *block = b.as<Block>();
                pieces.push_back(block ? block->first : b);
                b = block ? block->rest : Stmt();
            }
            Stmt holder;
            int holders = 0;
            for (const Stmt &p : pieces) {
                if (is_fragment_producer(p)) return s;
                if (!first_produced(p, fragments).empty()) {
                    holder = p;
                    holders++;
                }
            }
            if (holders != 1) return Stmt();
            s = holder;
        } else {
            return Stmt();
        }
    }
    return Stmt();
}

FragmentLoop analyze_loop(const For *loop, const std::vector<std::string> &funcs,
                          const std::map<std::string, PipelineRequest> &requests,
                          const std::map<std::pair<std::string, const For *>, const Allocate *> &storage,
                          bool streaming) {
    FragmentLoop result;
    result.loop = loop;
    const std::string &first = funcs.front();
    const std::set<std::string> fragment_funcs(funcs.begin(), funcs.end());
    const Expr extent = simplify(loop->extent);
    const int64_t *e = as_const_int(extent);
    if (streaming) {
        // The loop is the shared level's: the fragments are one step of it, never unrolled.
        result.one_step = one_step_body(loop->body, fragment_funcs);
        user_assert(result.one_step.defined())
            << pipeline_call(first, Level::Register) << ": " << user_name(first) << " is produced in "
            << describe_loop(loop) << ", which the shared level pipelines, but under an if or a loop "
            << "there. Compute " << user_name(first) << " at a serial loop of constant extent inside it.\n";
    }
    user_assert(e || result.one_step.defined())
        << pipeline_call(first, Level::Register) << ": " << describe_loop(loop) << " has no constant "
        << "extent (" << loop->extent << "). The pass unrolls it after pipelining, so that every register slot "
        << "has a constant index: split it by a constant factor and compute " << user_name(first)
        << " at the inner loop.\n";
    result.extent = result.one_step.defined() ? 1 : (int)*e;
    result.stages = requests.at(first).stages;

    std::map<std::string, std::string> func_of_buffer;
    for (const std::string &f : funcs) {
        user_assert(requests.at(f).stages == result.stages)
            << pipeline_call(f, Level::Register) << ": " << user_name(f) << " has " << requests.at(f).stages
            << " stages but " << user_name(first) << ", pipelined in the same loop " << loop->name << ", has "
            << result.stages << ". Fragments of one loop share one prefetch distance; give them the same "
            << "stage count.\n";
        const Allocate *a = storage.at({f, loop});
        const Expr elements = simplify(a->extents.empty() ? Expr(1) : a->extents[0]);
        const int64_t *n = as_const_int(elements);
        user_assert(a->extents.size() <= 1 && n)
            << pipeline_call(f, Level::Register) << ": " << user_name(f) << "'s registers " << a->name
            << " have no constant size; register slots need one (bound_extent() its dimensions).\n";
        result.fragments.push_back({f, a, *n});
        func_of_buffer[a->name] = f;
    }
    // The prefetch runs at most one whole loop ahead (into the next iteration of the loop
    // around, when composed): d = stages - 1 <= extent.
    user_assert(result.stages - 1 <= result.extent)
        << pipeline_call(first, Level::Register) << ": " << result.stages << " register stages prefetch "
        << result.stages - 1 << " steps ahead, more than the " << result.extent << " steps of " << describe_loop(loop)
        << ". Use at most " << result.extent + 1 << " stages.\n";

    cut_loop_body(result.one_step.defined() ? result.one_step : loop->body, fragment_funcs, result.body.stmts);
    std::set<std::string> produced, stored_in_loop;
    std::vector<CollectBuffers> collected;
    for (const Stmt &s : result.body.stmts) {
        collected.emplace_back(fragment_funcs);
        s.accept(&collected.back());
        stored_in_loop.insert(collected.back().stored.begin(), collected.back().stored.end());
    }
    for (size_t i = 0; i < result.body.stmts.size(); i++) {
        const Stmt &s = result.body.stmts[i];
        const CollectBuffers &c = collected[i];
        user_assert(!is_barrier(s))
            << pipeline_call(first, Level::Register) << ": " << describe_loop(loop) << " holds a "
            << "barrier. Register pipelining is per thread and moves loads across the loop's steps; keep "
            << "block-wide synchronization out of the loop.\n";
        const std::string f = first_produced(s, fragment_funcs);
        for (const std::string &name : c.stored_outside_producers) {
            user_assert(!func_of_buffer.count(name))
                << pipeline_call(func_of_buffer.at(name), Level::Register) << ": " << user_name(func_of_buffer.at(name))
                << " is written outside its producer in " << describe_loop(loop) << ".\n";
        }
        for (const std::string &name : c.loaded) {
            auto it = func_of_buffer.find(name);
            user_assert(it == func_of_buffer.end() || produced.count(it->second) || it->second == f)
                << pipeline_call(it->second, Level::Register) << ": " << user_name(it->second) << " is read in "
                << describe_loop(loop) << " before it is produced there.\n";
        }
        if (f.empty()) {
            result.body.roles.push_back(StmtRole::Compute);
            result.body.produced.emplace_back();
            continue;
        }
        user_assert(!produced.count(f)) << pipeline_call(f, Level::Register) << ": " << user_name(f)
                                        << " is produced more than once in " << describe_loop(loop) << ".\n";
        produced.insert(f);
        for (const std::string &name : c.loaded) {
            user_assert(!stored_in_loop.count(name) || name == storage.at({f, loop})->name)
                << pipeline_call(f, Level::Register) << ": the producer of " << user_name(f) << " reads " << name
                << ", which " << describe_loop(loop) << " writes. Prefetching it would read a value before "
                << "it is written.\n";
        }
        result.body.roles.push_back(StmtRole::Producer);
        result.body.produced.push_back(f);
    }
    return result;
}

}  // namespace

std::vector<FragmentLoop> analyze_fragments(const Stmt &s, const std::map<std::string, PipelineRequest> &all) {
    std::map<std::string, PipelineRequest> requests;
    std::set<std::string> shared;
    for (const auto &r : all) {
        if (r.second.level == Level::Register && r.second.stages > 1) requests.insert(r);
        if (r.second.level == Level::Shared && r.second.stages > 1) shared.insert(r.first);
    }
    std::vector<FragmentLoop> result;
    if (requests.empty()) return result;

    FindFragmentLoops finder(requests, shared);
    s.accept(&finder);

    std::map<const For *, std::vector<std::string>> funcs_of_loop;
    for (const auto &r : requests) {
        const std::string &f = r.first;
        auto it = finder.produced_in.find(f);
        user_assert(it != finder.produced_in.end())
            << pipeline_call(f, Level::Register) << ": " << user_name(f) << " is not produced in the lowered "
            << "pipeline (is it inlined, or not part of this Pipeline?). Register pipelining needs " << user_name(f)
            << " computed inside a serial loop within the GPU threads.\n";
        // One produce node per loop it is in (specializations give one loop each); more
        // in one loop mean that a loop inside it was unrolled.
        for (const For *loop : it->second) {
            const size_t n = std::count(it->second.begin(), it->second.end(), loop);
            user_assert(n == 1) << pipeline_call(f, Level::Register) << ": " << user_name(f) << " is produced " << n
                                << " times in the body of " << describe_loop(loop)
                                << ". Was the loop it is computed at unrolled? "
                                << "Leave that loop serial: the pass unrolls it itself, after pipelining.\n";
            auto &funcs = funcs_of_loop[loop];
            if (std::find(funcs.begin(), funcs.end(), f) == funcs.end()) funcs.push_back(f);
        }
        for (const auto &loops : finder.consumed_in[f]) {
            bool inside = false;
            for (const For *l : it->second) {
                inside = inside || std::find(loops.begin(), loops.end(), l) != loops.end();
            }
            user_assert(inside) << pipeline_call(f, Level::Register) << ": " << user_name(f)
                                << " is read after the loop that "
                                << "produces it; its slots rotate, so only that loop may read it.\n";
        }
    }
    for (const For *loop : finder.loop_order) {
        auto l = funcs_of_loop.find(loop);
        if (l != funcs_of_loop.end()) {
            result.push_back(analyze_loop(loop, l->second, requests, finder.storage, finder.streaming.count(loop)));
        }
    }
    return result;
}

std::set<std::string> stored_buffers(const Stmt &s) {
    class Stores : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Store *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }

    public:
        std::set<std::string> names;
    } stores;
    if (s.defined()) s.accept(&stores);
    return stores.names;
}

}  // namespace alcop
