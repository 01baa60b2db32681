#ifndef ALCOP_TEST_NVPTX_PIPELINE_H
#define ALCOP_TEST_NVPTX_PIPELINE_H

// What the LLVM-level tests of the marker rewrite share: parse a hand-written NVPTX module,
// run the registered rewrite alone, or compile to PTX the way Halide 14's CodeGen_PTX_Dev
// does, count what the output holds, and assemble it with ptxas.

#include "Ptxas.h"

#include <gtest/gtest.h>

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/IPO.h>
#include <llvm/Transforms/IPO/PassManagerBuilder.h>

#include <memory>
#include <regex>
#include <string>

namespace nvptx_test {

using namespace llvm;

inline std::unique_ptr<Module> parse(LLVMContext &context, const std::string &ir) {
    SMDiagnostic error;
    std::unique_ptr<Module> m = parseAssemblyString(ir, error, context);
    if (!m) {
        std::string message;
        raw_string_ostream os(message);
        error.print("test", os);
        ADD_FAILURE() << "cannot parse the test module: " << os.str();
    }
    return m;
}

inline std::string text_of(const Module &m) {
    std::string text;
    raw_string_ostream os(text);
    m.print(os, nullptr);
    return os.str();
}

// Runs the registered rewrite alone: at O0 the PassManagerBuilder's function pipeline holds
// only the EP_EarlyAsPossible extensions. Driven like Halide drives its function passes.
inline bool rewrite(Module &m) {
    PassManagerBuilder builder;
    builder.OptLevel = 0;
    legacy::FunctionPassManager fpm(&m);
    builder.populateFunctionPassManager(fpm);
    bool changed = fpm.doInitialization();
    for (Function &f : m) {
        changed |= fpm.run(f);
    }
    changed |= fpm.doFinalization();
    std::string errors;
    raw_string_ostream os(errors);
    EXPECT_FALSE(verifyModule(m, &os)) << os.str();
    return changed;
}

// The PTX of a module with markers, compiled as Halide's CodeGen_PTX_Dev::compile_to_src does
// (O3 pipeline, the rewrite among its extensions, then the NVPTX backend).
inline std::string ptx_of(Module &m) {
    static bool initialized = [] {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        return true;
    }();
    (void)initialized;
    std::string error;
    Triple triple(m.getTargetTriple());
    const Target *target = TargetRegistry::lookupTarget("nvptx64", triple, error);
    if (!target) {
        ADD_FAILURE() << error;
        return "";
    }
    TargetOptions options;
    options.AllowFPOpFusion = FPOpFusion::Fast;
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    std::unique_ptr<TargetMachine> machine(target->createTargetMachine(
        triple.str(), "sm_80", "+ptx70", options, Reloc::PIC_, CodeModel::Small, CodeGenOpt::Aggressive));
    m.setDataLayout(machine->createDataLayout());

    legacy::FunctionPassManager fpm(&m);
    legacy::PassManager mpm;
    // Without the target's TTI, address-space inference leaves generic loads and stores.
    mpm.add(createTargetTransformInfoWrapperPass(machine->getTargetIRAnalysis()));
    fpm.add(createTargetTransformInfoWrapperPass(machine->getTargetIRAnalysis()));
    PassManagerBuilder builder;
    builder.OptLevel = 3;
    builder.Inliner = createFunctionInliningPass(builder.OptLevel, 0, false);
    builder.LoopVectorize = true;
    builder.SLPVectorize = true;
    machine->adjustPassManager(builder);
    builder.populateFunctionPassManager(fpm);
    builder.populateModulePassManager(mpm);

    SmallString<8192> ptx;
    raw_svector_ostream os(ptx);
    if (machine->addPassesToEmitFile(mpm, os, nullptr, CGFT_AssemblyFile, true)) {
        ADD_FAILURE() << "the NVPTX target cannot emit assembly";
        return "";
    }
    fpm.doInitialization();
    for (Function &f : m) {
        fpm.run(f);
    }
    fpm.doFinalization();
    mpm.run(m);
    return std::string(ptx.str());
}

inline std::string ptx_of(const std::string &ir) {
    LLVMContext context;
    std::unique_ptr<Module> m = parse(context, ir);
    return m ? ptx_of(*m) : "";
}

inline int count(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        n++;
    }
    return n;
}

inline int count(const std::string &text, const std::regex &what) {
    return (int)std::distance(std::sregex_iterator(text.begin(), text.end(), what), std::sregex_iterator());
}

// ptxas as CMake found it (find_program(ALCOP_PTXAS ptxas)), or "" when it was not found.
inline std::string ptxas_path() {
    return ptxas::path();
}

struct PtxasResult {
    int status = -1;
    std::string output;  ///< stdout and stderr of `ptxas -v`
};

// Assembles `ptx` for `arch` (e.g. "sm_80") with `ptxas -v`, which reports registers and spills.
inline PtxasResult assemble(const std::string &ptx, const std::string &arch, const std::string &name) {
    PtxasResult r;
    r.output = ptxas::run(ptx, arch, name, &r.status);
    return r;
}

}  // namespace nvptx_test

#endif
