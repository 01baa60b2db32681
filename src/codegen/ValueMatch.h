#ifndef ALCOP_VALUE_MATCH_H
#define ALCOP_VALUE_MATCH_H

/** \file
 * What the marker rewrites (AsyncCopyRewrite.cpp, TensorCoreRewrite.cpp) share about LLVM
 * values: Halide recomputes a pure expression wherever it is used, so two operands that are
 * "the same" in the Halide IR are often distinct but identical trees of instructions.
 */

namespace llvm {
class Value;
}  // namespace llvm

namespace alcop {

/** Whether a and b compute the same value: the same value, or the same operation of a pure
 * instruction (arithmetic, casts, GEPs, compares, selects, vector and aggregate lane moves,
 * calls to intrinsics that access no memory) on operands that are the same. A bounded walk;
 * false means "not proven". Loads are never the same unless they are one instruction. */
bool same_value(const llvm::Value *a, const llvm::Value *b);

}  // namespace alcop

#endif
