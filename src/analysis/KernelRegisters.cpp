#include "analysis/KernelRegisters.h"

#include "analysis/PipelineAnalysis.h"
#include "model/CostModel.h"
#include "model/GpuSpec.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The per-thread arrays of each kernel, and the Funcs it produces. */
class FindKernels : public IRVisitor {
    using IRVisitor::visit;
    std::vector<std::string> producing;
    KernelRegisters *kernel = nullptr;
    int thread_depth = 0;

    void visit(const ProducerConsumer *op) override {
        if (op->is_producer) {
            producing.push_back(op->name);
            if (kernel) produced.back().insert(op->name);
        }
        IRVisitor::visit(op);
        if (op->is_producer) producing.pop_back();
    }
    void visit(const For *op) override {
        if (op->for_type == ForType::GPUBlock && !kernel) {
            kernels.push_back({op->name, producing.empty() ? "" : producing.back(), 0, ""});
            arrays.emplace_back();
            produced.emplace_back();
            kernel = &kernels.back();
            IRVisitor::visit(op);
            kernel = nullptr;
            return;
        }
        thread_depth += op->for_type == ForType::GPUThread;
        IRVisitor::visit(op);
        thread_depth -= op->for_type == ForType::GPUThread;
    }
    void visit(const Allocate *op) override {
        // Per thread: register arrays anywhere in the kernel (an accumulator that lives across
        // the serial loop around the thread loops is allocated outside them), and anything but
        // shared memory inside the thread loops. An unrolled loop gives a Func one allocation
        // per iteration, and a specialization one per branch: they are not live at once, so a
        // Func counts its largest.
        const bool per_thread = op->memory_type == MemoryType::Register ||
                                (thread_depth > 0 && op->memory_type != MemoryType::GPUShared &&
                                 op->memory_type != MemoryType::Heap);
        if (kernel && per_thread) {
            const int64_t words = std::max<int64_t>(op->constant_allocation_size(), 0) * ((op->type.bytes() + 3) / 4);
            int64_t &most = arrays.back()[func_of_allocation(op->name)];
            most = std::max(most, words);
        }
        IRVisitor::visit(op);
    }

public:
    std::vector<KernelRegisters> kernels;
    std::vector<std::map<std::string, int64_t>> arrays;  ///< per kernel: the largest words per Func
    std::vector<std::set<std::string>> produced;          ///< per kernel: the Funcs produced in it
};

}  // namespace

model::Schedule warp_tile_of(const TensorCoreUse &u, int register_stages) {
    model::Schedule tile;
    tile.tensor_cores = true;
    tile.tm = u.tile.warp_m;
    tile.tn = u.tile.warp_n;
    tile.kt = (int)u.k_tile;
    tile.reg_stages = register_stages;
    return tile;
}

std::string func_of_allocation(const std::string &allocation) {
    const size_t dot = allocation.rfind('.');
    if (dot == std::string::npos || dot + 1 == allocation.size()) return allocation;
    const bool numbered = std::all_of(allocation.begin() + dot + 1, allocation.end(),
                                      [](char c) { return isdigit((unsigned char)c); });
    return numbered ? allocation.substr(0, dot) : allocation;
}

std::vector<KernelRegisters> estimate_kernel_registers(const Stmt &s, const std::vector<TensorCoreUse> &uses,
                                                       const std::map<std::string, int> &register_stages) {
    FindKernels find;
    s.accept(&find);
    for (size_t k = 0; k < find.kernels.size(); k++) {
        KernelRegisters &kernel = find.kernels[k];
        std::map<std::string, int64_t> arrays = find.arrays[k];
        std::ostringstream basis;
        int64_t registers = 0;
        for (const TensorCoreUse &u : uses) {
            if (!find.produced[k].count(u.accumulator) || u.k_tile <= 0) continue;
            // The model's fit covers the accumulator, the fragments held or staged, and the
            // addresses.
            for (auto it = arrays.begin(); it != arrays.end();) {
                const bool covered = it->first == u.accumulator || it->first.rfind(fragment_registers_name, 0) == 0;
                it = covered ? arrays.erase(it) : std::next(it);
            }
            auto r = register_stages.find(u.accumulator);
            const model::Schedule tile = warp_tile_of(u, r == register_stages.end() ? 1 : std::max(r->second, 1));
            const int fit = model::estimate_registers(tile, model::default_gpu());
            registers += fit;
            basis << fit << " for the tensor cores of " << user_name(u.accumulator) << " (a " << tile.tm << " x "
                  << tile.tn << " warp tile, k tile " << tile.kt << ", " << tile.reg_stages << " register stage"
                  << (tile.reg_stages > 1 ? "s" : "") << ") and ";
        }
        if (registers == 0) {
            registers = model::kAddressAndLoopRegisters;
            basis << model::kAddressAndLoopRegisters << " for addresses and ";
        }
        int64_t words = 0;
        for (const auto &a : arrays) {
            words += a.second;
        }
        registers += words;
        basis << words << " words of per-thread arrays";
        kernel.registers = (int)std::min<int64_t>(registers, 1 << 20);
        kernel.basis = basis.str();
    }
    return find.kernels;
}

}  // namespace alcop
