#include "codegen/BFloat16Casts.h"

#include "alcop/BFloat16.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

class LowerBFloat16Casts : public IRMutator {
    using IRMutator::visit;
    /** The outermost gpu_block loop of the kernel being visited (null outside kernels). */
    const For *kernel = nullptr;

    bool in_cuda_kernel() const {
        return kernel && kernel->device_api == DeviceAPI::CUDA;
    }

    /** OpenCL has no bf16 type, and Halide 14's OpenCL backend names it half ("OpenCL kernel
     * uses half type, but CLHalf target flag not enabled"), the wrong type: name the buffer. */
    void check_opencl(const Type &t, const std::string &buffer) const {
        if (!kernel || kernel->device_api != DeviceAPI::OpenCL || !t.is_bfloat()) return;
        user_error << "alcop: " << user_name(buffer) << " holds bf16 values in an OpenCL kernel (of "
                   << user_name(kernel->name.substr(0, kernel->name.find('.'))) << "), and OpenCL has no bf16 type. "
                   << "Use f16 (with the target feature cl_half) or f32 for OpenCL, or a CUDA target.\n";
    }

    Stmt visit(const For *op) override {
        if (kernel || op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        kernel = op;
        Stmt s = IRMutator::visit(op);
        kernel = nullptr;
        return s;
    }

    Expr visit(const Load *op) override {
        check_opencl(op->type, op->name);
        return IRMutator::visit(op);
    }

    Stmt visit(const Store *op) override {
        // The value first: a copy into a staged tile names the input it reads.
        Stmt s = IRMutator::visit(op);
        check_opencl(op->value.type(), op->name);
        return s;
    }

    Expr visit(const Cast *op) override {
        Expr value = mutate(op->value);
        if (in_cuda_kernel() && op->type.is_bfloat()) {
            return round_to_bfloat16(cast(Float(32, value.type().lanes()), value));
        }
        if (in_cuda_kernel() && value.type().is_bfloat()) {
            return lower_float16_cast(Cast::make(op->type, value).as<Cast>());
        }
        return value.same_as(op->value) ? Expr(op) : Cast::make(op->type, value);
    }
};

}  // namespace

Expr round_to_bfloat16(const Expr &f) {
    user_assert(f.defined() && f.type().element_of() == Float(32))
        << "alcop::round_to_bfloat16 rounds an fp32 value, not "
        << (f.defined() ? type_to_c_type(f.type(), false) : "an undefined Expr") << ": cast it to Float(32) first.\n";
    const int lanes = f.type().lanes();
    const Expr u = reinterpret(UInt(32, lanes), f);
    const Expr rounded = (u + (0x7fff + ((u >> 16) & 1))) >> 16;
    const Expr nan = (u & 0x7fffffff) > 0x7f800000;
    return reinterpret(BFloat(16, lanes), cast(UInt(16, lanes), select(nan, (u >> 16) | 0x40, rounded)));
}

Stmt lower_bfloat16_casts(const Stmt &s) {
    return LowerBFloat16Casts().mutate(s);
}

}  // namespace alcop
