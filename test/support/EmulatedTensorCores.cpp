#include "EmulatedTensorCores.h"

#include "Error.h"
#include "ThreadLoops.h"
#include "codegen/TensorCoreMarkers.h"

#include <functional>
#include <map>
#include <set>
#include <utility>

namespace alcop {
namespace testing {

using namespace Halide;
using namespace Halide::Internal;

namespace {

bool is_half(const Type &t) {
    return t.is_float() && t.bits() == 16;
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

/** The bits (UInt(16)) of the fp32 `value` rounded to the nearest fp16 or bf16, ties to even,
 * as a conversion instruction does: infinities and NaNs kept, fp16 overflow to infinity, fp16
 * subnormals rounded at 2^-24. */
Expr encode(const Expr &value, const Type &element) {
    const int lanes = value.type().lanes();
    const Type u32 = UInt(32, lanes), f32 = Float(32, lanes);
    const std::string name = unique_name("tc_value");
    Expr u = reinterpret(u32, Variable::make(f32, name));
    Expr magnitude = u & 0x7fffffff, is_nan = magnitude > 0x7f800000;
    Expr bits;
    if (element.is_bfloat()) {
        Expr rounded = (u + (0x7fff + ((u >> 16) & 1))) >> 16;
        bits = select(is_nan, (u >> 16) | 0x40, rounded);
    } else {
        Expr sign = (u >> 16) & 0x8000;
        // Normal: the exponent rebiased by 15 - 127 and the mantissa rounded to 10 bits (a carry
        // into the exponent is the next binade, or infinity); subnormal: |value| / 2^-24 rounded.
        Expr normal = (magnitude - ((127 - 15) << 23) + (0xfff + ((magnitude >> 13) & 1))) >> 13;
        Expr subnormal = cast(u32, round(reinterpret(f32, magnitude) * (float)(1 << 24)));
        bits = sign | select(is_nan, make_const(u32, 0x7e00), magnitude >= 0x477ff000, make_const(u32, 0x7c00),
                             magnitude >= 0x38800000, normal, subnormal);
    }
    return Let::make(name, cast(f32, value), cast(UInt(16, lanes), bits));
}

/** A mutator that knows whether it is inside a GPU kernel (`kernels` > 0): its subclasses change
 * the kernels' code only. */
class InKernels : public IRMutator {
protected:
    using IRMutator::visit;
    int kernels = 0;

    Stmt visit(const For *op) override {
        const bool kernel = op->for_type == ForType::GPUBlock;
        kernels += kernel;
        Stmt s = IRMutator::visit(op);
        kernels -= kernel;
        return s;
    }
};

/** Inside the kernels: every 16-bit float becomes its UInt(16) bits (see the header). */
class HalvesAsBits : public InKernels {
    using InKernels::visit;

    static Type bits(const Type &t) {
        return is_half(t) ? UInt(16, t.lanes()) : t;
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
        internal_assert(!(is_half(op->type) && is_half(op->value.type())))
            << "tensor-core emulation: a cast between 16-bit floats in a kernel: " << Expr(op) << "\n";
        if (is_half(op->type)) return encode(mutate(op->value), op->type);
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
        if (op->is_intrinsic(Call::if_then_else)) {
            std::vector<Expr> args{mutate(op->args[0]), mutate(op->args[1]), mutate(op->args[2])};
            return Call::make(args[1].type(), op->name, args, op->call_type);
        }
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

/** Inside the kernels: a predicated vector store (a tile's edge cutting through a vector: a
 * 16-bit output stored a lane's pair at a time) becomes one scalar store a lane, each under its
 * predicate, as the PTX backend makes them; Halide's OpenCL backend has no predicated accesses
 * and few shuffles. A lane's value is extracted from the vector expression with the vector lets
 * it reads substituted (lets left unused are dropped), and a predicated load in it reads 0 where
 * its predicate is false. */
class ScalarizePredicated : public InKernels {
    using InKernels::visit;
    std::map<std::string, Expr> vector_lets;  // in terms of the kernel's scalars

    static bool predicated(const Expr &predicate) {
        return !is_const_one(predicate) && predicate.type().is_vector();
    }

    /** A predicated scalar load reads 0 where its predicate is false. */
    struct GuardScalarLoads : IRMutator {
        using IRMutator::visit;
        Expr visit(const Load *op) override {
            if (is_const_one(op->predicate) || op->type.is_vector()) return IRMutator::visit(op);
            Expr load = Load::make(op->type, op->name, mutate(op->index), op->image, op->param, const_true(),
                                   ModulusRemainder());
            return Call::make(op->type, Call::if_then_else, {mutate(op->predicate), load, make_zero(op->type)},
                              Call::PureIntrinsic);
        }
    };

    Expr lane(const Expr &e, int l) {
        return GuardScalarLoads().mutate(simplify(extract_lane(substitute(vector_lets, e), l)));
    }

    Stmt visit(const LetStmt *op) override {
        if (!kernels || op->value.type().is_scalar()) return IRMutator::visit(op);
        vector_lets[op->name] = substitute(vector_lets, op->value);
        Stmt body = mutate(op->body);
        vector_lets.erase(op->name);
        if (!stmt_uses_var(body, op->name)) return body;
        return LetStmt::make(op->name, op->value, body);
    }
    Stmt visit(const Store *op) override {
        if (!kernels || !predicated(op->predicate)) return IRMutator::visit(op);
        std::vector<Stmt> stores;
        for (int l = 0; l < op->value.type().lanes(); l++) {
            Stmt store = Store::make(op->name, lane(op->value, l), lane(op->index, l), op->param, const_true(),
                                     ModulusRemainder());
            stores.push_back(IfThenElse::make(lane(op->predicate, l), store));
        }
        return Block::make(stores);
    }
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

/** The markers of one kernel replaced by private code: every register a fragment passes
 * through holds its values on the lanes whose registers this lane's mma.sync reads (see the
 * header). */
class EmulateMarkers : public ThreadLoopMutator {
    using ThreadLoopMutator::visit;

    static constexpr int warp = 32;
    // The entries of a register, g = lane / 4 and t = lane % 4 this lane's group and thread in
    // the group: entry i < 4 is the register on lane 4g + i, where this lane's A elements come
    // from; entry 4 + i (i < 8), on lane 8t + i, where its B elements come from.
    static constexpr int entries = 12;

    std::map<std::string, Expr> lane_dependent;  // enclosing lets that depend on the lane, in terms of it
    std::set<std::string> fragment_buffers;      // register arrays ldmatrix stores into
    std::map<std::string, std::string> replicas;  // a register variable -> the array of its entries

public:
    explicit EmulateMarkers(const For *kernel) {
        // The register arrays that hold fragments: `entries` per register, from their
        // allocation on.
        struct Find : IRVisitor {
            std::set<std::string> *found;
            using IRVisitor::visit;
            void visit(const Store *op) override {
                if (marker(op->value, ldmatrix_prefix)) found->insert(op->name);
                IRVisitor::visit(op);
            }
        } find;
        find.found = &fragment_buffers;
        kernel->accept(&find);
    }

private:
    /** This thread's lane. */
    Expr lane() const {
        internal_assert(lanes && is_const(lanes->extent, warp))
            << "tensor-core emulation: the innermost thread loop is not the 32 lanes of a warp\n";
        return Variable::make(Int(32), lanes->name) - lanes->min;
    }
    /** `e` as lane `l` of this warp computes it. */
    Expr at_lane(const Expr &e, const Expr &l) const {
        lane();  // checks the loop
        return simplify(substitute(lanes->name, l + lanes->min, substitute(lane_dependent, e)));
    }
    /** The group (l / 4) and the thread in the group (l % 4, a constant) of the lane l whose
     * register entry `i` holds. */
    std::pair<Expr, int> entry_lane(int i) const {
        return i < 4 ? std::make_pair(lane() / 4, i) : std::make_pair(2 * (lane() % 4) + (i - 4) / 4, (i - 4) % 4);
    }

    static Expr load(const Type &t, const std::string &buffer, const Expr &index) {
        return Load::make(t, buffer, simplify(index), Buffer<>(), Parameter(), const_true(), ModulusRemainder());
    }
    static Stmt store(const std::string &buffer, const Expr &value, const Expr &index) {
        return Store::make(buffer, value, simplify(index), Parameter(), const_true(), ModulusRemainder());
    }
    /** body(0); ...; body(extent - 1), unrolled: a loop would do, but pocl puts barriers
     * around an innermost loop without barriers (ImplicitLoopBarriers), which would add the
     * very order between the threads this emulation must not add. */
    static Stmt for_each(int extent, const std::function<Stmt(int)> &body) {
        std::vector<Stmt> stmts;
        for (int i = 0; i < extent; i++) {
            stmts.push_back(body(i));
        }
        return Block::make(stmts);
    }
    /** A private array around `body` (freed at its end, as lowering frees every allocation). */
    static Stmt allocate(const std::string &name, const Type &t, int extent, const Stmt &body) {
        return Allocate::make(name, t, MemoryType::Stack, {extent}, const_true(), Block::make(body, Free::make(name)));
    }
    static Expr as_bits(const Expr &e) {
        return e.type().is_uint() ? e : reinterpret(UInt(16), e);
    }
    /** Element `element` of the 16-byte row whose first element `e0` loads from shared
     * memory: ldmatrix reads the row from that one address (the marker's e1..e7 are the rest
     * of the row, which the LLVM rewrite checks). */
    static Expr row_element(const Expr &e0, const Expr &element) {
        struct Shift : IRMutator {
            Expr by;
            using IRMutator::visit;
            Expr visit(const Load *op) override {
                return Load::make(op->type, op->name, simplify(op->index + by), op->image, op->param, op->predicate,
                                  ModulusRemainder());
            }
        } shift;
        shift.by = element;
        return shift.mutate(e0);
    }

    /** Entry `i` of register `e`: a register variable, or a load from a fragment array (whose
     * index is the same on every lane of a warp). */
    Expr warp_register(const Expr &e, int i) const {
        if (const Variable *v = e.as<Variable>()) {
            auto it = replicas.find(v->name);
            internal_assert(it != replicas.end())
                << "tensor-core emulation: register " << v->name << " does not come from an ldmatrix\n";
            return load(v->type, it->second, i);
        }
        if (const Load *ld = e.as<Load>()) {
            internal_assert(fragment_buffers.count(ld->name))
                << "tensor-core emulation: register operand " << e << " does not come from an ldmatrix\n";
            return load(ld->type, ld->name, ld->index * entries + i);
        }
        if (const Cast *c = e.as<Cast>()) {
            return cast(c->type, warp_register(c->value, i));
        }
        internal_assert(false) << "tensor-core emulation: register operand " << e
                               << " does not come from an ldmatrix\n";
        return Expr();
    }
    bool is_register(const Expr &e) const {
        if (const Variable *v = e.as<Variable>()) return replicas.count(v->name);
        if (const Load *ld = e.as<Load>()) return fragment_buffers.count(ld->name);
        if (const Cast *c = e.as<Cast>()) return is_register(c->value);
        return false;
    }

    /** Writes every entry of register j of ldmatrix `ld`, through write(i, value): lane l =
     * 4g + t gets row g, elements 2t and 2t + 1 (without .trans) or rows 2t and 2t + 1,
     * element g (.trans) of matrix j, whose row r starts at the address lane 8j + r gives (its
     * e0, as that lane computes it); the smaller index in the low half. */
    Stmt ldmatrix(const Call *ld, const std::function<Stmt(int, const Expr &)> &write) const {
        internal_assert(ld->args.size() == ldmatrix_marker_args && is_const(ld->args[0]));
        const bool trans = ld->name == ldmatrix_trans_name;
        const int j = (int)*as_const_int(ld->args[0]);
        return for_each(entries, [&](int i) {
            const auto [g, t] = entry_lane(i);
            Expr value;
            for (int h = 1; h >= 0; h--) {
                const Expr row = trans ? Expr(2 * t + h) : g, element = trans ? g : Expr(2 * t + h);
                Expr half = cast(UInt(32), as_bits(row_element(at_lane(ld->args[1], 8 * j + row), element)));
                value = value.defined() ? (value << 16) | half : half;
            }
            return write(i, value);
        });
    }

    /** `let r = <register>`: r becomes an array of entries of its own. */
    Stmt replicate(const LetStmt *op, const std::function<Stmt(const std::string &)> &fill) {
        const std::string array = unique_name(op->name + "_lanes");
        Stmt filled = fill(array);
        replicas[op->name] = array;
        Stmt body = mutate(op->body);
        replicas.erase(op->name);
        return allocate(array, op->value.type(), entries, Block::make(filled, body));
    }

    Stmt visit(const LetStmt *op) override {
        if (const Call *ld = marker(op->value, ldmatrix_prefix)) {
            return replicate(op, [&](const std::string &array) {
                return ldmatrix(ld, [&](int i, const Expr &v) { return store(array, cast(op->value.type(), v), i); });
            });
        }
        if (is_register(op->value)) {
            return replicate(op, [&](const std::string &array) {
                return for_each(entries, [&](int i) { return store(array, warp_register(op->value, i), i); });
            });
        }
        if (!lanes) return IRMutator::visit(op);
        // Lets the rows' addresses may use, as every lane computes them.
        Expr value = substitute(lane_dependent, op->value);
        const bool depends = expr_uses_var(value, lanes->name);
        if (depends) lane_dependent[op->name] = value;
        Stmt s = IRMutator::visit(op);
        if (depends) lane_dependent.erase(op->name);
        return s;
    }

    Stmt visit(const Allocate *op) override {
        if (!fragment_buffers.count(op->name)) return IRMutator::visit(op);
        internal_assert(op->extents.size() == 1)
            << "tensor-core emulation: fragment array " << op->name << " is not flat\n";
        return Allocate::make(op->name, op->type, op->memory_type, {simplify(op->extents[0] * entries)}, op->condition,
                              mutate(op->body), op->new_expr, op->free_function);
    }

    Expr visit(const Load *op) override {
        internal_assert(!fragment_buffers.count(op->name))
            << "tensor-core emulation: fragment array " << op->name << " read outside an mma or a register copy\n";
        return IRMutator::visit(op);
    }

    Stmt visit(const Store *op) override {
        if (fragment_buffers.count(op->name)) {
            // A register stage's slot: every entry of the register.
            auto write = [&](int i, const Expr &v) {
                return store(op->name, cast(op->value.type(), v), op->index * entries + i);
            };
            if (const Call *ld = marker(op->value, ldmatrix_prefix)) return ldmatrix(ld, write);
            return for_each(entries, [&](int i) { return write(i, warp_register(op->value, i)); });
        }
        const Call *mma = marker(op->value, mma_prefix);
        return mma ? emulate_mma(op, mma) : IRMutator::visit(op);
    }

    static Type element_of(const Call *mma) {
        return mma->name == mma_bf16_name ? BFloat(16) : Float(16);
    }

    /** d_q of this lane (see the header), from the entries of its registers. */
    Stmt emulate_mma(const Store *st, const Call *mma) const {
        internal_assert(mma->args.size() == mma_marker_args && is_const(mma->args[0]));
        const int q = (int)*as_const_int(mma->args[0]);
        auto half = [&](const Expr &reg, int k) {
            Expr bits = k % 2 ? reg >> 16 : reg & 0xffff;
            return decode(cast(UInt(16), bits), element_of(mma));
        };
        Expr sum = mma->args[7 + q];
        for (int k = 0; k < 16; k++) {
            // d_q is D[r][c], r = g + 8 (q / 2), c = 2t + q % 2. A[r][k]: lane 4 (r % 8) +
            // (k % 8) / 2 = 4g + (k % 8) / 2, register a(r / 8 + 2 (k / 8)), half k % 2;
            // B[k][c]: lane 4c + (k % 8) / 2 = 8t + 4 (q % 2) + (k % 8) / 2, register b(k / 8),
            // half k % 2.
            Expr a = half(warp_register(mma->args[1 + q / 2 + 2 * (k / 8)], (k % 8) / 2), k);
            Expr b = half(warp_register(mma->args[5 + k / 8], 4 + 4 * (q % 2) + (k % 8) / 2), k);
            sum = sum + a * b;
        }
        return Store::make(st->name, sum, st->index, st->param, st->predicate, st->alignment);
    }
};

class EmulateKernels : public IRMutator {
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        return has_markers(Stmt(op)) ? EmulateMarkers(op).mutate(Stmt(op)) : Stmt(op);
    }
};

}  // namespace

Stmt emulate_tensor_cores(const Stmt &s) {
    return HalvesAsBits().mutate(ScalarizePredicated().mutate(EmulateKernels().mutate(s)));
}

}  // namespace testing
}  // namespace alcop
