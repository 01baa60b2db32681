#include "analysis/TensorCoreAnalysis.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

std::string type_name(const Type &t) {
    if (t.is_bfloat()) return "bfloat" + std::to_string(t.bits());
    std::ostringstream s;
    s << t;
    return s.str();
}

std::string text(const Expr &e) {
    std::ostringstream s;
    s << e;
    return s.str();
}

/** `e` without the Casts around it, and the type it was cast to (or its own). */
const Call *operand_call(const Expr &e) {
    Expr inner = e;
    while (const Cast *c = inner.as<Cast>()) {
        inner = c->value;
    }
    return inner.as<Call>();
}

bool uses_var(const Expr &e, const std::string &v) {
    return expr_uses_var(e, v);
}

/** Whether `e` is `v` plus terms without v (a unit stride along v). */
bool unit_stride(const Expr &e, const std::string &v) {
    if (!uses_var(e, v)) return false;
    Expr step = simplify(substitute(v, Variable::make(Int(32), v) + 1, e) - e);
    return is_const_one(step);
}

/** The parts of the update P(x, y) = P(x, y) + f32(A) * f32(B) of an accumulator. */
struct InnerProduct {
    Expr value;                             // the update's value, lets substituted (owns a and b)
    const Call *a = nullptr, *b = nullptr;  // the M side (reads y) and the N side (reads x)
};

class Checker {
public:
    Checker(const std::string &name, const Function &f, const TensorCoreRequest &r,
            const std::map<std::string, Function> &env)
        : name(name), f(f), request(r), env(env) {
    }

    TensorCoreUse check_definition() {
        const std::string who = tensor_cores_call(name);
        user_assert(f.outputs() == 1 && f.output_types()[0] == Float(32))
            << who << ": the accumulator must be a single Float(32) value (mma.sync.m16n8k16 accumulates in "
            << "fp32), but it is " << describe_types() << ".\n";
        user_assert(f.dimensions() >= 2)
            << who << ": the accumulator needs two dimensions, P(x, y) with x along N and y along M.\n";
        user_assert(f.updates().size() == 1)
            << who << ": the accumulator must have exactly one update, the inner product "
            << "P(x, y) += f32(A(k, y)) * f32(B(x, k)); it has " << f.updates().size() << ".\n";
        const Definition &u = f.updates()[0];
        const std::string x = f.args()[0], y = f.args()[1];
        InnerProduct ip = inner_product(u, x, y);
        TensorCoreUse use;
        use.accumulator = name;
        use.tile = request;
        use.a = staged_name(ip.a);
        use.b = staged_name(ip.b);

        // Types the instruction has.
        const Type ta = ip.a->type, tb = ip.b->type;
        user_assert(ta == tb && (ta == Float(16) || ta == BFloat(16)))
            << who << ": mma.sync.m16n8k16 multiplies fp16 (Float(16)) or bf16 (BFloat(16)) operands of one "
            << "type, but " << user_name(ip.a->name) << " is " << type_name(ta) << " and " << user_name(ip.b->name)
            << " is " << type_name(tb) << ".\n";
        use.element = ta;

        // Operands staged in shared memory, contiguous along K or along M/N.
        use.a_major = major(ip.a, y, "M", "A");
        use.b_major = major(ip.b, x, "N", "B");
        return use;
    }

    /** The lanes: whole warps, each lane's accumulators those of its mma fragments. */
    void check_lanes(const Stmt &s, TensorCoreUse &use) const;

private:
    const std::string &name;
    const Function &f;
    const TensorCoreRequest &request;
    const std::map<std::string, Function> &env;

    std::string describe_types() const {
        std::ostringstream s;
        for (size_t i = 0; i < f.output_types().size(); i++) {
            s << (i ? ", " : "") << type_name(f.output_types()[i]);
        }
        return s.str();
    }

    InnerProduct inner_product(const Definition &u, const std::string &x, const std::string &y) const {
        const std::string who = tensor_cores_call(name);
        const std::string form = "P(x, y) += f32(A(k, y)) * f32(B(x, k))";
        bool pure_args = u.args().size() == f.args().size();
        for (size_t i = 0; pure_args && i < u.args().size(); i++) {
            const Variable *v = u.args()[i].as<Variable>();
            pure_args = v && v->name == f.args()[i];
        }
        InnerProduct ip;
        ip.value = substitute_in_all_lets(u.values()[0]);
        const Add *add = ip.value.as<Add>();
        const Call *self = add ? add->a.as<Call>() : nullptr;
        const Mul *mul = add ? add->b.as<Mul>() : nullptr;
        if (add && !self) {
            self = add->b.as<Call>();
            mul = add->a.as<Mul>();
        }
        const Call *p = mul ? operand_call(mul->a) : nullptr;
        const Call *q = mul ? operand_call(mul->b) : nullptr;
        const bool plain = pure_args && self && self->name == f.name() && p && q &&
                           (p->call_type == Call::Halide || p->call_type == Call::Image) &&
                           (q->call_type == Call::Halide || q->call_type == Call::Image);
        user_assert(plain) << who << ": the update must be the plain inner product " << form
                           << " (x along N, y along M, A and B Funcs), but it is " << user_name(f.name()) << "("
                           << f.args()[0] << ", " << f.args()[1] << ") = " << ip.value << ".\n";
        auto reads = [&](const Call *c, const std::string &v) {
            for (const Expr &e : c->args) {
                if (uses_var(e, v)) return true;
            }
            return false;
        };
        if (reads(p, y) && reads(q, x)) {
            ip.a = p, ip.b = q;
        } else if (reads(q, y) && reads(p, x)) {
            ip.a = q, ip.b = p;
        }
        user_assert(ip.a && ip.b && !reads(ip.a, x) && !reads(ip.b, y))
            << who << ": the update must be the plain inner product " << form << ": one operand reads y (the M "
            << "side), the other x (the N side), but it reads " << p->name << "(...) and " << q->name << "(...).\n";
        return ip;
    }

    std::string staged_name(const Call *c) const {
        return staged_operand(f.name(), c->name, env);
    }

    OperandMajor major(const Call *c, const std::string &outer, const char *side, const char *role) const {
        const std::string who = tensor_cores_call(name);
        const std::string op = user_name(c->name);
        auto it = env.find(staged_name(c));
        user_assert(c->call_type == Call::Halide && it != env.end() &&
                    it->second.schedule().memory_type() == MemoryType::GPUShared)
            << who << ": the operand " << op << " (" << role << ") must be a Func staged in GPU shared memory "
            << "(store_in(MemoryType::GPUShared)), where ldmatrix reads it.\n";
        const Function &g = it->second;
        // The innermost storage dimension, and what the inner product indexes it with.
        const std::vector<StorageDim> &dims = g.schedule().storage_dims();
        internal_assert(!dims.empty());
        const std::string &inner = dims[0].var;
        size_t pos = 0;
        while (pos < g.args().size() && g.args()[pos] != inner) {
            pos++;
        }
        internal_assert(pos < c->args.size());
        const Expr &index = c->args[pos];
        // The reduction variables of the update.
        std::set<std::string> rvars;
        for (const ReductionVariable &rv : f.updates()[0].schedule().rvars()) {
            rvars.insert(rv.var);
        }
        bool along_k = false, only_k = true;
        for (const std::string &rv : rvars) {
            along_k = along_k || unit_stride(index, rv);
        }
        only_k = !uses_var(index, outer);
        if (along_k && only_k) return OperandMajor::K;
        if (unit_stride(index, outer)) {
            bool has_r = false;
            for (const std::string &rv : rvars) {
                has_r = has_r || uses_var(index, rv);
            }
            if (!has_r) return OperandMajor::Outer;
        }
        user_error << who << ": the operand " << op << " (" << role << ") is neither K- nor " << side
                   << "-contiguous in its shared tile: its innermost storage dimension (" << inner << ") is indexed by "
                   << index << ", but ldmatrix reads 16-byte rows along K or along " << side
                   << ". Make that dimension the reduction index or " << outer
                   << " (with unit stride), e.g. with reorder_storage.\n";
        return OperandMajor::K;
    }
};

/** The lowered update of an accumulator: the stores that accumulate into it, with the lets
 * and thread loops around them. */
class FindUpdates : public IRVisitor {
public:
    explicit FindUpdates(const std::string &func) : func(func) {
    }

    struct Update {
        Expr index;                        // lets substituted
        std::vector<const For *> threads;  // enclosing gpu thread loops, outer first
        const For *k_loop;                 // the innermost serial loop inside them
        Expr k_extent;                     // its extent, lets but the buffers' fields substituted
    };
    std::vector<Update> updates;
    const Allocate *allocation = nullptr;

private:
    using IRVisitor::visit;
    const std::string &func;
    std::vector<std::pair<std::string, Expr>> lets;
    std::vector<const For *> threads, serial;

    void visit(const LetStmt *op) override {
        op->value.accept(this);
        lets.emplace_back(op->name, op->value);
        op->body.accept(this);
        lets.pop_back();
    }

    void visit(const For *op) override {
        const bool thread = op->for_type == ForType::GPUThread || op->for_type == ForType::GPULane;
        const bool inner_serial = !threads.empty() && op->for_type == ForType::Serial;
        if (thread) threads.push_back(op);
        if (inner_serial) serial.push_back(op);
        IRVisitor::visit(op);
        if (thread) threads.pop_back();
        if (inner_serial) serial.pop_back();
    }

    void visit(const Allocate *op) override {
        if (is_accumulator(op->name, func)) allocation = op;
        IRVisitor::visit(op);
    }

    void visit(const Store *op) override {
        IRVisitor::visit(op);
        if (!accumulates_into(Stmt(op), func)) return;
        const For *k_loop = serial.empty() ? nullptr : serial.back();
        Expr index = op->index, k_extent = k_loop ? k_loop->extent : Expr();
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
            index = substitute(it->first, it->second, index);
            // The buffers' fields stay their names (A.extent.0), for the error below to read.
            const Call *field = it->second.as<Call>();
            if (k_extent.defined() && !(field && starts_with(field->name, "_halide_buffer_get_")))
                k_extent = substitute(it->first, it->second, k_extent);
        }
        updates.push_back({index, threads, k_loop, k_extent});
    }
};

void Checker::check_lanes(const Stmt &s, TensorCoreUse &use) const {
    const std::string who = tensor_cores_call(name);
    FindUpdates find(f.name());
    s.accept(&find);
    if (find.updates.empty()) return;  // not in this Stmt (e.g. another kernel's pipeline)
    // The guarded tails of a branch of K stay scalar (is_guarded_k_loop); the others must all
    // take mma.sync, and one must (where none is, all are checked, and fail below).
    const auto guarded = std::stable_partition(find.updates.begin(), find.updates.end(),
                                               [](const auto &u) { return !u.k_loop || !is_guarded_k_loop(u.k_loop); });
    if (guarded != find.updates.begin()) find.updates.erase(guarded, find.updates.end());
    const std::vector<const For *> &threads = find.updates.front().threads;
    // Halide gives a kernel without gpu_threads one thread loop of extent 1 (which the check of
    // whole warps below rejects), and puts every Func of a kernel with threads inside them.
    internal_assert(!threads.empty()) << who << ": the update of " << user_name(name)
                                      << " is not inside gpu_threads loops.\n";
    // The innermost thread loop is thread_id_x: warps are 32 consecutive of its threads.
    const For *lane_loop = threads.back();
    const int64_t *lanes = as_const_int(lane_loop->extent);
    int64_t total = 1;
    bool constant = true;
    for (const For *t : threads) {
        const int64_t *e = as_const_int(t->extent);
        constant = constant && e;
        if (e) total *= *e;
    }
    user_assert(lanes && constant && *lanes == 32)
        << who << ": the threads of " << user_name(name) << "'s update do not form whole warps: its innermost "
        << "gpu_threads dimension " << lane_loop->name << " has " << lane_loop->extent << " threads (" << total
        << " in all), but mma.sync and ldmatrix need all 32 lanes of each warp, "
        << "and the lanes of a warp must be that dimension's 32 threads (alcop::schedule_tensor_core_tile "
        << "makes it so).\n";
    // The width of the accumulator's storage: its bound x extent (the block tile's).
    std::optional<int64_t> bound_width;
    for (const Bound &b : f.schedule().bounds()) {
        if (b.var == f.args()[0] && b.extent.defined() && as_const_int(b.extent)) {
            bound_width = *as_const_int(b.extent);
        }
    }
    user_assert(bound_width) << who << ": the accumulator's x extent must be bound to the block tile "
                             << "(" << user_name(name) << ".bound_extent(" << f.args()[0] << ", block_n)).\n";
    const int64_t *width = &*bound_width;
    use.width = *width;
    for (const FindUpdates::Update &u : find.updates) {
        // Here only where every update is a guarded tail (the others are erased above). Where its
        // step count is at most a constant, it is the last chunk of a K the chunk does not
        // divide, which the pass could not zero-fill (rewrite/ZeroFilledTails.h).
        const bool tail =
            u.k_loop && is_guarded_k_loop(u.k_loop) && is_const(find_constant_bound(u.k_extent, Direction::Upper));
        user_assert(!tail)
            << who << ": the reduction of " << user_name(name) << " inside one staged chunk, " << u.k_loop->name
            << ", has no constant extent (" << simplify(u.k_extent) << "): it is the guarded last chunk of a K the "
            << "chunk does not divide. Tensor cores run that chunk whole with the operands zero past K if "
            << user_name(use.a) << " and " << user_name(use.b) << " are computed at the chunk loop in tiles of "
            << "constant extents: bound every dimension of each (Func::bound_extent: the chunk along K, the block "
            << "tile along M or N) and clamp their reads of the inputs. Or make K a multiple of the chunk "
            << "(specialize on it).\n";
        const int64_t *kt = u.k_loop ? as_const_int(u.k_loop->extent) : nullptr;
        user_assert(kt && *kt % 16 == 0)
            << who << ": the reduction of " << user_name(name) << " inside one staged chunk must be a serial loop "
            << "(not unrolled) around the accumulator updates, inside the gpu_threads loops, of a constant extent "
            << "that is a multiple of 16 (mma.sync.m16n8k16 steps 16 along K), but "
            << (u.k_loop ? "it is " + u.k_loop->name + " of extent " + text(u.k_loop->extent) :
                           std::string("there is none"))
            << ".\n";
        use.k_tile = *kt;
    }

    // The elements each lane of the first warp updates, relative to lane 0's first.
    const int64_t per_lane = (int64_t)request.warp_m * request.warp_n / 32;
    std::vector<std::set<std::pair<int64_t, int64_t>>> held(32);
    for (int l = 0; l < 32; l++) {
        std::map<std::string, Expr> values;
        for (const For *t : threads) {
            values[t->name] = t == lane_loop ? simplify(t->min + l) : t->min;
        }
        for (const FindUpdates::Update &u : find.updates) {
            std::optional<int64_t> flat = evaluate_lane(u.index, values);
            // Halide flattens a Func's store index from its pure Vars: affine in the loop
            // variables, which are constants here.
            internal_assert(flat) << who << ": cannot tell which accumulator element a lane updates: " << u.index
                                  << ".\n";
            held[l].insert({*flat % *width, *flat / *width});  // (x, y)
        }
    }
    const int64_t x0 = std::min_element(held[0].begin(), held[0].end())->first;
    int64_t y0 = held[0].begin()->second;
    for (const auto &e : held[0]) {
        y0 = std::min(y0, e.second);
    }
    for (int l = 0; l < 32; l++) {
        std::set<std::pair<int64_t, int64_t>> expected;
        for (int i = 0; i < request.warp_n / 8; i++) {
            for (int j = 0; j < request.warp_m / 16; j++) {
                for (int e = 0; e < 2; e++) {
                    for (int h = 0; h < 2; h++) {
                        expected.insert({x0 + 8 * i + 2 * (l % 4) + e, y0 + 16 * j + 8 * h + l / 4});
                    }
                }
            }
        }
        if (held[l] == expected) continue;
        std::ostringstream got, want;
        int n = 0;
        for (const auto &e : held[l]) {
            if (n++ < 4) got << (n > 1 ? " " : "") << "(" << e.first - x0 << ", " << e.second - y0 << ")";
        }
        n = 0;
        for (const auto &e : expected) {
            if (n++ < 4) want << (n > 1 ? " " : "") << "(" << e.first - x0 << ", " << e.second - y0 << ")";
        }
        user_error << who << ": the per-thread accumulators of " << user_name(name) << " do not match the "
                   << "fragment layout of mma.sync.m16n8k16 for a " << request.warp_m << " x " << request.warp_n
                   << " warp tile: lane " << l << " of the first warp updates " << held[l].size()
                   << " elements (x, y) starting " << got.str() << " (relative to lane 0's first), where the "
                   << "instruction gives it " << per_lane << " starting " << want.str()
                   << ". Schedule the accumulator's definitions with alcop::schedule_tensor_core_tile.\n";
    }
}

}  // namespace

std::optional<int64_t> evaluate_lane(Expr e, const std::map<std::string, Expr> &values) {
    e = substitute(values, e);
    struct Zero : IRMutator {
        using IRMutator::visit;
        Expr visit(const Variable *op) override {
            return make_zero(op->type);
        }
    } zero;
    e = simplify(zero.mutate(e));
    if (const int64_t *v = as_const_int(e)) return *v;
    return std::nullopt;
}

std::map<std::string, int> fragment_stages(const std::vector<TensorCoreUse> &uses,
                                           const std::map<std::string, PipelineRequest> &requests) {
    std::map<std::string, int> stages;
    for (const TensorCoreUse &u : uses) {
        auto r = requests.find(u.accumulator);
        if (r != requests.end() && r->second.level == Level::Register) stages[u.accumulator] = r->second.stages;
    }
    return stages;
}

void check_fragment_stages(const std::vector<TensorCoreUse> &uses,
                           const std::map<std::string, PipelineRequest> &requests, int register_limit) {
    auto pipelined = [&](const std::string &f) {
        auto r = requests.find(f);
        return r != requests.end() && r->second.level == Level::Shared && r->second.stages > 1;
    };
    const std::map<std::string, int> stages = fragment_stages(uses, requests);
    for (const TensorCoreUse &u : uses) {
        auto r = stages.find(u.accumulator);
        if (r == stages.end()) continue;
        // The next chunk's first fragments are read while the current chunk's are in use:
        // only a slot of a shared-level pipeline holds it then.
        user_assert(r->second < 2 || (pipelined(u.a) && pipelined(u.b)))
            << "alcop::pipeline(" << user_name(u.accumulator) << ", " << r->second
            << ", Level::Register): the register stages of tensor-core fragments prefetch across the chunks of "
            << "a shared-level pipeline of both operands; pipeline " << user_name(u.a) << " and " << user_name(u.b)
            << " too (alcop::pipeline(f, stages) with stages >= 2).\n";
        // Each stage holds the ldmatrix.x4 registers of one k step: 4 per 16 rows of the
        // warp tile (A) and 4 per 16 columns (B).
        const int registers = r->second * 4 * (u.tile.warp_m / 16 + u.tile.warp_n / 16);
        user_assert(registers <= register_limit)
            << "alcop::pipeline(" << user_name(u.accumulator) << ", " << r->second
            << ", Level::Register): the tensor-core fragments of a " << u.tile.warp_m << " x " << u.tile.warp_n
            << " warp tile would take " << registers << " 32-bit registers per thread (" << r->second
            << " stages x 4 ldmatrix registers per 16 rows and per 16 columns), more than the limit of "
            << register_limit << ". Use fewer register stages or a smaller warp tile, or raise the limit with "
            << "alcop::Options::register_limit if the kernel may use more (the CUDA opt-in, "
            << "HalideAlcop::cuda_opt_in, allows up to 255 registers per thread).\n";
    }
}

bool is_accumulator(const std::string &buffer, const std::string &func) {
    return buffer == func || buffer == func + ".0";
}

bool accumulates_into(const Stmt &s, const std::string &func) {
    struct V : IRVisitor {
        const std::string &func;
        bool in_update = false, found = false;
        explicit V(const std::string &f) : func(f) {
        }
        using IRVisitor::visit;
        void visit(const Store *op) override {
            if (!is_accumulator(op->name, func)) return;
            in_update = true;
            op->value.accept(this);
            in_update = false;
        }
        void visit(const Load *op) override {
            found = found || (in_update && is_accumulator(op->name, func));
            IRVisitor::visit(op);
        }
    } v(func);
    s.accept(&v);
    return v.found;
}

std::string staged_operand(const std::string &accumulator, const std::string &operand,
                           const std::map<std::string, Function> &env) {
    auto it = env.find(operand);
    if (it == env.end()) return operand;
    const std::map<std::string, FunctionPtr> &wrappers = it->second.schedule().wrappers();
    for (const std::string &key : {accumulator, std::string()}) {
        auto w = wrappers.find(key);
        if (w != wrappers.end()) return Function(w->second).name();
    }
    return operand;
}

bool is_guarded_k_loop(const For *k_loop) {
    return !is_const(k_loop->extent);
}

std::string tensor_cores_call(const std::string &func) {
    return "alcop::tensor_cores(" + user_name(func) + ")";
}

std::map<std::string, TensorCoreRequest> collect_tensor_core_requests(const std::vector<Function> &outputs) {
    return collect_recorded(outputs, requested_tensor_cores);
}

std::vector<TensorCoreUse> analyze_tensor_cores(const Stmt &s, const std::vector<Function> &outputs,
                                                const Target &target, bool any_target) {
    const std::map<std::string, Function> env = pipeline_functions(outputs);
    std::vector<TensorCoreUse> uses;
    for (const auto &entry : env) {
        std::optional<TensorCoreRequest> r = requested_tensor_cores(entry.second);
        if (!r) continue;
        const std::string who = tensor_cores_call(entry.first);
        user_assert(any_target || (target.has_feature(Target::CUDA) && target.get_cuda_capability_lower_bound() >= 80))
            << who << ": mma.sync.m16n8k16 and ldmatrix need a CUDA target with cuda_capability_80 or newer, "
            << "but the pipeline is compiled for " << target.to_string() << ".\n";
        Checker checker(entry.first, entry.second, *r, env);
        uses.push_back(checker.check_definition());
        checker.check_lanes(s, uses.back());
    }
    return uses;
}

}  // namespace alcop
