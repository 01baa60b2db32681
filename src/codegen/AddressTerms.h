#ifndef ALCOP_ADDRESS_TERMS_H
#define ALCOP_ADDRESS_TERMS_H

/** \file
 * Addresses of the marker rewrites' operands (AsyncCopyRewrite.cpp, TensorCoreRewrite.cpp) as
 * `base + scale * index + bytes`, and the pointer arithmetic that computes an index of two
 * terms one term at a time.
 *
 * Why: Halide writes a buffer access as `gep T, base, sext(i32 index)`. Where a kernel's
 * addresses are sums of a term shared by several accesses (the chunk's offset along K, a
 * slot's base) and a term of each access (a copy's row, a fragment's swizzled column), NVPTX
 * widens and scales every sum on its own: an add, a mul.wide and, for a global address, a
 * 64-bit add per access and chunk. As two steps of pointer arithmetic, each term is widened
 * and scaled once (the access's term before the loop, LLVM hoists it; the shared term once a
 * chunk) and each access takes one 64-bit add, as CUTLASS's iterators do. Splitting the sign
 * extension over the sum is exact: Halide's indices do not overflow int32.
 */

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

namespace llvm {
template <typename T>
class ArrayRef;
class DataLayout;
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace alcop {

/** A pointer as base + scale * index + bytes, every constant term in `bytes`. */
struct ElementAddress {
    const llvm::Value *base = nullptr;
    const llvm::Value *index = nullptr;  // null: a constant address
    int64_t scale = 0;
    int64_t bytes = 0;
    bool signed_index = true;  // reached through sext only (an i32 index of Halide's)
};

/** `pointer` through bitcasts, address-space casts and one-index GEPs (one of them variable). */
ElementAddress element_address(const llvm::Value *pointer, const llvm::DataLayout &dl);

/** The two variable terms of `a`'s index where it is their sum (an add, or an or of disjoint
 * bits); none otherwise. */
using IndexTerms = std::pair<llvm::Value *, llvm::Value *>;
std::optional<IndexTerms> index_terms(const ElementAddress &a, const llvm::DataLayout &dl);

/** Whether access `i` of `accesses` (those of one block) shares exactly one term with another
 * (and so differs in the other): the accesses that gain from address_by_terms. Accesses that
 * share both terms already share one address and differ in immediates. */
bool shares_one_term(llvm::ArrayRef<std::optional<IndexTerms>> accesses, size_t i);

/** `a` as an i8 pointer in its base's address space, one step of pointer arithmetic per term
 * of `terms`, then the constant bytes. */
llvm::Value *address_by_terms(llvm::IRBuilderBase &b, const ElementAddress &a, const IndexTerms &terms,
                              const llvm::DataLayout &dl);

}  // namespace alcop

#endif
