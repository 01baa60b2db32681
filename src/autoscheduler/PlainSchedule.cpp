#include "autoscheduler/PlainSchedule.h"

#include <map>
#include <set>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;
using Halide::Func;  // not alcop::Func, which names the directives' subclass

namespace {

/** A pure Var of stage `def` of `f` that is safe to run in parallel: the stage writes f at
 * exactly that variable in its position, and every read of f in the stage reads there too. */
bool parallel_safe(const Function &f, const Definition &def, size_t pos) {
    const std::string &v = f.args()[pos];
    if (def.is_init()) return true;
    const Variable *lhs = def.args()[pos].as<Variable>();
    if (!lhs || lhs->name != v) return false;
    class SelfReads : public IRGraphVisitor {
        using IRGraphVisitor::visit;
        void visit(const Call *op) override {
            if (op->call_type == Call::Halide && op->name == name) {
                const Variable *a = op->args[pos].as<Variable>();
                safe = safe && a && a->name == var;
            }
            IRGraphVisitor::visit(op);
        }

    public:
        const std::string &name, &var;
        size_t pos;
        bool safe = true;
        SelfReads(const std::string &name, const std::string &var, size_t pos) : name(name), var(var), pos(pos) {
        }
    } reads(f.name(), v, pos);
    for (const Expr &e : def.values()) e.accept(&reads);
    for (const Expr &e : def.args()) e.accept(&reads);
    return reads.safe;
}

}  // namespace

void schedule_plain(Schedule &schedule, const Pipeline &p) {
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) outputs.push_back(f.function());
    std::map<std::string, Function> env = build_environment(outputs);
    std::set<std::string> output_names;
    for (const Function &f : outputs) output_names.insert(f.name());
    for (const std::string &name : topological_order(outputs, env)) {
        Function f = env.at(name);
        if (f.can_be_inlined() && !output_names.count(name)) continue;
        const FuncRef func = schedule.pipeline_func(f);
        schedule.func(func).compute_root().done();
        if (f.has_extern_definition()) continue;
        for (int stage = 0; stage <= (int)f.updates().size(); stage++) {
            const Definition &def = stage == 0 ? f.definition() : f.update(stage - 1);
            std::vector<std::string> vars;
            for (size_t pos = 0; pos < f.args().size() && vars.size() < 2; pos++) {
                if (parallel_safe(f, def, pos)) vars.push_back(f.args()[pos]);
            }
            Chain s = schedule.stage(func, stage - 1);
            if (vars.size() == 2) {
                Dim x{vars[0]}, y{vars[1]}, xo{vars[0] + "_o"}, yo{vars[1] + "_o"}, xi{vars[0] + "_i"},
                    yi{vars[1] + "_i"};
                s.split(x, xo, xi, 16, TailStrategy::GuardWithIf)
                    .split(y, yo, yi, 16, TailStrategy::GuardWithIf)
                    .reorder({xi, yi, xo, yo})
                    .gpu_blocks({xo, yo})
                    .gpu_threads({xi, yi});
            } else if (vars.size() == 1) {
                Dim x{vars[0]}, xo{vars[0] + "_o"}, xi{vars[0] + "_i"};
                s.split(x, xo, xi, 64, TailStrategy::GuardWithIf).reorder({xi, xo}).gpu_blocks({xo}).gpu_threads({xi});
            } else {
                s.gpu_single_thread();
            }
            s.done();
        }
    }
}

}  // namespace autoscheduler
}  // namespace alcop
