#ifndef ALCOP_SWIZZLE_OPERANDS_H
#define ALCOP_SWIZZLE_OPERANDS_H

/** \file
 * Swizzles shared tiles (plan/Swizzle.h) so that the lanes of one phase hit distinct 16-byte
 * bank groups: the tiles of tensor-core operands by their rows (the ldmatrix rows of one
 * phase, and the copies' writes down a column of the tile), and the other pipelined tiles
 * whose slots the plan could align at no cost (fp32 tiles read as register fragments) by the
 * window rule that removes the most bank conflicts from the kernels' real accesses
 * (analysis/BankConflicts.h), measured by applying each; none if none helps.
 *
 * Runs on the Stmt after rewrite_inner_products. Every Load and Store of the merged shared
 * allocation whose bytes lie in a swizzled tile gets its index through Swizzle::address, the
 * one map of the layout: the producers' writes whatever their copy kind, the ldmatrix row
 * addresses (the 8 elements of a row stay consecutive: a row is one 16-byte chunk, which the
 * map moves whole) and any other load. So the writers and the readers agree by construction.
 * A tensor-core tile's writes go through the map with the kernel's lets substituted, so that
 * terms a copy adds and subtracts through separate lets cancel first and the mapped address
 * stays invariant across chunks.
 *
 * A tile is swizzled only where that is provably safe:
 *  - the operand's tile has one constant byte range in the allocation made of whole 128-byte
 *    windows (the map permutes the chunks of each window, so nothing leaves the tile);
 *  - every access to the allocation is bounded and lies wholly inside or wholly outside it;
 *  - a pipelined operand's slots are the ones the plan aligned for the swizzle
 *    (PipelinePlan.h: each slot whole periods of swizzle_period bytes from a multiple of
 *    it); its tile is then all its slots, and since the map counts rows from byte 0 of the
 *    allocation, every slot gets the same layout and every byte stays in its slot. Slots
 *    only 16-byte aligned (the plan could not move them) are left as they are: a 128-byte
 *    window could straddle two of them.
 * Anything else keeps its layout; the bank-conflict checker reports what that costs.
 */

#include "plan/PipelinePlan.h"
#include "plan/Swizzle.h"
#include "rewrite/MmaInnerProduct.h"

#include <set>
#include <string>
#include <vector>

namespace alcop {

/** Swizzles the tiles of `operands` (from rewrite_inner_products) in `s`, an operand in
 * `pipelined` only where `aligned_slots` (from inject_pipelines) holds its slots, and the
 * other buffers of `aligned_slots` where a window rule removes bank conflicts. Appends what
 * it swizzled to `plan` when given. */
Halide::Internal::Stmt swizzle_operands(const Halide::Internal::Stmt &s, const std::vector<OperandRows> &operands,
                                        const std::set<std::string> &pipelined,
                                        const std::vector<SwizzleAlignedSlots> &aligned_slots = {},
                                        std::vector<SwizzledBuffer> *plan = nullptr);

}  // namespace alcop

#endif
