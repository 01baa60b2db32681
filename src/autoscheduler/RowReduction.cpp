#include "autoscheduler/RowReduction.h"

#include <map>
#include <set>
#include <sstream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The last `rows` pure variables of `f`: its row variables. */
std::vector<std::string> row_vars(const Function &f, size_t rows) {
    return std::vector<std::string>(f.args().end() - rows, f.args().end());
}

/** The calls of Funcs in `def`, but of `self`, the Func it defines. */
std::vector<const Call *> calls_in(const std::string &self, const Definition &def) {
    class Calls : public IRGraphVisitor {
        using IRGraphVisitor::visit;
        void visit(const Call *op) override {
            IRGraphVisitor::visit(op);
            if (op->call_type == Call::Halide && op->name != self) found.push_back(op);
        }

    public:
        std::string self;
        std::vector<const Call *> found;
    } calls;
    calls.self = self;
    for (const Expr &e : def.values()) e.accept(&calls);
    for (const Expr &e : def.args()) e.accept(&calls);
    return calls.found;
}

/** The first call, in `defining`'s definition `def`, of a Func not in `row_free` that does not
 * pass `defining`'s row variables as its last arguments; empty if none. */
std::string non_local_call(const Function &defining, const Definition &def, size_t rows,
                           const std::set<std::string> &row_free) {
    const std::vector<std::string> vars = row_vars(defining, rows);
    for (const Call *call : calls_in(defining.name(), def)) {
        if (row_free.count(call->name)) continue;
        bool local = call->args.size() >= rows;
        for (size_t i = 0; local && i < rows; i++) {
            const Variable *v = call->args[call->args.size() - rows + i].as<Variable>();
            local = v && v->name == vars[i];
        }
        if (!local) {
            std::ostringstream os;
            os << Expr(call);
            return os.str();
        }
    }
    return "";
}

/** Why reduction `f` (a Func with updates, of the `rows` row dimensions) cannot be split
 * across a row's lanes; empty if it can. */
std::string why_not_splittable(const Function &f, size_t rows) {
    const std::string name = f.name();
    if (f.updates().size() != 1) {
        return "the reduction " + name + " has " + std::to_string(f.updates().size()) + " updates (one is split)";
    }
    if (f.args().size() != rows) {
        return "the reduction " + name + " has " + std::to_string(f.args().size()) +
               " dimensions where the output has " + std::to_string(rows) + " row dimensions";
    }
    const Definition &update = f.update(0);
    for (size_t i = 0; i < update.args().size(); i++) {
        const Variable *v = update.args()[i].as<Variable>();
        if (!v || v->name != f.args()[i]) {
            return "the update of " + name + " writes it at coordinates that are not its own variables";
        }
    }
    if (update.schedule().rvars().size() != 1) {
        return "the reduction " + name + " runs over a " + std::to_string(update.schedule().rvars().size()) +
               "-dimensional RDom (a row is one)";
    }
    if (update.predicate().defined() && !is_const_one(update.predicate())) {
        return "the RDom of " + name + " has a predicate (RDom::where)";
    }
    if (!prove_associativity(name, update.args(), update.values()).associative()) {
        return "Halide cannot prove the update of " + name +
               " associative, so it cannot be split across a row's lanes (rfactor)";
    }
    return "";
}

}  // namespace

std::string RowReductions::describe() const {
    std::ostringstream os;
    os << "row reductions " << output.name() << "(" << output.args()[0];
    for (size_t i = 1; i < output.args().size(); i++) os << ", " << output.args()[i];
    os << ") of";
    for (size_t i = 0; i < reductions.size(); i++) {
        const Function &f = reductions[i];
        os << (i ? ", " : " ") << f.name() << "(";
        for (size_t a = 0; a < f.args().size(); a++) os << (a ? ", " : "") << f.args()[a];
        os << ") over " << f.update(0).schedule().rvars()[0].var;
    }
    return os.str();
}

std::optional<RowReductions> recognize_row_reductions(const std::vector<Function> &outputs, std::string *why) {
    auto fail = [&](const std::string &reason) -> std::optional<RowReductions> {
        *why = reason;
        return std::nullopt;
    };
    if (outputs.size() != 1) {
        return fail("the pipeline has " + std::to_string(outputs.size()) + " outputs; row reductions have one");
    }
    RowReductions r;
    r.output = outputs[0];
    const Function &out = r.output;
    if (out.has_extern_definition() || !out.is_pure() || out.args().size() < 2) {
        return fail("the output " + out.name() + " is not a pure Func of a row and at least one row dimension");
    }
    const size_t rows = out.args().size() - 1;
    const std::map<std::string, Function> env = build_environment(outputs);
    // Funcs that read input buffers only (directly or through other such Funcs): the same at
    // every row, so any row may read them anywhere (gamma(x), a mask).
    std::set<std::string> row_free;
    for (const std::string &name : topological_order(outputs, env)) {
        const Function &f = env.at(name);
        if (f.has_extern_definition()) return fail(name + " is an extern stage");
        bool reads_inputs_only = f.is_pure() && name != out.name();
        for (const Call *call : calls_in(name, f.definition())) {
            reads_inputs_only = reads_inputs_only && row_free.count(call->name);
        }
        if (reads_inputs_only) {
            row_free.insert(name);
            continue;
        }
        if (!f.is_pure()) {
            const std::string why_not = why_not_splittable(f, rows);
            if (!why_not.empty()) return fail(why_not);
            r.reductions.push_back(f);
        } else if (f.args().size() != rows && f.args().size() != rows + 1) {
            return fail(name + " has " + std::to_string(f.args().size()) + " dimensions, neither the " +
                        std::to_string(rows) + " row dimensions of " + out.name() + " nor one more");
        }
        std::vector<Definition> defs{f.definition()};
        for (const Definition &u : f.updates()) defs.push_back(u);
        for (const Definition &def : defs) {
            const std::string call = non_local_call(f, def, rows, row_free);
            if (!call.empty()) {
                return fail(name + " reads " + call + ", not at its own row (a row is computed from its own row only)");
            }
        }
    }
    if (r.reductions.empty()) return fail("no Func of the pipeline reduces over an RDom");
    return r;
}

}  // namespace autoscheduler
}  // namespace alcop
