#include "analysis/PipelineHazards.h"

#include "analysis/KernelContext.h"
#include "codegen/AsyncCopyMarkers.h"
#include "copy/CopyLowering.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// Hazards are tracked per granule of 2 bytes (a 1-byte access takes its granule).
constexpr int granule_bytes = 2;

// A serial loop runs at most this many trips (see the header).
constexpr int64_t max_trips = 12;

/** Raised where the walk meets something it cannot evaluate; the kernel is then unchecked. */
struct Unevaluable {
    std::string what;
};

/** A value per vector lane, kept inline (the walk evaluates millions of them). */
class Value {
public:
    static constexpr size_t max_lanes = 32;

    Value(std::initializer_list<int64_t> v)
        : n(v.size()) {
        std::copy(v.begin(), v.end(), lane);
    }
    explicit Value(size_t lanes, int64_t fill = 0)
        : n(lanes) {
        if (lanes > max_lanes) throw Unevaluable{"a vector of " + std::to_string(lanes) + " lanes"};
        std::fill(lane, lane + n, fill);
    }
    Value(const Value &o)
        : n(o.n) {
        std::copy(o.lane, o.lane + n, lane);
    }
    Value &operator=(const Value &o) {
        n = o.n;
        std::copy(o.lane, o.lane + n, lane);
        return *this;
    }
    size_t size() const {
        return n;
    }
    int64_t &operator[](size_t i) {
        return lane[i];
    }
    int64_t operator[](size_t i) const {
        return lane[i];
    }
    /** Lane i, a scalar standing for all of them. */
    int64_t broadcast(size_t i) const {
        return n == 1 ? lane[0] : lane[i];
    }
    int64_t *begin() {
        return lane;
    }
    int64_t *end() {
        return lane + n;
    }
    const int64_t *begin() const {
        return lane;
    }
    const int64_t *end() const {
        return lane + n;
    }

private:
    size_t n;
    int64_t lane[max_lanes];
};

/** Bindings of the walk: lets, loop variables, thread and block indices, with the buffers'
 * shapes as the fallback (see the header). */
class Env {
    std::unordered_map<std::string, std::vector<std::optional<Value>>> bound;  // innermost last
    const std::map<std::string, int64_t> &values;
    const int64_t extent;

    std::optional<int64_t> shape(const std::string &name) const {
        auto it = values.find(name);
        if (it != values.end()) return it->second;
        for (const char *field : {".min.", ".extent.", ".stride."}) {
            const size_t at = name.rfind(field);
            if (at == std::string::npos) continue;
            const std::string rest = name.substr(at + std::string(field).size());
            if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) continue;
            const int dim = std::stoi(rest);
            if (field[1] == 'm') return 0;
            if (field[1] == 'e') return extent_of(dim);
            const std::string buffer = name.substr(0, at);
            int64_t stride = 1;
            for (int d = 0; d < dim; d++) {
                auto e = values.find(buffer + ".extent." + std::to_string(d));
                stride *= e != values.end() ? e->second : extent_of(d);
            }
            return stride;
        }
        return std::nullopt;
    }

    int64_t extent_of(int dim) const {
        return hazard_check_extent(extent, dim);
    }

public:
    Env(const std::map<std::string, int64_t> &values, int64_t extent) : values(values), extent(extent) {
    }
    void push(const std::string &name, std::optional<Value> v) {
        bound[name].push_back(std::move(v));
    }
    void pop(const std::string &name) {
        bound.find(name)->second.pop_back();  // the empty entry stays: loops push it again
    }
    std::optional<Value> lookup(const std::string &name) const {
        auto it = bound.find(name);
        if (it != bound.end() && !it->second.empty() && it->second.back()) return it->second.back();
        if (std::optional<int64_t> v = shape(name)) return Value{*v};
        return std::nullopt;
    }
};

int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0) return 0;  // Halide: x / 0 == 0
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    const int64_t r = a % b;
    return r < 0 ? r + std::abs(b) : r;
}

/** Integer arithmetic on indices and conditions; nullopt for anything else (a load, a float). */
class Evaluator {
    Env &env;

    template<typename F>
    std::optional<Value> binary(const Expr &a, const Expr &b, F f) {
        std::optional<Value> x = eval(a);
        if (!x) return std::nullopt;
        std::optional<Value> y = eval(b);
        if (!y) return std::nullopt;
        const size_t lanes = std::max(x->size(), y->size());
        Value r(lanes);
        for (size_t i = 0; i < lanes; i++) {
            r[i] = f(x->broadcast(i), y->broadcast(i));
        }
        return r;
    }
    /** `v` wrapped to the integer type `t`. */
    static Value wrap(Value v, const Type &t) {
        if (t.bits() >= 64 || t.is_bool()) return v;
        for (int64_t &x : v) {
            const uint64_t mask = (uint64_t(1) << t.bits()) - 1;
            uint64_t u = uint64_t(x) & mask;
            if (t.is_int() && (u >> (t.bits() - 1))) u |= ~mask;
            x = int64_t(u);
        }
        return v;
    }

public:
    explicit Evaluator(Env &env) : env(env) {
    }

    std::optional<Value> eval(const Expr &e) {
        if (const IntImm *i = e.as<IntImm>()) return Value{i->value};
        if (const UIntImm *u = e.as<UIntImm>()) return Value{int64_t(u->value)};
        if (const Variable *v = e.as<Variable>()) return env.lookup(v->name);
        if (const Add *op = e.as<Add>()) return binary(op->a, op->b, [](int64_t a, int64_t b) { return a + b; });
        if (const Sub *op = e.as<Sub>()) return binary(op->a, op->b, [](int64_t a, int64_t b) { return a - b; });
        if (const Mul *op = e.as<Mul>()) return binary(op->a, op->b, [](int64_t a, int64_t b) { return a * b; });
        if (const Div *op = e.as<Div>()) return binary(op->a, op->b, floor_div);
        if (const Mod *op = e.as<Mod>()) return binary(op->a, op->b, floor_mod);
        if (const Min *op = e.as<Min>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return std::min(a, b); });
        if (const Max *op = e.as<Max>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return std::max(a, b); });
        if (const EQ *op = e.as<EQ>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a == b); });
        if (const NE *op = e.as<NE>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a != b); });
        if (const LT *op = e.as<LT>()) return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a < b); });
        if (const LE *op = e.as<LE>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a <= b); });
        if (const GT *op = e.as<GT>()) return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a > b); });
        if (const GE *op = e.as<GE>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a >= b); });
        if (const And *op = e.as<And>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a && b); });
        if (const Or *op = e.as<Or>())
            return binary(op->a, op->b, [](int64_t a, int64_t b) { return int64_t(a || b); });
        if (const Not *op = e.as<Not>()) {
            std::optional<Value> a = eval(op->a);
            if (!a) return std::nullopt;
            for (int64_t &x : *a) {
                x = !x;
            }
            return a;
        }
        if (const Select *op = e.as<Select>()) {
            std::optional<Value> c = eval(op->condition), t = eval(op->true_value), f = eval(op->false_value);
            if (!c || !t || !f) return std::nullopt;
            const size_t lanes = std::max({c->size(), t->size(), f->size()});
            Value r(lanes);
            for (size_t i = 0; i < lanes; i++) {
                r[i] = c->broadcast(i) ? t->broadcast(i) : f->broadcast(i);
            }
            return r;
        }
        if (const Ramp *op = e.as<Ramp>()) {
            std::optional<Value> base = eval(op->base), stride = eval(op->stride);
            if (!base || !stride || base->size() != 1 || stride->size() != 1) return std::nullopt;
            Value r(op->lanes);
            for (int i = 0; i < op->lanes; i++) {
                r[i] = (*base)[0] + i * (*stride)[0];
            }
            return r;
        }
        if (const Broadcast *op = e.as<Broadcast>()) {
            std::optional<Value> v = eval(op->value);
            if (!v || v->size() != 1) return std::nullopt;
            return Value(op->lanes, (*v)[0]);
        }
        if (const Cast *op = e.as<Cast>()) {
            if (!op->type.is_int_or_uint() || !op->value.type().is_int_or_uint()) return std::nullopt;
            std::optional<Value> v = eval(op->value);
            return v ? std::optional<Value>(wrap(*v, op->type)) : std::nullopt;
        }
        if (const Let *op = e.as<Let>()) {
            env.push(op->name, eval(op->value));
            std::optional<Value> v = eval(op->body);
            env.pop(op->name);
            return v;
        }
        if (const Call *op = e.as<Call>()) {
            if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::likely_if_innermost) ||
                op->is_intrinsic(Call::promise_clamped) || op->is_intrinsic(Call::unsafe_promise_clamped)) {
                return eval(op->args[0]);
            }
            if (op->is_intrinsic(Call::bitwise_and))
                return binary(op->args[0], op->args[1], [](int64_t a, int64_t b) { return a & b; });
            if (op->is_intrinsic(Call::bitwise_or))
                return binary(op->args[0], op->args[1], [](int64_t a, int64_t b) { return a | b; });
            if (op->is_intrinsic(Call::bitwise_xor))
                return binary(op->args[0], op->args[1], [](int64_t a, int64_t b) { return a ^ b; });
            if (op->is_intrinsic(Call::shift_left))
                return binary(op->args[0], op->args[1], [](int64_t a, int64_t b) { return a << b; });
            if (op->is_intrinsic(Call::shift_right))
                return binary(op->args[0], op->args[1], [](int64_t a, int64_t b) { return a >> b; });
            if (op->is_intrinsic(Call::bitwise_not)) {
                std::optional<Value> a = eval(op->args[0]);
                if (!a) return std::nullopt;
                for (int64_t &x : *a) {
                    x = ~x;
                }
                return wrap(*a, op->type);
            }
        }
        return std::nullopt;
    }

    int64_t scalar(const Expr &e, const char *what) {
        std::optional<Value> v = eval(e);
        if (!v || v->size() != 1) throw Unevaluable{std::string(what) + " " + to_string_of(e)};
        return (*v)[0];
    }

    static std::string to_string_of(const Expr &e) {
        std::ostringstream os;
        os << e;
        std::string s = os.str();
        return s.size() > 160 ? s.substr(0, 160) + "..." : s;
    }
};

/** A place in a thread's run: the barriers it has passed, then its order within them. */
struct Place {
    int phase = 0;
    int64_t step = 0;
    bool operator<(const Place &o) const {
        return std::tie(phase, step) < std::tie(o.phase, o.step);
    }
};

struct Write {
    int thread;
    Place issue, land;  // land: where it is written; for a pending copy, its issue until it lands
    int group;  // commit group of an asynchronous copy; -1 for a store
    std::string func;
    int at;  // BlockRun::places
};

struct Read {
    int thread;
    Place place;
    int at;  // BlockRun::places
};

/** Block 0 of one kernel, thread by thread. */
class BlockRun {
    Env &env;
    Evaluator eval;
    const std::set<std::string> &shared;  // the kernel's shared allocations

public:
    // The writes and reads of each granule, keyed by the allocation's index in `buffers` and
    // the granule.
    std::map<std::pair<int, int64_t>, std::vector<int>> writes_of, reads_of;
    std::vector<std::string> buffers;
    std::vector<std::string> places;  // the serial loops' values at events, e.g. "k=3"
    std::vector<Write> writes;
    std::vector<Read> reads;
    std::set<std::string> truncated;  // serial loops run for max_trips only

    BlockRun(Env &env, const std::set<std::string> &shared) : env(env), eval(env), shared(shared) {
    }

    /** Runs `body` (a kernel below its gpu_block loops) as thread `thread`, whose indices are
     * bound in the environment by the caller. */
    void run(const Stmt &body, int thread_id) {
        thread = thread_id;
        place = Place();
        committed = 0;
        pending.clear();
        loops.clear();
        funcs.clear();
        at = -1;
        walk(body);
        for (int w : pending) {
            writes[w].land = Place{std::numeric_limits<int>::max(), 0};
        }
    }

private:
    int thread = 0;
    Place place;
    int committed = 0;                                   // commit groups closed by this thread
    std::vector<int> pending;                            // its asynchronous writes not landed
    std::vector<std::pair<std::string, int64_t>> loops;  // enclosing serial loops
    std::vector<std::string> funcs;                      // enclosing producers
    int at = -1;                                         // where(), or -1 after a loop moved

    int buffer_id(const std::string &name) {
        auto it = std::find(buffers.begin(), buffers.end(), name);
        if (it != buffers.end()) return int(it - buffers.begin());
        buffers.push_back(name);
        return int(buffers.size()) - 1;
    }

    /** The index in `places` of where the thread is: recomputed when a loop moves. */
    int where() {
        if (at < 0) {
            places.push_back(describe_loops());
            at = int(places.size()) - 1;
        }
        return at;
    }
    std::string describe_loops() const {
        std::ostringstream os;
        for (size_t i = 0; i < loops.size(); i++) {
            os << (i ? ", " : "") << loops[i].first << "=" << loops[i].second;
        }
        return loops.empty() ? "outside the loops" : os.str();
    }

    /** The granules `index` (of accesses of type `t`) touches in `buffer`. */
    std::vector<int64_t> granules(const Expr &index, const Type &t) {
        std::optional<Value> lanes = eval.eval(index);
        if (!lanes) throw Unevaluable{"the index " + Evaluator::to_string_of(index)};
        const int64_t bytes = std::max(1, t.bytes());
        std::vector<int64_t> out;
        for (int64_t e : *lanes) {
            for (int64_t g = floor_div(e * bytes, granule_bytes); g <= floor_div(e * bytes + bytes - 1, granule_bytes);
                 g++) {
                out.push_back(g);
            }
        }
        return out;
    }

    void record_read(const std::string &buffer, const Expr &index, const Type &t) {
        place.step++;
        for (int64_t g : granules(index, t)) {
            reads_of[{buffer_id(buffer), g}].push_back((int)reads.size());
        }
        reads.push_back(Read{thread, place, where()});
    }

    /** Records the reads of shared memory in `e`, with its lets bound. */
    void reads_in(const Expr &e) {
        struct Reads : IRVisitor {
            BlockRun *run;
            using IRVisitor::visit;
            void visit(const Let *op) override {
                op->value.accept(this);
                run->env.push(op->name, run->eval.eval(op->value));
                op->body.accept(this);
                run->env.pop(op->name);
            }
            void visit(const Load *op) override {
                IRVisitor::visit(op);
                if (run->shared.count(op->name)) run->record_read(op->name, op->index, op->type);
            }
        } r;
        r.run = this;
        e.accept(&r);
    }

    void record_write(const Store *op) {
        reads_in(op->value);
        reads_in(op->index);
        place.step++;
        const bool async = copy_kind_of(op->value) == CopyKind::Async;
        const int w = (int)writes.size();
        for (int64_t g : granules(op->index, op->value.type())) {
            writes_of[{buffer_id(op->name), g}].push_back(w);
        }
        writes.push_back(Write{thread, place, place, async ? committed : -1,
                               funcs.empty() ? op->name : funcs.back(), where()});
        if (async) pending.push_back(w);
    }

    /** wait(n): every group but the newest n lands here. */
    void wait(int n) {
        place.step++;
        std::vector<int> still;
        for (int w : pending) {
            if (writes[w].group < committed - n) {
                writes[w].land = place;
            } else {
                still.push_back(w);
            }
        }
        pending.swap(still);
    }

    void walk(const Stmt &s) {
        if (!s.defined()) return;
        if (const Block *op = s.as<Block>()) {
            walk(op->first);
            walk(op->rest);
        } else if (const LetStmt *op = s.as<LetStmt>()) {
            reads_in(op->value);
            env.push(op->name, eval.eval(op->value));
            walk(op->body);
            env.pop(op->name);
        } else if (const For *op = s.as<For>()) {
            const int64_t min = eval.scalar(op->min, "the loop min of"),
                          extent = eval.scalar(op->extent, "the extent of");
            if (op->for_type == ForType::GPUThread) {
                // Bound by the caller; a thread outside this loop's range skips its body.
                const int64_t v = eval.scalar(Variable::make(Int(32), op->name), "the thread index");
                if (v >= min && v < min + extent) walk(op->body);
                return;
            }
            loops.emplace_back(op->name, 0);
            if (extent > max_trips) truncated.insert(op->name);
            for (int64_t i = min; i < min + std::min(extent, max_trips); i++) {
                loops.back().second = i;
                at = -1;
                env.push(op->name, Value{i});
                walk(op->body);
                env.pop(op->name);
            }
            loops.pop_back();
            at = -1;
        } else if (const IfThenElse *op = s.as<IfThenElse>()) {
            if (eval.scalar(op->condition, "the condition")) {
                walk(op->then_case);
            } else {
                walk(op->else_case);
            }
        } else if (const ProducerConsumer *op = s.as<ProducerConsumer>()) {
            if (op->is_producer) funcs.push_back(op->name);
            walk(op->body);
            if (op->is_producer) funcs.pop_back();
        } else if (const Allocate *op = s.as<Allocate>()) {
            walk(op->body);
        } else if (const Store *op = s.as<Store>()) {
            if (shared.count(op->name)) {
                record_write(op);
            } else {
                reads_in(op->value);
                reads_in(op->index);
            }
        } else if (const Evaluate *op = s.as<Evaluate>()) {
            const Call *c = op->value.as<Call>();
            if (c && c->is_intrinsic(Call::gpu_thread_barrier)) {
                place.phase++;
                place.step = 0;
            } else if (c && c->name == async_commit_name) {
                committed++;
            } else if (c && c->name == async_wait_name) {
                wait((int)eval.scalar(c->args.at(0), "the wait count"));
            } else {
                reads_in(op->value);
            }
        }
        // Nothing else in a lowered kernel (asserts, frees) touches shared memory.
    }
};

/** The gpu_thread loops of the nest under `s`, outermost first (Halide fuses them into one). */
std::vector<const For *> thread_loops(const Stmt &s) {
    std::vector<const For *> loops;
    struct First : IRVisitor {
        const For *loop = nullptr;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (!loop && op->for_type == ForType::GPUThread) loop = op;
            if (!loop) IRVisitor::visit(op);
        }
    };
    for (Stmt at = s;;) {
        First first;
        at.accept(&first);
        if (!first.loop) return loops;
        loops.push_back(first.loop);
        at = first.loop->body;
    }
}

std::set<std::string> shared_allocations(const Stmt &s) {
    std::set<std::string> names;
    struct V : IRVisitor {
        std::set<std::string> *names;
        using IRVisitor::visit;
        void visit(const Allocate *op) override {
            if (op->memory_type == MemoryType::GPUShared) names->insert(op->name);
            IRVisitor::visit(op);
        }
    } v;
    v.names = &names;
    s.accept(&v);
    return names;
}

/** The hazards between the recorded writes and reads, one per kind, Func and pair of places. */
std::vector<PipelineHazard> hazards_of(const BlockRun &run) {
    std::map<std::tuple<int, std::string, std::string, std::string>, PipelineHazard> found;
    for (const auto &[granule, readers] : run.reads_of) {
        auto w_it = run.writes_of.find(granule);
        if (w_it == run.writes_of.end()) continue;
        for (int wi : w_it->second) {
            const Write &w = run.writes[wi];
            for (int ri : readers) {
                const Read &r = run.reads[ri];
                const bool hazard = r.thread == w.thread ?
                                        (w.issue < r.place && r.place < w.land) :
                                        (r.place.phase >= w.issue.phase && r.place.phase <= w.land.phase);
                if (!hazard) continue;
                PipelineHazard h;
                h.kind = r.place.phase == w.issue.phase && r.place.step < w.issue.step ?
                             PipelineHazard::Kind::WriteAfterRead :
                             PipelineHazard::Kind::ReadAfterWrite;
                h.func = w.func;
                h.buffer = run.buffers[granule.first];
                h.byte = granule.second * granule_bytes;
                h.reader = r.thread;
                h.writer = w.thread;
                h.read_at = run.places[r.at];
                h.write_at = run.places[w.at];
                h.read_phase = r.place.phase;
                h.write_phase = w.issue.phase;
                h.land_phase = w.land.phase;
                found.emplace(std::make_tuple((int)h.kind, h.func, h.read_at, h.write_at), h);
            }
        }
    }
    std::vector<PipelineHazard> out;
    for (auto &[key, h] : found) {
        out.push_back(h);
    }
    return out;
}

/** Walks the host code to each kernel, binding what it can; runs block 0 of each. */
class Kernels {
    Env env;
    Evaluator eval;
    const int64_t extent;

public:
    std::vector<KernelHazards> result;
    std::map<const For *, std::string> names;  ///< kernel_names()

    Kernels(const std::map<std::string, int64_t> &values, int64_t extent)
        : env(values, extent), eval(env), extent(extent) {
    }

    void walk(const Stmt &s) {
        if (!s.defined()) return;
        if (const Block *op = s.as<Block>()) {
            walk(op->first);
            walk(op->rest);
        } else if (const LetStmt *op = s.as<LetStmt>()) {
            env.push(op->name, eval.eval(op->value));
            walk(op->body);
            env.pop(op->name);
        } else if (const For *op = s.as<For>()) {
            if (op->for_type == ForType::GPUBlock) {
                result.push_back(run_kernel(op));
                return;
            }
            // A host loop around kernels: its first iteration.
            env.push(op->name, eval.eval(op->min));
            walk(op->body);
            env.pop(op->name);
        } else if (const IfThenElse *op = s.as<IfThenElse>()) {
            std::optional<Value> c = eval.eval(op->condition);
            if (!c || (*c)[0]) walk(op->then_case);
            if (!c || !(*c)[0]) walk(op->else_case);
        } else if (const ProducerConsumer *op = s.as<ProducerConsumer>()) {
            walk(op->body);
        } else if (const Allocate *op = s.as<Allocate>()) {
            walk(op->body);
        }
    }

private:
    KernelHazards run_kernel(const For *kernel) {
        KernelHazards k;
        k.kernel = names.at(kernel);
        k.extent = extent;
        // Block 0: every gpu_block loop at its min.
        std::vector<std::string> bound;
        Stmt body = kernel;
        while (const For *f = body.as<For>()) {
            if (f->for_type != ForType::GPUBlock) break;
            std::optional<Value> min = eval.eval(f->min);
            env.push(f->name, min ? min : std::optional<Value>(Value{0}));
            bound.push_back(f->name);
            body = f->body;
        }
        const std::set<std::string> shared = shared_allocations(body);
        try {
            std::vector<const For *> loops = thread_loops(body);
            std::vector<int64_t> mins, extents;
            int64_t threads = 1;
            for (const For *f : loops) {
                mins.push_back(eval.scalar(f->min, "the thread loop min of"));
                extents.push_back(eval.scalar(f->extent, "the thread loop extent of"));
                threads *= extents.back();
            }
            BlockRun run(env, shared);
            for (int64_t t = 0; t < threads; t++) {
                // Linear id t, the innermost loop fastest.
                int64_t rest = t;
                for (size_t i = loops.size(); i-- > 0;) {
                    env.push(loops[i]->name, Value{mins[i] + rest % extents[i]});
                    rest /= extents[i];
                }
                run.run(body, (int)t);
                for (const For *f : loops) {
                    env.pop(f->name);
                }
            }
            k.threads = threads;
            k.reads = (int64_t)run.reads.size();
            k.writes = (int64_t)run.writes.size();
            k.hazards = hazards_of(run);
            k.truncated_loops = (int)run.truncated.size();
            k.checked = true;
        } catch (const Unevaluable &u) {
            k.reason = "could not evaluate " + u.what;
        }
        for (auto it = bound.rbegin(); it != bound.rend(); ++it) {
            env.pop(*it);
        }
        return k;
    }
};

}  // namespace

std::string PipelineHazard::to_string() const {
    std::ostringstream os;
    os << (kind == Kind::ReadAfterWrite ? "read-after-write" : "write-after-read") << " on " << func << " (" << buffer
       << ", byte " << byte << "): thread " << reader << " reads at " << read_at << " (after " << read_phase
       << " barriers); thread " << writer << "'s copy, issued at " << write_at << " (after " << write_phase
       << " barriers), ";
    if (land_phase == std::numeric_limits<int>::max()) {
        os << "is never waited for";
    } else {
        os << "lands after " << land_phase << " barriers";
    }
    return os.str();
}

std::vector<KernelHazards> find_pipeline_hazards(const Stmt &s, int64_t extent,
                                                 const std::map<std::string, int64_t> &values) {
    Kernels kernels(values, extent);
    kernels.names = kernel_names(s);
    kernels.walk(s);
    return kernels.result;
}

SpecializedSizes specialized_sizes(const Stmt &s) {
    struct Conditions : IRVisitor {
        SpecializedSizes sizes;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->for_type != ForType::GPUBlock) IRVisitor::visit(op);  // a kernel's ifs fix no size
        }
        void visit(const IfThenElse *op) override {
            learn(op->condition);
            IRVisitor::visit(op);
        }
        void learn(const Expr &condition) {
            std::vector<Expr> conjuncts;
            split_into_ands(condition, conjuncts);
            for (const Expr &c : conjuncts) {
                const EQ *eq = c.as<EQ>();
                const Variable *v = eq ? eq->a.as<Variable>() : nullptr;
                const int64_t *value = eq ? as_const_int(eq->b) : nullptr;
                if (v && value) sizes.values.emplace(v->name, *value);
                const auto multiple = as_multiple(c);
                const Variable *k = multiple ? multiple->first.as<Variable>() : nullptr;
                if (!k) continue;
                int64_t &m = sizes.multiples[k->name];
                m = m ? std::lcm(m, multiple->second) : multiple->second;
            }
        }
    } conditions;
    s.accept(&conditions);
    return conditions.sizes;
}

std::map<std::string, int64_t> SpecializedSizes::at(int64_t extent) const {
    std::map<std::string, int64_t> at_extent = values;
    for (const auto &[name, multiple] : multiples) {
        int64_t size = extent;
        const size_t field = name.rfind(".extent.");
        if (field != std::string::npos) {
            const std::string dim = name.substr(field + 8);
            if (!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos) {
                size = hazard_check_extent(extent, std::stoi(dim));
            }
        }
        at_extent.emplace(name, (size + multiple - 1) / multiple * multiple);
    }
    return at_extent;
}

std::string SpecializedSizes::to_string() const {
    std::string text;
    for (const auto &[name, value] : values) {
        text += (text.empty() ? "" : ", ") + name + " = " + std::to_string(value);
    }
    for (const auto &[name, multiple] : multiples) {
        if (values.count(name)) continue;
        text += (text.empty() ? "" : ", ") + name + " rounded up to a multiple of " + std::to_string(multiple);
    }
    return text;
}

std::vector<KernelHazards> find_pipeline_hazards_at(const Stmt &s, const std::vector<int64_t> &extents,
                                                    const SpecializedSizes &fixed) {
    std::vector<KernelHazards> runs;
    for (const bool specialized : {false, true}) {
        if (specialized && fixed.empty()) continue;
        for (int64_t extent : extents) {
            for (KernelHazards &k :
                 find_pipeline_hazards(s, extent, specialized ? fixed.at(extent) : std::map<std::string, int64_t>{})) {
                k.specialized = specialized;
                runs.push_back(std::move(k));
            }
        }
    }
    return runs;
}

int64_t hazard_check_extent(int64_t extent, int dim) {
    return dim < 2 || extent % whole_tile_extent == 0 ? extent : other_dimensions_extent;
}

const std::vector<int64_t> &hazard_check_extents() {
    static const std::vector<int64_t> extents{100, 40, 16, whole_tile_extent};
    return extents;
}

}  // namespace alcop
