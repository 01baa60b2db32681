#include "copy/CopyLowering.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

class SynchronousCopy : public CopyLowering {
public:
    const char *name() const override {
        return "synchronous";
    }

    IssuedCopy issue(const Stmt &copy, const Expr &in_range) const override {
        return {IfThenElse::make(in_range, copy), Stmt()};
    }
};

}  // namespace

std::unique_ptr<CopyLowering> make_synchronous_copy() {
    return std::make_unique<SynchronousCopy>();
}

}  // namespace alcop
