#include "EmulatedTensorCores.h"

#include "Error.h"
#include "codegen/TensorCoreMarkers.h"

#include <functional>
#include <set>

namespace alcop {
namespace testing {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// An ldmatrix row (16 bytes), or the 12 halves of a0..a3, b0, b1 decoded to fp32 (48).
constexpr int exchange_bytes_per_thread = 64;

bool is_half(const Type &t) {
    return t.is_float() && t.bits() == 16;
}

Stmt barrier() {
    return Evaluate::make(Call::make(Int(32), Call::gpu_thread_barrier,
                                     {IntImm::make(Int(32), CodeGen_GPU_Dev::MemoryFenceType::Shared)},
                                     Call::Intrinsic));
}

/** The value of 16 bits `bits` (UInt(16)) of an fp16 or bf16, as an fp32. */
Expr decode(const Expr &bits, const Type &element) {
    const Type u32 = UInt(32, bits.type().lanes()), f32 = Float(32, bits.type().lanes());
    const std::string name = unique_name("tc_bits");
    Expr u = Variable::make(u32, name);
    Expr value;
    if (element.is_bfloat()) {
        value = reinterpret(f32, u << 16);
    } else {
        Expr sign = (u & 0x8000) << 16, magnitude = u & 0x7fff;
        // Normal numbers: the exponent rebiased by 127 - 15; subnormals: mantissa * 2^-24.
        Expr normal = reinterpret(f32, sign | ((magnitude << 13) + ((127 - 15) << 23)));
        Expr subnormal = reinterpret(f32, sign | reinterpret(u32, cast(f32, magnitude) * (1.0f / (1 << 24))));
        Expr inf_nan = reinterpret(f32, sign | 0x7f800000 | ((magnitude & 0x3ff) << 13));
        value = select(magnitude < 0x400, subnormal, magnitude >= 0x7c00, inf_nan, normal);
    }
    return Let::make(name, cast(u32, bits), value);
}

/** Inside the kernels: every 16-bit float becomes its UInt(16) bits (see the header). */
class HalvesAsBits : public IRMutator {
    using IRMutator::visit;
    int kernels = 0;

    static Type bits(const Type &t) {
        return is_half(t) ? UInt(16, t.lanes()) : t;
    }

    Stmt visit(const For *op) override {
        const bool kernel = op->for_type == ForType::GPUBlock;
        kernels += kernel;
        Stmt s = IRMutator::visit(op);
        kernels -= kernel;
        return s;
    }
    Expr visit(const Load *op) override {
        if (!kernels || !is_half(op->type)) return IRMutator::visit(op);
        return Load::make(bits(op->type), op->name, mutate(op->index), op->image, op->param, mutate(op->predicate),
                          op->alignment);
    }
    Expr visit(const Variable *op) override {
        if (!kernels || !is_half(op->type)) return op;
        return Variable::make(bits(op->type), op->name, op->image, op->param, op->reduction_domain);
    }
    Expr visit(const FloatImm *op) override {
        if (!kernels || !is_half(op->type)) return op;
        const uint16_t b = op->type.is_bfloat() ? bfloat16_t(op->value).to_bits() : float16_t(op->value).to_bits();
        return UIntImm::make(UInt(16), b);
    }
    Expr visit(const Cast *op) override {
        if (!kernels) return IRMutator::visit(op);
        internal_assert(!is_half(op->type))
            << "tensor-core emulation: a cast to a 16-bit float in a kernel: " << Expr(op) << "\n";
        if (!is_half(op->value.type())) return IRMutator::visit(op);
        Expr f = decode(mutate(op->value), op->value.type());
        return op->type == f.type() ? f : cast(op->type, f);
    }
    Expr visit(const Call *op) override {
        if (!kernels) return IRMutator::visit(op);
        if (op->is_intrinsic(Call::reinterpret)) {
            // Between a 16-bit float and its bits: the bits, as the wanted integer type.
            Expr v = mutate(op->args[0]);
            const Type to = bits(op->type);
            return v.type() == to ? v : reinterpret(to, v);
        }
        if (!is_half(op->type)) return IRMutator::visit(op);
        // likely, promise_clamped and the like: the type of their first argument.
        internal_assert(op->is_intrinsic() && !op->args.empty() && op->type == op->args[0].type())
            << "tensor-core emulation: a 16-bit float call in a kernel: " << Expr(op) << "\n";
        std::vector<Expr> args;
        for (const Expr &a : op->args) {
            args.push_back(mutate(a));
        }
        return Call::make(args[0].type(), op->name, args, op->call_type, op->func, op->value_index, op->image,
                          op->param);
    }
    Stmt visit(const Allocate *op) override {
        if (!kernels || !is_half(op->type)) return IRMutator::visit(op);
        std::vector<Expr> extents;
        for (const Expr &e : op->extents) {
            extents.push_back(mutate(e));
        }
        return Allocate::make(op->name, bits(op->type), op->memory_type, extents, mutate(op->condition),
                              mutate(op->body), op->new_expr.defined() ? mutate(op->new_expr) : Expr(),
                              op->free_function);
    }
#define ALCOP_NO_HALF_ARITHMETIC(T)                                                                    \
    Expr visit(const T *op) override {                                                                 \
        internal_assert(!kernels || !is_half(op->a.type()))                                            \
            << "tensor-core emulation: arithmetic on 16-bit floats in a kernel: " << Expr(op) << "\n"; \
        return IRMutator::visit(op);                                                                   \
    }
    ALCOP_NO_HALF_ARITHMETIC(Add)
    ALCOP_NO_HALF_ARITHMETIC(Sub)
    ALCOP_NO_HALF_ARITHMETIC(Mul)
    ALCOP_NO_HALF_ARITHMETIC(Div)
    ALCOP_NO_HALF_ARITHMETIC(Min)
    ALCOP_NO_HALF_ARITHMETIC(Max)
    ALCOP_NO_HALF_ARITHMETIC(LT)
    ALCOP_NO_HALF_ARITHMETIC(LE)
#undef ALCOP_NO_HALF_ARITHMETIC
};

const Call *marker(const Expr &e, const char *prefix) {
    const Call *c = e.as<Call>();
    return c && c->name.rfind(prefix, 0) == 0 ? c : nullptr;
}

bool has_markers(const Stmt &s) {
    struct V : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            found = found || op->name.rfind(mma_prefix, 0) == 0 || op->name.rfind(ldmatrix_prefix, 0) == 0;
            IRVisitor::visit(op);
        }
    } v;
    s.accept(&v);
    return v.found;
}

/** The same operands (from `first` on) in two marker calls. */
bool same_operands(const Call *a, const Call *b, size_t first, size_t last) {
    if (!a || !b || a->name != b->name) return false;
    for (size_t i = first; i < last; i++) {
        if (!equal(a->args[i], b->args[i])) return false;
    }
    return true;
}

/** The markers of one kernel replaced by exchanges through shared memory. */
class EmulateMarkers : public IRMutator {
    using IRMutator::visit;

    std::string shared;                   // the merged shared allocation
    Expr exchange_bytes;                  // where the exchange area starts in it
    std::vector<const For *> threads;     // the enclosing gpu_thread loops, outermost first
    std::set<const LetStmt *> row_ready;  // ldmatrix lets whose row the exchange already holds

    Stmt visit(const Allocate *op) override {
        if (op->memory_type != MemoryType::GPUShared || !shared.empty()) return IRMutator::visit(op);
        internal_assert(op->extents.size() == 1)
            << "tensor-core emulation: shared allocation " << op->name << " is not flat\n";
        // The exchange area after the allocation's bytes, 32-byte aligned, one slot per thread.
        const int64_t threads_in_block = count_threads(op->body);
        const int unit = op->type.bytes();
        shared = op->name;
        exchange_bytes = simplify((op->extents[0] * unit + 31) / 32 * 32);
        Stmt body = mutate(op->body);
        Expr total = exchange_bytes + (int)(threads_in_block * exchange_bytes_per_thread);
        return Allocate::make(op->name, op->type, op->memory_type, {simplify((total + unit - 1) / unit)}, op->condition,
                              body, op->new_expr, op->free_function);
    }

    static int64_t count_threads(const Stmt &s) {
        // The gpu_thread loops of the kernel are one nest (Halide fuses them).
        int64_t n = 1;
        Stmt at = s;
        struct First : IRVisitor {
            const For *loop = nullptr;
            using IRVisitor::visit;
            void visit(const For *op) override {
                if (!loop && op->for_type == ForType::GPUThread) loop = op;
                if (!loop) IRVisitor::visit(op);
            }
        };
        while (true) {
            First f;
            at.accept(&f);
            if (!f.loop) return n;
            const int64_t *extent = as_const_int(f.loop->extent);
            internal_assert(extent) << "tensor-core emulation: thread loop " << f.loop->name
                                    << " has no constant extent\n";
            n *= *extent;
            at = f.loop->body;
        }
    }

    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUThread) return IRMutator::visit(op);
        threads.push_back(op);
        Stmt s = IRMutator::visit(op);
        threads.pop_back();
        return s;
    }

    /** This thread's index in the block, and its lane. */
    Expr thread() const {
        Expr flat = 0;
        for (const For *f : threads) {
            flat = flat * f->extent + (Variable::make(Int(32), f->name) - f->min);
        }
        return flat;
    }
    Expr lane() const {
        internal_assert(!threads.empty() && is_const(threads.back()->extent, 32))
            << "tensor-core emulation: the innermost thread loop is not the 32 lanes of a warp\n";
        return Variable::make(Int(32), threads.back()->name) - threads.back()->min;
    }
    /** Element `e` (of `t`) of the exchange slot of lane `l` of this warp. */
    Expr slot(const Type &t, const Expr &l, int e) const {
        internal_assert(!shared.empty()) << "tensor-core emulation: a marker outside a shared allocation\n";
        const int n = t.bytes();
        return simplify(exchange_bytes / n + (thread() - lane() + l) * (exchange_bytes_per_thread / n) + e);
    }
    /** Element `e` (of `t`) of the slot that starts at element `base`. */
    Expr load(const Type &t, const Expr &base, const Expr &e) const {
        return Load::make(t, shared, simplify(base + e), Buffer<>(), Parameter(), const_true(), ModulusRemainder());
    }
    Stmt store(const Expr &value, int e) const {
        return Store::make(shared, value, slot(value.type(), lane(), e), Parameter(), const_true(), ModulusRemainder());
    }
    /** `barrier; writes; barrier`. */
    static Stmt exchange(std::vector<Stmt> writes) {
        writes.insert(writes.begin(), barrier());
        writes.push_back(barrier());
        return Block::make(writes);
    }
    static Expr as_bits(const Expr &e) {
        return e.type().is_uint() ? e : reinterpret(UInt(16), e);
    }

    /** This lane's register of ldmatrix `ld` (its marker's register index j), read from the rows
     * the exchange holds. */
    Expr fragment_register(const Call *ld) const {
        internal_assert(ld->args.size() == ldmatrix_marker_args && is_const(ld->args[0]));
        const bool trans = ld->name == ldmatrix_trans_name;
        const int j = (int)*as_const_int(ld->args[0]);
        Expr l = lane(), g = l / 4, t = l % 4;
        std::vector<Expr> halves;
        for (int h = 0; h < 2; h++) {
            // Without .trans: the row of lane 8j + g, element 2t + h; with .trans: the row of lane
            // 8j + 2t + h, element g.
            Expr value = trans ? load(UInt(16), slot(UInt(16), 8 * j + 2 * t + h, 0), g) :
                                 load(UInt(16), slot(UInt(16), 8 * j + g, 0), 2 * t + h);
            halves.push_back(cast(UInt(32), value));
        }
        return halves[0] | (halves[1] << 16);
    }

    /** Each lane's ldmatrix row (8 halves from its row address) into its exchange slot. */
    Stmt row_exchange(const Call *ld) {
        std::vector<Stmt> writes;
        for (int e = 0; e < 8; e++) {
            writes.push_back(store(as_bits(mutate(ld->args[1 + e])), e));
        }
        return exchange(writes);
    }

    Stmt visit(const LetStmt *op) override {
        const Call *ld = marker(op->value, ldmatrix_prefix);
        if (!ld) return IRMutator::visit(op);
        // The next register of the same instruction reuses this exchange.
        if (const LetStmt *next = op->body.as<LetStmt>()) {
            if (same_operands(ld, marker(next->value, ldmatrix_prefix), 1, ldmatrix_marker_args)) {
                row_ready.insert(next);
            }
        }
        Stmt s = LetStmt::make(op->name, fragment_register(ld), mutate(op->body));
        return row_ready.count(op) ? s : Block::make(row_exchange(ld), s);
    }

    Stmt visit(const Block *op) override {
        // The four stores of one mma share one exchange of its registers.
        std::vector<Stmt> stmts, out;
        std::function<void(const Stmt &)> flatten = [&](const Stmt &s) {
            if (const Block *b = s.as<Block>()) {
                flatten(b->first);
                flatten(b->rest);
            } else {
                stmts.push_back(s);
            }
        };
        flatten(op);
        const Call *previous = nullptr;
        bool changed = false;
        for (const Stmt &s : stmts) {
            const Store *st = s.as<Store>();
            const Call *mma = st ? marker(st->value, mma_prefix) : nullptr;
            if (!mma) {
                previous = nullptr;
                out.push_back(mutate(s));
                changed = changed || !out.back().same_as(s);
                continue;
            }
            if (!same_operands(mma, previous, 1, 7)) {
                out.push_back(exchange(mma_writes(mma)));
            }
            previous = mma;
            out.push_back(emulate_mma(st, mma));
            changed = true;
        }
        return changed ? Block::make(out) : Stmt(op);
    }

    Stmt visit(const Store *op) override {
        if (const Call *ld = marker(op->value, ldmatrix_prefix)) {
            // A register stage's slot (alcop::pipeline(acc, R, Level::Register)): the fragment
            // is stored, not bound; one exchange per register.
            return Block::make(row_exchange(ld), Store::make(op->name, fragment_register(ld), op->index, op->param,
                                                             op->predicate, op->alignment));
        }
        const Call *mma = marker(op->value, mma_prefix);
        if (!mma) return IRMutator::visit(op);
        // A lone store (not in a Block).
        return Block::make(exchange(mma_writes(mma)), emulate_mma(op, mma));
    }

    static Type element_of(const Call *mma) {
        return mma->name == mma_bf16_name ? BFloat(16) : Float(16);
    }

    /** This lane's registers a0..a3, b0, b1, each half decoded (by its owner: a pure function of
     * the bits), to fp32 elements 2r and 2r + 1 of its slot. */
    std::vector<Stmt> mma_writes(const Call *mma) const {
        std::vector<Stmt> writes;
        for (int r = 0; r < 6; r++) {
            const Expr &reg = mma->args[1 + r];
            writes.push_back(store(decode(cast(UInt(16), reg & 0xffff), element_of(mma)), 2 * r));
            writes.push_back(store(decode(cast(UInt(16), reg >> 16), element_of(mma)), 2 * r + 1));
        }
        return writes;
    }

    /** d_q of this lane from the exchanged registers (see the header). */
    Stmt emulate_mma(const Store *st, const Call *mma) const {
        internal_assert(mma->args.size() == mma_marker_args && is_const(mma->args[0]));
        const int q = (int)*as_const_int(mma->args[0]);
        Expr l = lane(), g = l / 4, t = l % 4;
        Expr row = g + 8 * (q / 2), col = 2 * t + q % 2;
        // The slots of lane 4 (r % 8), holding row r of A, and of lane 4c, holding column c of B.
        const std::string a_slot = unique_name("tc_a_slot"), b_slot = unique_name("tc_b_slot");
        Expr a_base = Variable::make(Int(32), a_slot), b_base = Variable::make(Int(32), b_slot);
        const int per_lane = exchange_bytes_per_thread / 4;
        Expr sum = mma->args[7 + q];
        for (int k = 0; k < 16; k++) {
            // Lanes + (k % 8) / 2; register a(r / 8 + 2 (k / 8)) (r / 8 = q / 2 on every lane) and
            // b(k / 8); half k % 2.
            Expr a = load(Float(32), a_base, (k % 8) / 2 * per_lane + 2 * (q / 2 + 2 * (k / 8)) + k % 2);
            Expr b = load(Float(32), b_base, (k % 8) / 2 * per_lane + 2 * (4 + k / 8) + k % 2);
            sum = sum + a * b;
        }
        Stmt s = Store::make(st->name, sum, st->index, st->param, st->predicate, st->alignment);
        s = LetStmt::make(b_slot, slot(Float(32), 4 * col, 0), s);
        return LetStmt::make(a_slot, slot(Float(32), 4 * (row % 8), 0), s);
    }
};

class EmulateKernels : public IRMutator {
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        return has_markers(Stmt(op)) ? EmulateMarkers().mutate(Stmt(op)) : Stmt(op);
    }
};

}  // namespace

Stmt emulate_tensor_cores(const Stmt &s) {
    return HalvesAsBits().mutate(EmulateKernels().mutate(s));
}

}  // namespace testing
}  // namespace alcop
