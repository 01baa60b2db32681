#ifndef ALCOP_KERNEL_CONTEXT_H
#define ALCOP_KERNEL_CONTEXT_H

/** \file
 * What is known at a point inside a GPU kernel, for the passes that must bound indices: the
 * lets of the kernel (inlined into an index so that the simplifier sees through them) and
 * the ranges of the gpu_thread and serial loops around the point. Used to find where a Func
 * lives in a merged shared allocation and which part of a register array a thread uses.
 *
 * A variable that is not a loop in the context (e.g. the streaming loop's own variable, which
 * the analysis leaves out on purpose) stays symbolic: an index that depends on it then has
 * no constant bounds.
 */

#include "Halide.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace alcop {

struct KernelContext {
    std::vector<std::pair<std::string, Halide::Expr>> lets;                 ///< outermost first
    std::vector<std::pair<std::string, Halide::Internal::Interval>> loops;  ///< outermost first

    Halide::Expr inline_lets(Halide::Expr e) const;

    /** Narrow the loop ranges to a box containing every point where `condition` holds
     * (thread predicates of fused gpu_thread loops guard the stages that use fewer threads,
     * e.g. `ty * 16 + tx <= 127`). The box may be larger than the guarded set, never smaller. */
    void assume(const Halide::Expr &condition);

    void push_loop(const Halide::Internal::For *op);

    /** Bounds of `e` over the loop ranges, with the lets inlined and each loop's terms
     * collected (collect_terms). */
    Halide::Internal::Interval bounds(const Halide::Expr &e) const;
};

/** `e` with the terms of each of `vars` collected into one (Halide's solver), so that a
 * variable that a copy's index adds in one let and subtracts in another cancels: the
 * simplifier leaves ((t - ko) * 4 + (ko * 4 + u)) * 8, whose bounds span ko's whole range. */
Halide::Expr collect_terms(Halide::Expr e, const std::vector<std::string> &vars);

/** The largest value of a loop variable whose largest value is `max` (min + extent - 1, the
 * lets inlined): `max` itself, or where that is not a constant, a constant bound of it if
 * there is one. A guarded tail (a K step loop of extent min(K - k, KT), the last chunk's)
 * then ranges like the whole chunks, and so do the indices it reaches. */
Halide::Expr loop_max(const Halide::Expr &max);

/** What a conjunct `K % c == 0` of a condition says (c a constant of at least 2): K and c. The
 * specializations on a multiple (the Alcop autoscheduler's on a runtime K) state it; every
 * other conjunct says none. */
std::optional<std::pair<Halide::Expr, int64_t>> as_multiple(const Halide::Expr &conjunct);

/** An IRVisitor that keeps `ctx` up to date inside GPU kernels (below gpu_block loops): the
 * lets, the ranges of the non-block loops, narrowed by the conditions of enclosing ifs.
 * Subclasses that override a visit call the base one to descend. */
class KernelContextVisitor : public Halide::Internal::IRVisitor {
protected:
    using Halide::Internal::IRVisitor::visit;

    KernelContext ctx;
    int kernel_depth = 0;  ///< > 0 inside gpu_block loops

    void visit(const Halide::Internal::For *op) override;
    void visit(const Halide::Internal::LetStmt *op) override;
    void visit(const Halide::Internal::Let *op) override;
    void visit(const Halide::Internal::IfThenElse *op) override;

public:
    KernelContextVisitor() = default;
    /** Starts inside a kernel, at a point where `ctx` is known. */
    explicit KernelContextVisitor(KernelContext ctx) : ctx(std::move(ctx)), kernel_depth(1) {
    }
};

/** An IRMutator that keeps `ctx.lets` up to date (the lets around the node it mutates,
 * outermost first); which loops go into `ctx` is the subclass's to say (push_loop). */
class KernelContextMutator : public Halide::Internal::IRMutator {
protected:
    using Halide::Internal::IRMutator::visit;

    KernelContext ctx;

    Halide::Internal::Stmt visit(const Halide::Internal::LetStmt *op) override;

public:
    KernelContextMutator() = default;
    explicit KernelContextMutator(KernelContext ctx) : ctx(std::move(ctx)) {
    }
};

/** A name for each kernel of `s` (each outermost gpu_block loop): its loop's name, and where
 * several kernels share it (the branches of a specialization) "name (i of n)", in the order of
 * `s`, so that reports keep them apart. */
std::map<const Halide::Internal::For *, std::string> kernel_names(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
