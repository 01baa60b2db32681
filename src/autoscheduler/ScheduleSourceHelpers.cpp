#include "alcop/Autoscheduler.h"

#include "Error.h"

#include <algorithm>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;
using Halide::Func;  // not alcop::Func, which names the directives' subclass

void clamp_to_input_bounds(Func wrapper, const std::vector<int> &dims) {
    Function w = wrapper.function();
    const Call *call = w.values().size() == 1 ? w.values()[0].as<Call>() : nullptr;
    Parameter param;
    if (call && call->call_type == Call::Halide && call->func.defined()) {
        Function g(call->func);
        const Call *read = g.is_pure() && g.values().size() == 1 ? g.values()[0].as<Call>() : nullptr;
        if (read && read->call_type == Call::Image && read->args.size() == call->args.size()) {
            param = read->param;
        }
    } else if (call && call->call_type == Call::Image) {
        param = call->param;
    }
    user_assert(param.defined() && param.is_buffer()) << "clamp_to_input_bounds(" << w.name() << "): " << w.name()
                                                      << " is not a wrapper of a Func that reads an input buffer.\n";
    for (int d : dims) {
        user_assert(d >= 0 && d < (int)call->args.size())
            << "clamp_to_input_bounds(" << w.name() << "): " << param.name() << " has no dimension " << d << ".\n";
    }
    std::vector<Expr> args = call->args;
    for (size_t d = 0; d < call->args.size(); d++) {
        if (!dims.empty() && std::find(dims.begin(), dims.end(), (int)d) == dims.end()) continue;
        Expr min = Variable::make(Int(32), param.name() + ".min." + std::to_string(d), param);
        Expr extent = Variable::make(Int(32), param.name() + ".extent." + std::to_string(d), param);
        args[d] = clamp(call->args[d], min, min + extent - 1);
    }
    w.definition().values()[0] = Call::make(call->type, call->name, args, call->call_type, call->func,
                                            call->value_index, call->image, call->param);
}

Expr rdom_extent(const Func &f, int dim) {
    const Function &g = f.function();
    user_assert(g.has_update_definition() && dim >= 0 && dim < (int)g.update(0).schedule().rvars().size())
        << "rdom_extent(" << g.name() << ", " << dim << "): " << g.name() << " has no update with an RDom of "
        << dim + 1 << " dimensions.\n";
    return g.update(0).schedule().rvars()[dim].extent;
}

}  // namespace autoscheduler
}  // namespace alcop
