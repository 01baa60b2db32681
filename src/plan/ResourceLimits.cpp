#include "plan/ResourceLimits.h"

#include "Error.h"
#include "model/CostModel.h"
#include "model/GpuSpec.h"

#include <set>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The shared memory a block may use (Options::shared_memory_limit, in Directive.h), and why. */
int64_t shared_memory_limit(const Options &options, DeviceAPI device, std::string *why) {
    if (options.shared_memory_limit > 0) {
        *why = "set by alcop::Options::shared_memory_limit";
        return options.shared_memory_limit;
    }
    if (device == DeviceAPI::CUDA && options.cuda_opt_in) {
        *why = "the opt-in maximum of the " + model::default_gpu().name + ", declared by alcop::Options::cuda_opt_in";
        return model::smem_limit_bytes(model::default_gpu(), model::RuntimeLimits::OptIn);
    }
    if (device == DeviceAPI::CUDA) {
        *why = "the default for CUDA: Halide 14's runtime launches kernels without the shared-memory opt-in";
    } else if (device == DeviceAPI::OpenCL) {
        *why = "the default for OpenCL, whose device's local memory size is not known at compile time";
    } else {
        *why = "the default for GPU kernels";
    }
    return model::smem_limit_bytes(model::default_gpu(), model::RuntimeLimits::HalideDefault);
}

/** More than any GPU gives a thread (255 on NVIDIA's, 512 with the accumulation registers of
 * AMD's CDNA). */
constexpr int max_registers_per_thread = 512;

/** How far a kernel on `device` may raise its shared-memory limit. */
std::string raise_shared_hint(DeviceAPI device) {
    std::ostringstream hint;
    if (device == DeviceAPI::CUDA) {
        hint << ": an app that links HalideAlcop::cuda_opt_in (alcop/CudaOptIn.h) may use its GPU's opt-in maximum ("
             << model::default_gpu().smem_per_block_optin << " bytes on the " << model::default_gpu().name << ")";
    } else if (device == DeviceAPI::OpenCL) {
        hint << ": up to the device's CL_DEVICE_LOCAL_MEM_SIZE";
    }
    return hint.str();
}

/** The registers per thread the register slots of one loop may take (Options::register_limit). */
int register_limit(const Options &options, std::string *why) {
    // The check bounds the register stages, and with them what the rewrite unrolls.
    user_assert(options.register_limit <= max_registers_per_thread)
        << "alcop::Options::register_limit is " << options.register_limit << ", but no GPU gives a thread more "
        << "than " << max_registers_per_thread << " registers.\n";
    if (options.register_limit > 0) {
        *why = "set by alcop::Options::register_limit";
        return options.register_limit;
    }
    if (options.target.has_feature(Target::CUDA) && options.cuda_opt_in) {
        *why = "the opt-in maximum, declared by alcop::Options::cuda_opt_in";
        return model::register_limit(model::default_gpu(), model::RuntimeLimits::OptIn);
    }
    if (options.target.has_feature(Target::CUDA)) {
        *why = "the default for CUDA: Halide 14's runtime caps every kernel at that many registers per thread";
        return model::register_limit(model::default_gpu(), model::RuntimeLimits::HalideDefault);
    }
    *why = "the default: the most a thread of any GPU the model knows holds before it spills";
    return model::default_gpu().max_registers_per_thread;
}

}  // namespace

int64_t kernel_shared_memory_limit(const Options &options, DeviceAPI device) {
    std::string why;
    return shared_memory_limit(options, device, &why);
}

int fragment_register_limit(const Options &options) {
    std::string why;
    return register_limit(options, &why);
}

void check_resource_limits(const PipelineAnalysis &analysis, const std::vector<KernelPlan> &plans,
                           const std::vector<FragmentLoop> &fragments, const Options &options) {
    for (size_t i = 0; i < plans.size(); i++) {
        const KernelPlan &plan = plans[i];
        std::string why;
        const int64_t limit = shared_memory_limit(options, analysis.kernels[i].device, &why);
        if (plan.total_bytes <= limit) continue;
        std::ostringstream funcs, slots;
        std::set<std::string> named;
        int64_t largest_loop = 0;  // the bytes of the slots of the loop that has the most
        for (const LoopPlan &l : plan.loops) {
            int64_t bytes = 0;
            for (const BufferPlan &b : l.buffers) {
                bytes += b.stages * b.slot_bytes;
            }
            largest_loop = std::max(largest_loop, bytes);
            for (const BufferPlan &b : l.buffers) {
                if (!named.insert(b.func).second) continue;
                funcs << (named.size() > 1 ? ", " : "") << user_name(b.func);
                slots << (named.size() > 1 ? ", " : "") << user_name(b.func) << ": " << b.stages << " stages x "
                      << b.slot_bytes << " bytes";
            }
        }
        // The rest: the kernel's other shared data (its old allocation less the pipelined
        // tiles) and what the slots leave unused, e.g. the old place of a tile whose slots
        // could not grow in place because another buffer follows it (PipelinePlan.h).
        std::string rest;
        const std::vector<PipelineLoop> &loops = analysis.kernels[i].loops;
        if (plan.total_known && plan.total_bytes > largest_loop) {
            if (loops.size() == 1) {
                int64_t old_tiles = 0;
                for (const StagedBuffer &b : loops[0].buffers) {
                    old_tiles += b.end - b.begin;
                }
                const int64_t other = std::max<int64_t>(analysis.kernels[i].allocation_bytes - old_tiles, 0);
                const int64_t unused = plan.total_bytes - largest_loop - other;
                if (other > 0) rest += ", " + std::to_string(other) + " bytes of the kernel's other data";
                if (unused > 0) {
                    rest += ", and " + std::to_string(unused) +
                            " bytes the slots leave unused (alignment, or a pipelined tile that other data follows in "
                            "the kernel's shared allocation, which cannot grow into its slots in place: pipelining "
                            "the Func of that data in the same loop too lets all the slots pack from the start)";
                }
            } else {
                rest = ", and " + std::to_string(plan.total_bytes - largest_loop) +
                       " bytes of the kernel's other data, its other loops' slots and alignment";
            }
        }
        user_error << "alcop::pipeline(" << funcs.str() << "): the GPU kernel that pipelines "
                   << (named.size() > 1 ? "them" : "it") << " would need " << (plan.total_known ? "" : "at least ")
                   << plan.total_bytes << " bytes of shared memory per block (" << slots.str() << rest
                   << "), more than the limit of " << limit << " bytes (" << why << "). Use fewer stages or smaller "
                   << "tiles, or raise the limit with alcop::Options::shared_memory_limit if the kernel may use "
                   << "more" << raise_shared_hint(analysis.kernels[i].device) << ".\n";
    }
    for (const FragmentLoop &l : fragments) {
        std::string why;
        const int limit = register_limit(options, &why);
        int64_t registers = 0;
        std::ostringstream funcs, slots;
        for (const Fragment &f : l.fragments) {
            const int64_t words = (f.storage->type.bytes() + 3) / 4;
            registers += (int64_t)l.stages * f.elements * words;
            const bool first = &f == &l.fragments.front();
            funcs << (first ? "" : ", ") << user_name(f.func);
            slots << (first ? "" : ", ") << user_name(f.func) << ": " << l.stages << " stages x " << f.elements << " x "
                  << f.storage->type.bytes() << " bytes";
        }
        user_assert(registers <= limit)
            << "alcop::pipeline(" << funcs.str() << ", Level::Register): the register slots in "
            << describe_loop(l.loop) << " would take " << registers << " 32-bit registers per thread (" << slots.str()
            << "), more than the limit of " << limit << " (" << why << "). Use fewer register "
            << "stages or smaller fragments, or raise the limit with alcop::Options::register_limit if the "
            << "kernel may use more"
            << (options.target.has_feature(Target::CUDA) ?
                    ": an app that links HalideAlcop::cuda_opt_in (alcop/CudaOptIn.h) may use " +
                        std::to_string(model::register_limit(model::default_gpu(), model::RuntimeLimits::OptIn)) :
                    std::string())
            << ".\n";
    }
}

void check_kernel_registers(const std::vector<KernelRegisters> &kernels, const Options &options,
                            const std::map<std::string, LaunchBounds> &bounds) {
    // The kernels of a Func's specializations (its whole-tile and partial-tile ones) share its
    // name and mostly its estimate: each distinct message is said once.
    std::set<std::string> said;
    for (const KernelRegisters &k : kernels) {
        std::string why;
        int limit = register_limit(options, &why);
        bool by_launch_bounds = false;
        const auto bound = bounds.find(k.kernel);
        if (bound != bounds.end()) {
            const model::GpuSpec &gpu = model::default_gpu();
            const int cap = model::registers_for_blocks(bound->second.threads, bound->second.blocks_per_sm, gpu);
            if (cap < limit) {
                limit = cap;
                by_launch_bounds = true;
                why = "what alcop::min_blocks_per_sm(" + (k.func.empty() ? k.kernel : user_name(k.func)) + ", " +
                      std::to_string(bound->second.blocks_per_sm) + ") leaves a thread: ptxas fits " +
                      std::to_string(bound->second.blocks_per_sm) + " blocks of " +
                      std::to_string(bound->second.threads) + " threads into the " +
                      std::to_string(gpu.registers_per_sm) + " registers of an SM";
            }
        }
        debug(1) << "alcop: kernel " << k.kernel << ": " << k.registers << " registers per thread estimated ("
                 << k.basis << "), limit " << limit << "\n";
        if (k.registers <= limit) continue;
        const bool cuda = options.target.has_feature(Target::CUDA);
        std::ostringstream message;
        message << "alcop: the GPU kernel of " << (k.func.empty() ? k.kernel : user_name(k.func))
                << " is estimated to need " << k.registers << " registers per thread (" << k.basis
                << "), more than the limit of " << limit << " (" << why << "): ptxas would spill the rest to local "
                << "memory, which makes a kernel several times slower. Use smaller tiles or fewer register stages"
                << (by_launch_bounds ? ", or ask for fewer blocks per SM" : "")
                << (cuda && !options.cuda_opt_in && options.register_limit == 0 && !by_launch_bounds ?
                        ", or link HalideAlcop::cuda_opt_in (alcop/CudaOptIn.h), which lifts the cap to " +
                            std::to_string(model::register_limit(model::default_gpu(), model::RuntimeLimits::OptIn)) +
                            ", and declare it with alcop::Options::cuda_opt_in" :
                        std::string())
                << ".\n";
        if (!said.insert(message.str()).second) continue;
        if (options.spills_are_errors) {
            user_error << message.str();
        } else {
            user_warning << message.str();
        }
    }
}

}  // namespace alcop
