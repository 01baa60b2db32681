#include "codegen/BFloat16Casts.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

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
        if (in_cuda_kernel && (op->type.is_bfloat() || value.type().is_bfloat())) {
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
