#include "analysis/BankConflicts.h"

#include "analysis/KernelContext.h"
#include "codegen/TensorCoreMarkers.h"

#include "Error.h"

#include <algorithm>
#include <set>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

constexpr int64_t window_bytes = 128;  // 32 banks of 4 bytes

bool is_access_size(int bytes) {
    return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

// Floor division, so that a negative address (never valid, but possible in a bad index) still
// lands in a unit.
int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

class SharedAccessFinder : public KernelContextVisitor {
    using KernelContextVisitor::visit;

public:
    std::vector<KernelBankConflicts> kernels;
    std::map<const For *, std::string> names;  ///< kernel_names()

private:
    std::set<std::string> shared_buffers;
    std::vector<const For *> thread_loops;  // outermost first
    std::vector<const For *> block_loops;

    void visit(const For *op) override {
        const bool outermost_block = op->for_type == ForType::GPUBlock && kernel_depth == 0;
        if (outermost_block) {
            kernels.push_back({names.at(op), {}, 0});
        }
        const bool is_thread = op->for_type == ForType::GPUThread && kernel_depth > 0;
        const bool is_block = op->for_type == ForType::GPUBlock;
        if (is_thread) {
            thread_loops.push_back(op);
        } else if (is_block) {
            block_loops.push_back(op);
        }
        KernelContextVisitor::visit(op);
        if (is_thread) {
            thread_loops.pop_back();
        } else if (is_block) {
            block_loops.pop_back();
        }
    }

    void visit(const Allocate *op) override {
        const bool shared = op->memory_type == MemoryType::GPUShared && kernel_depth > 0;
        if (shared) {
            shared_buffers.insert(op->name);
        }
        KernelContextVisitor::visit(op);
        if (shared) {
            shared_buffers.erase(op->name);
        }
    }

    void visit(const Load *op) override {
        if (shared_buffers.count(op->name)) {
            record(op->name, op->type, op->index, false, false);
        }
        KernelContextVisitor::visit(op);
    }

    void visit(const Store *op) override {
        if (shared_buffers.count(op->name)) {
            record(op->name, op->value.type(), op->index, true, false);
        }
        KernelContextVisitor::visit(op);
    }

    void visit(const Call *op) override {
        if (starts_with(op->name, ldmatrix_prefix) && op->args.size() == (size_t)ldmatrix_marker_args) {
            // One row address per lane; the 8 element loads are the row, not 8 accesses.
            const int64_t *j = as_const_int(op->args[0]);
            const Load *e0 = op->args[1].as<Load>();
            if (j && *j == 0 && e0 && shared_buffers.count(e0->name)) {
                record(e0->name, e0->type.with_lanes(8), e0->index, false, true);
            }
            op->args[0].accept(this);
            return;
        }
        KernelContextVisitor::visit(op);
    }

    bool depends_on_threads(const Expr &e) const {
        for (const For *loop : thread_loops) {
            if (expr_uses_var(e, loop->name)) {
                return true;
            }
        }
        return false;
    }

    void record(const std::string &buffer, Type type, const Expr &index, bool is_store, bool is_ldmatrix) {
        if (kernel_depth == 0 || kernels.empty()) {
            return;
        }
        Expr element = ctx.inline_lets(index);
        if (!depends_on_threads(element)) {
            return;  // the same address on every lane: a broadcast
        }
        KernelBankConflicts &kernel = kernels.back();
        const int bytes = type.bytes() * (is_ldmatrix ? 8 : type.lanes());
        if (const Ramp *ramp = element.as<Ramp>()) {
            element = is_const_one(ramp->stride) ? ramp->base : Expr();
        } else if (!is_ldmatrix && type.lanes() != 1) {
            element = Expr();  // a gather
        }
        std::optional<LaneAddresses> lanes;
        Expr address;
        if (element.defined() && is_access_size(bytes)) {
            address = simplify(element * type.bytes());
            lanes = lane_addresses(address, threads(), fixed_values());
        }
        if (!lanes) {
            kernel.unanalyzed++;
            return;
        }
        mask_inactive_lanes(*lanes);
        SharedAccess access;
        access.buffer = buffer;
        access.is_store = is_store;
        access.is_ldmatrix = is_ldmatrix;
        access.access_bytes = bytes;
        access.byte_address = address;
        access.cost = count_bank_conflicts(*lanes, bytes);
        access.lanes = *lanes;
        kernel.accesses.push_back(access);
    }

    std::vector<ThreadDim> threads() const {
        std::vector<ThreadDim> dims;
        for (auto it = thread_loops.rbegin(); it != thread_loops.rend(); ++it) {
            const int64_t *extent = as_const_int(ctx.inline_lets((*it)->extent));
            dims.push_back({(*it)->name, extent ? *extent : 1});
        }
        return dims;
    }

    // Every loop around the access but the thread loops, at its first iteration.
    std::map<std::string, Expr> fixed_values() const {
        std::map<std::string, Expr> fixed;
        for (const For *loop : block_loops) {
            fixed[loop->name] = ctx.inline_lets(loop->min);
        }
        for (const auto &loop : ctx.loops) {
            const bool thread = std::any_of(thread_loops.begin(), thread_loops.end(),
                                            [&](const For *t) { return t->name == loop.first; });
            if (!thread && loop.second.has_lower_bound()) {
                fixed[loop.first] = loop.second.min;
            }
        }
        return fixed;
    }

    // Lanes whose thread ids fall outside the ranges an enclosing if narrowed the loops to.
    void mask_inactive_lanes(LaneAddresses &lanes) const {
        std::vector<ThreadDim> dims = threads();
        for (int lane = 0; lane < (int)lanes.size(); lane++) {
            int64_t id = lane;
            for (const ThreadDim &d : dims) {
                const int64_t value = id % d.extent;
                id /= d.extent;
                for (const auto &loop : ctx.loops) {
                    if (loop.first != d.var) {
                        continue;
                    }
                    const int64_t *lo = as_const_int(loop.second.min), *hi = as_const_int(loop.second.max);
                    if ((lo && value < *lo) || (hi && value > *hi)) {
                        lanes[lane] = std::nullopt;
                    }
                }
            }
        }
    }
};

}  // namespace

BankConflicts count_bank_conflicts(const LaneAddresses &lanes, int access_bytes) {
    internal_assert(is_access_size(access_bytes)) << "bank conflicts: access of " << access_bytes << " bytes\n";
    internal_assert(lanes.size() <= (size_t)warp_lanes) << "bank conflicts: more lanes than a warp\n";
    const int64_t unit = std::max(access_bytes, 4);
    const int64_t units_per_window = window_bytes / unit;
    const size_t lanes_per_phase = (size_t)units_per_window;
    BankConflicts cost;
    for (size_t first = 0; first < lanes.size(); first += lanes_per_phase) {
        // For each bank position in the window, the distinct units the phase touches there.
        std::map<int64_t, std::set<int64_t>> units_at;
        for (size_t lane = first; lane < std::min(lanes.size(), first + lanes_per_phase); lane++) {
            if (lanes[lane]) {
                const int64_t u = floor_div(*lanes[lane], unit);
                units_at[((u % units_per_window) + units_per_window) % units_per_window].insert(u);
            }
        }
        if (units_at.empty()) {
            continue;
        }
        size_t wavefronts = 0;
        for (const auto &at : units_at) {
            wavefronts = std::max(wavefronts, at.second.size());
        }
        cost.phases++;
        cost.wavefronts += (int)wavefronts;
    }
    return cost;
}

std::optional<LaneAddresses> lane_addresses(const Expr &address, const std::vector<ThreadDim> &threads,
                                            const std::map<std::string, Expr> &fixed, int warp) {
    int64_t block_threads = 1;
    for (const ThreadDim &d : threads) {
        block_threads *= d.extent;
    }
    Expr base = address;
    for (const auto &f : fixed) {
        base = substitute(f.first, f.second, base);
    }
    LaneAddresses lanes(warp_lanes);
    for (int lane = 0; lane < warp_lanes; lane++) {
        int64_t id = (int64_t)warp * warp_lanes + lane;
        if (id >= block_threads) {
            continue;  // inactive
        }
        std::map<std::string, Expr> ids;
        for (const ThreadDim &d : threads) {
            ids[d.var] = make_const(Int(32), id % d.extent);
            id /= d.extent;
        }
        Expr value = simplify(substitute(ids, base));
        const int64_t *c = as_const_int(value);
        if (!c) {
            return std::nullopt;
        }
        lanes[lane] = *c;
    }
    return lanes;
}

int KernelBankConflicts::conflicts() const {
    int n = 0;
    for (const SharedAccess &a : accesses) {
        n += a.cost.conflicts();
    }
    return n;
}

std::vector<KernelBankConflicts> find_bank_conflicts(const Stmt &s) {
    SharedAccessFinder finder;
    finder.names = kernel_names(s);
    s.accept(&finder);
    return finder.kernels;
}

}  // namespace alcop
