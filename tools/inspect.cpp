// alcop_inspect: lowers one of our generators in-process and shows what the ALCOP pass did.
//
//   alcop_inspect <generator> [target=<halide target>] [param=value ...] [--stmt]
//
// Prints a summary of the pipelined loop (stages, slots, copies, guards, barriers); with
// --stmt also the Stmt before and after the pass.

#include "Halide.h"

#include "Directive.h"
#include "analysis/PipelineSummary.h"

#include <iostream>

using namespace Halide;
using namespace Halide::Internal;

int main(int argc, char **argv) {
    if (argc < 2) {
        std::cerr << "usage: " << argv[0] << " <generator> [target=T] [param=value ...] [--stmt]\n"
                  << "generators:";
        for (const auto &g : GeneratorRegistry::enumerate()) std::cerr << " " << g;
        std::cerr << "\n";
        return 1;
    }
    const std::string generator = argv[1];
    Target target("host-opencl");
    GeneratorParamsMap params;
    bool print_stmt = false;
    for (int i = 2; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--stmt") {
            print_stmt = true;
            continue;
        }
        const size_t eq = arg.find('=');
        if (eq == std::string::npos) {
            std::cerr << "bad argument: " << arg << "\n";
            return 1;
        }
        if (arg.substr(0, eq) == "target") {
            target = Target(arg.substr(eq + 1));
        } else {
            params[arg.substr(0, eq)] = arg.substr(eq + 1);
        }
    }

    Stmt before, after;
    std::map<std::string, alcop::PipelineRequest> requests;
    alcop::set_lowering_observer([&](const Stmt &b, const Stmt &a, const auto &r) {
        before = b;
        after = a;
        requests = r;
    });
    auto gen = GeneratorRegistry::create(generator, GeneratorContext(target));
    gen->set_generator_param_values(params);
    gen->build_module(generator);
    alcop::set_lowering_observer(nullptr);

    if (print_stmt) {
        std::cout << "=== before the ALCOP pass ===\n" << before << "\n=== after ===\n" << after << "\n";
    }
    std::set<std::string> funcs;
    std::cout << "=== " << generator << " for " << target.to_string() << " ===\nrequests:";
    for (const auto &r : requests) {
        const std::string base = r.first.substr(0, r.first.find('$'));
        funcs.insert(base);
        std::cout << " " << base << "(stages " << r.second.stages << ", " << alcop::to_string(r.second.level) << ")";
    }
    std::cout << "\nbefore: " << alcop::describe(alcop::summarize_pipeline(before, funcs))
              << "after:  " << alcop::describe(alcop::summarize_pipeline(after, funcs));
    return 0;
}
