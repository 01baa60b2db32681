#include "codegen/BFloat16Casts.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** `f` (fp32) rounded to the nearest bf16, ties to even. A NaN stays a quiet NaN of its sign:
 * Halide's float32_to_bfloat16 rounds NaNs whose payload is in the low half into an infinity,
 * and all-ones into zero. */
Expr float32_to_bfloat16_keeping_nans(const Expr &f) {
    const int lanes = f.type().lanes();
    const Expr u = reinterpret(UInt(32, lanes), f);
    const Expr rounded = (u + (0x7fff + ((u >> 16) & 1))) >> 16;
    const Expr nan = (u & 0x7fffffff) > 0x7f800000;
    return reinterpret(BFloat(16, lanes), cast(UInt(16, lanes), select(nan, (u >> 16) | 0x40, rounded)));
}

class LowerBFloat16Casts : public IRMutator {
    using IRMutator::visit;
    bool in_cuda_kernel = false;

    Stmt visit(const For *op) override {
        if (in_cuda_kernel || op->for_type != ForType::GPUBlock || op->device_api != DeviceAPI::CUDA) {
            return IRMutator::visit(op);
        }
        in_cuda_kernel = true;
        Stmt s = IRMutator::visit(op);
        in_cuda_kernel = false;
        return s;
    }

    Expr visit(const Cast *op) override {
        Expr value = mutate(op->value);
        if (in_cuda_kernel && op->type.is_bfloat()) {
            return float32_to_bfloat16_keeping_nans(cast(Float(32, value.type().lanes()), value));
        }
        if (in_cuda_kernel && value.type().is_bfloat()) {
            return lower_float16_cast(Cast::make(op->type, value).as<Cast>());
        }
        return value.same_as(op->value) ? Expr(op) : Cast::make(op->type, value);
    }
};

}  // namespace

Stmt lower_bfloat16_casts(const Stmt &s) {
    return LowerBFloat16Casts().mutate(s);
}

}  // namespace alcop
