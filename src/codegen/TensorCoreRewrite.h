#ifndef ALCOP_TENSOR_CORE_REWRITE_H
#define ALCOP_TENSOR_CORE_REWRITE_H

/** \file
 * The tensor-core half of the LLVM marker rewrite (the contract is TensorCoreMarkers.h). The
 * one marker pass (AsyncCopyRewrite.cpp) calls these; nothing else does.
 */

namespace llvm {
class Function;
}  // namespace llvm

namespace alcop {

/** Whether f is a tensor-core marker declaration (by its name's prefix). A marker whose
 * signature is not the contract's is a fatal error, not a silently unresolved call. */
bool is_tensor_core_marker(const llvm::Function &f);

/** Replaces every tensor-core marker call in f by NVVM intrinsic calls (ldmatrix first, so
 * that the mma operands it feeds compare equal). Returns whether f changed. Breaches of the
 * contract are fatal errors. */
bool rewrite_tensor_core_markers(llvm::Function &f);

}  // namespace alcop

#endif
