#include "copy/GlobalAlignment.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** `a` with a positive modulus: Halide 14 returns -m for `x * -1`, which is as true of m. */
ModulusRemainder normalized(const ModulusRemainder &a) {
    const int64_t m = a.modulus < 0 ? -a.modulus : a.modulus;
    if (m == 0) return a;
    return ModulusRemainder(m, ((a.remainder % m) + m) % m);
}

class RecoverAlignment : public IRMutator {
    using IRMutator::visit;

    Scope<ModulusRemainder> known;

    ModulusRemainder alignment_of(const Expr &e) const {
        return normalized(modulus_remainder(e, known));
    }

    void learn(const std::string &name, const ModulusRemainder &fact) {
        known.push(name, fact);
        if (learned) (*learned)[name] = fact;
    }

    template<typename LetOrLetStmt>
    auto visit_let(const LetOrLetStmt *op) -> decltype(op->body) {
        const bool integer = op->value.type() == Int(32);
        if (integer) learn(op->name, alignment_of(op->value));
        auto result = IRMutator::visit(op);
        if (integer) known.pop(op->name);
        return result;
    }

    Expr visit(const Let *op) override {
        return visit_let(op);
    }

    Stmt visit(const LetStmt *op) override {
        return visit_let(op);
    }

    /** The fact `(v % m) == r` of an assert, if it is one. */
    static bool congruence(const Expr &c, std::string *name, ModulusRemainder *fact) {
        const EQ *eq = c.as<EQ>();
        const Mod *mod = eq ? eq->a.as<Mod>() : nullptr;
        const Variable *v = mod ? mod->a.as<Variable>() : nullptr;
        const int64_t *m = mod ? as_const_int(mod->b) : nullptr, *r = eq ? as_const_int(eq->b) : nullptr;
        if (!v || !m || !r || *m <= 0) return false;
        *name = v->name;
        *fact = normalized(ModulusRemainder(*m, *r));
        return true;
    }

    Stmt visit(const Block *op) override {
        // An assert that fails ends the pipeline: what follows it may use its condition.
        Stmt first = mutate(op->first);
        std::string name;
        ModulusRemainder fact;
        const AssertStmt *a = op->first.as<AssertStmt>();
        const bool fact_of_assert = a && congruence(a->condition, &name, &fact);
        if (fact_of_assert) learn(name, fact);
        Stmt rest = mutate(op->rest);
        if (fact_of_assert) known.pop(name);
        if (first.same_as(op->first) && rest.same_as(op->rest)) return op;
        return Block::make(first, rest);
    }

    Expr visit(const Load *op) override {
        Expr index = mutate(op->index), predicate = mutate(op->predicate);
        ModulusRemainder alignment = op->alignment;
        const Ramp *r = index.as<Ramp>();
        if (op->param.defined() && alignment.modulus == 1 && (r || index.type().is_scalar())) {
            alignment = alignment_of(r ? r->base : index);
        }
        if (index.same_as(op->index) && predicate.same_as(op->predicate) && alignment == op->alignment) return op;
        return Load::make(op->type, op->name, index, op->image, op->param, predicate, alignment);
    }

public:
    explicit RecoverAlignment(KnownAlignments *learned = nullptr) : learned(learned) {
    }

private:
    KnownAlignments *learned;
};

}  // namespace

Stmt recover_global_alignment(const Stmt &s, KnownAlignments *learned) {
    return RecoverAlignment(learned).mutate(s);
}

ModulusRemainder alignment_of(const Expr &e, const KnownAlignments &known) {
    Scope<ModulusRemainder> scope;
    for (const auto &[name, fact] : known) {
        if (expr_uses_var(e, name)) scope.push(name, fact);
    }
    return normalized(modulus_remainder(e, scope));
}

}  // namespace alcop
