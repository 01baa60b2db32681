// The register level (Level::Register): every rejected use raises a Halide user error naming
// the Func and the reason (synthetic IR, one defect each), and the two-level GEMM has the
// structure PipelineFragments.h promises (steps unrolled, slots constant, the prefetch of the
// next tile's first fragments after the one barrier of an iteration).

#include "Halide.h"

#include "directive/Requests.h"
#include "rewrite/LowerPipelines.h"
#include "SyntheticIR.h"

#include <gtest/gtest.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

using namespace synthetic;

std::string error_of(const Stmt &s, const std::map<std::string, alcop::PipelineRequest> &requests = {
                                        {"F", {2, alcop::Level::Register}}}) {
    return rejection(s, requests);
}

#define EXPECT_REJECTED(stmt, reason) EXPECT_REJECTION(error_of(stmt), "alcop::pipeline(F, Level::Register)", reason)

Stmt well_formed() {
    return kernel(fragment_registers(step_loop(Block::make(load_fragment(), use_fragment()))));
}

TEST(RegisterLevel, TheWellFormedKernelIsUnrolledWithTwoSlots) {
    EXPECT_EQ(error_of(well_formed()), "");
    std::ostringstream text;
    text << alcop::inject_pipelines(well_formed(), {{"F", {2, alcop::Level::Register}}});
    EXPECT_NE(text.str().find("F_regs[float32 * 8]"), std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("for (ki"), std::string::npos) << "the step loop was not unrolled";
    // The compute of the last step reads slot 1 (step 7 % 2), elements 4 and 7.
    EXPECT_NE(text.str().find("F_regs[4]*F_regs[7]"), std::string::npos) << text.str();
}

// Issue #17, 5: a long fragment loop keeps a loop, unrolled by the register slots so that
// every slot index stays a constant, instead of being unrolled whole.
TEST(RegisterLevel, ALongLoopIsUnrolledOnlyByItsSlots) {
    for (int stages : {2, 3}) {
        Stmt s = kernel(fragment_registers(step_loop(Block::make(load_fragment(), use_fragment()), 128)), 1024);
        std::ostringstream text;
        text << alcop::inject_pipelines(s, {{"F", {stages, alcop::Level::Register}}});
        const std::string ir = text.str();
        // (128 - (stages - 1)) / stages whole groups in the loop, the remaining steps after it.
        const int groups = (128 - (stages - 1)) / stages;
        EXPECT_NE(ir.find("for (ki.slots, 0, " + std::to_string(groups) + ")"), std::string::npos) << ir;
        // Within a group, step u computes from slot u: constant indices.
        EXPECT_NE(ir.find("F_regs[0]*F_regs[3]"), std::string::npos) << ir;
        EXPECT_NE(ir.find("F_regs[4]*F_regs[7]"), std::string::npos) << ir;
        // Each step's compute appears once per group, once per remaining step: nowhere near 128.
        size_t computes = 0;
        for (size_t at = ir.find("acc[0] = "); at != std::string::npos; at = ir.find("acc[0] = ", at + 1)) computes++;
        EXPECT_EQ(computes, (size_t)(stages + 128 - groups * stages)) << ir;
    }
}

TEST(RegisterLevel, NotInsideTheThreads) {
    Stmt loop = fragment_registers(step_loop(Block::make(load_fragment(), use_fragment())));
    Stmt s = For::make("blk", 0, 4, ForType::GPUBlock, DeviceAPI::OpenCL,
                       Allocate::make("S", Float(32), MemoryType::GPUShared, {64}, const_true(), loop));
    EXPECT_REJECTED(s, "is not computed inside the gpu_threads loops");
}

TEST(RegisterLevel, NotInsideASerialLoop) {
    EXPECT_REJECTED(kernel(fragment_registers(Block::make(load_fragment(0), use_fragment()))),
                    "not computed inside a serial loop");
}

TEST(RegisterLevel, StepLoopUnrolledByTheSchedule) {
    Stmt unrolled = Block::make({load_fragment(0), use_fragment(), load_fragment(1), use_fragment()});
    EXPECT_REJECTED(kernel(fragment_registers(streaming_loop(unrolled))), "Was the loop it is computed at unrolled?");
}

TEST(RegisterLevel, NonConstantExtent) {
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make(load_fragment(), use_fragment()), var(K)))),
                    "has no constant extent");
}

TEST(RegisterLevel, PrefetchFurtherThanOneLoop) {
    Stmt s = kernel(fragment_registers(step_loop(Block::make(load_fragment(), use_fragment()), 2)));
    EXPECT_EQ(error_of(s, {{"F", {3, alcop::Level::Register}}}), "") << "2 steps ahead of 2 is fine";
    const std::string msg = error_of(s, {{"F", {4, alcop::Level::Register}}});
    EXPECT_NE(msg.find("4 register stages prefetch 3 steps ahead, more than the 2 steps"), std::string::npos) << msg;
}

TEST(RegisterLevel, NotPerThreadMemory) {
    EXPECT_REJECTED(
        kernel(fragment_registers(step_loop(Block::make(load_fragment(), use_fragment())), MemoryType::GPUShared)),
        "is not stored in per-thread memory");
}

TEST(RegisterLevel, RegistersOfNoConstantSize) {
    Stmt loop = step_loop(Block::make(load_fragment(), use_fragment()));
    Stmt s = Allocate::make("acc", Float(32), MemoryType::Register, {1}, const_true(),
                            Allocate::make("F_regs", Float(32), MemoryType::Register, {var("n")}, const_true(), loop));
    EXPECT_REJECTED(kernel(s), "have no constant size");
}

TEST(RegisterLevel, StoredInsideTheStepLoop) {
    Stmt body = Allocate::make("F_regs", Float(32), MemoryType::Register, {4}, const_true(),
                               Block::make(load_fragment(), use_fragment()));
    Stmt s = kernel(Allocate::make("acc", Float(32), MemoryType::Register, {1}, const_true(), step_loop(body)));
    EXPECT_REJECTED(s, "is stored inside the serial loop ki");
}

TEST(RegisterLevel, ReadAfterTheLoop) {
    Stmt s = Block::make(step_loop(Block::make(load_fragment(), use_fragment())), use_fragment());
    EXPECT_REJECTED(kernel(fragment_registers(s)), "is read after the loop");
}

TEST(RegisterLevel, BarrierInTheStepLoop) {
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make({load_fragment(), barrier(), use_fragment()})))),
                    "holds a barrier");
}

TEST(RegisterLevel, ProducerReadsWhatTheLoopWrites) {
    Stmt producer = produce("F", store("F_regs", 0, load("acc", 0)));
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make(producer, use_fragment())))),
                    "reads acc, which the serial loop ki writes");
}

TEST(RegisterLevel, WrittenOutsideItsProducer) {
    Stmt overwrite = store("F_regs", 1, 0.0f);
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make({load_fragment(), overwrite, use_fragment()})))),
                    "is written outside its producer");
}

TEST(RegisterLevel, ProducerWritesAnotherBuffer) {
    Stmt producer = produce("F", Block::make(store("F_regs", 0, load("S", var("ki"))), store("G_regs", 0, 1.0f)));
    Stmt loop = step_loop(Block::make(producer, use_fragment()));
    Stmt s = Allocate::make("G_regs", Float(32), MemoryType::Register, {4}, const_true(), fragment_registers(loop));
    EXPECT_REJECTED(kernel(s), "writes 2 buffers; a fragment's producer writes only its own registers");
}

TEST(RegisterLevel, ProducedTwiceInTheStepLoop) {
    // Side by side (what an unrolled loop leaves), and once more inside a loop of the step loop's
    // body, which the count of produce nodes per innermost loop does not see.
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make({load_fragment(), load_fragment(), use_fragment()})))),
                    "is produced 2 times in the body of the serial loop ki");
    Stmt inner = For::make("again", 0, 2, ForType::Serial, DeviceAPI::None, load_fragment());
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make({load_fragment(), inner, use_fragment()})))),
                    "is produced more than once in the serial loop ki");
}

TEST(RegisterLevel, ReadBeforeItIsProduced) {
    EXPECT_REJECTED(kernel(fragment_registers(step_loop(Block::make(use_fragment(), load_fragment())))),
                    "before it is produced there");
}

TEST(RegisterLevel, FragmentsOfOneLoopNeedOneStageCount) {
    Stmt body = Block::make(
        {load_fragment(var("ki"), "F"), load_fragment(var("ki"), "G"), use_fragment("F"), use_fragment("G")});
    Stmt s = kernel(fragment_registers(step_loop(body), MemoryType::Register, {"F", "G"}));
    const std::string msg = error_of(s, {{"F", {2, alcop::Level::Register}}, {"G", {3, alcop::Level::Register}}});
    EXPECT_NE(msg.find("share one prefetch distance"), std::string::npos) << msg;
}

// One step per iteration of the shared level's loop: F produced right in the streaming loop
// ko (Halide drops a one-trip step loop), composed with P's pipeline: F's registers get two
// slots, the loop is not unrolled, and the next tile's fragment is loaded after the barrier.
Stmt one_step_kernel(Stmt fragment_producer) {
    Stmt use = consume("P", Block::make(fragment_producer, use_fragment()));
    return kernel(fragment_registers(streaming_loop(Block::make({copy_tile(), barrier(), use, barrier()}))));
}

TEST(RegisterLevel, OneStepPerIterationComposesWithTheSharedLevel) {
    const std::map<std::string, alcop::PipelineRequest> both{{"P", {2, alcop::Level::Shared}},
                                                             {"F", {2, alcop::Level::Register}}};
    std::ostringstream text;
    text << alcop::inject_pipelines(one_step_kernel(load_fragment(0)), both);
    const std::string ir = text.str();
    EXPECT_NE(ir.find("F_regs[float32 * 8]"), std::string::npos) << ir;
    EXPECT_NE(ir.find("for (ko"), std::string::npos) << "the streaming loop must stay a loop: " << ir;
    // In the loop: the barrier, then the guarded load of tile ko + 1's fragment.
    const size_t loop = ir.find("for (ko");
    const size_t barrier = ir.find("gpu_thread_barrier", loop);
    const size_t next = ir.find("(ko + 1) < ", loop);
    ASSERT_NE(next, std::string::npos) << ir;
    EXPECT_LT(barrier, next) << ir;
}

TEST(RegisterLevel, OneStepThatCannotComposeIsLeftAloneWithAWarning) {
    // The compute reads P's shared tile itself, so the barrier cannot move before its reads.
    const std::map<std::string, alcop::PipelineRequest> both{{"P", {2, alcop::Level::Shared}},
                                                             {"F", {2, alcop::Level::Register}}};
    Stmt reads_shared = consume("F", store("acc", 0, load("acc", 0) + load("F_regs", 0) * load("S", 5)));
    Stmt use = consume("P", Block::make(load_fragment(0), reads_shared));
    Stmt s = kernel(fragment_registers(streaming_loop(Block::make({copy_tile(), barrier(), use, barrier()}))));
    testing::internal::CaptureStderr();
    std::ostringstream text;
    text << alcop::inject_pipelines(s, both);
    const std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_NE(warnings.find("cannot compose with the shared ones"), std::string::npos) << warnings;
    // Slot 0 only: the fragment is loaded where it was, not ahead.
    EXPECT_EQ(text.str().find("F_regs[4]"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("F_regs[0]"), std::string::npos) << text.str();
}

// Two fragments of one step: F from P's pipelined tile, G from Q's, which the loop copies
// unpipelined into one buffer (S[16..31]). Only F prefetches the next tile (after the barrier,
// guarded by ko + 1 < K); G is loaded in each iteration, from Q's buffer, after its copy.
TEST(RegisterLevel, OneStepComposesOnlyTheFragmentsOfPipelinedTiles) {
    Stmt copy_q = produce("Q", store("S", var("tx") + 16, load("in2", var("ko") * 16 + var("tx"))));
    std::vector<Stmt> load_g;
    for (int i = 0; i < 4; i++) {
        load_g.push_back(store("G_regs", i, load("S", 16 + i)));
    }
    Stmt use = consume("P", consume("Q", Block::make({load_fragment(0), produce("G", Block::make(load_g)),
                                                      use_fragment(), use_fragment("G")})));
    Stmt s = kernel(fragment_registers(streaming_loop(Block::make({copy_tile(), copy_q, barrier(), use, barrier()})),
                                       MemoryType::Register, {"F", "G"}),
                    32);
    const std::map<std::string, alcop::PipelineRequest> requests{
        {"P", {2, alcop::Level::Shared}}, {"F", {2, alcop::Level::Register}}, {"G", {2, alcop::Level::Register}}};
    testing::internal::CaptureStderr();
    const Stmt result = alcop::inject_pipelines(s, requests);
    const std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_EQ(warnings.find("cannot compose"), std::string::npos) << warnings;
    // Where each fragment is loaded from S: before the loop, in it, in it from tile ko + 1.
    class Where : public IRVisitor {
        using IRVisitor::visit;
        int in_loop = 0, next_tile = 0;
        void visit(const For *op) override {
            in_loop += op->name == "ko";
            IRVisitor::visit(op);
            in_loop -= op->name == "ko";
        }
        void visit(const IfThenElse *op) override {
            std::ostringstream c;
            c << op->condition;
            const bool next = c.str().find("ko + 1") != std::string::npos;
            next_tile += next;
            IRVisitor::visit(op);
            next_tile -= next;
        }
        void visit(const Store *op) override {
            const Load *from = op->value.as<Load>();  // (not the renaming of the slots)
            if ((op->name == "F_regs" || op->name == "G_regs") && from && from->name == "S") {
                counts[op->name + (in_loop ? (next_tile ? " next tile" : " in loop") : " before loop")]++;
            }
            IRVisitor::visit(op);
        }

    public:
        std::map<std::string, int> counts;
    } where;
    result.accept(&where);
    std::ostringstream ir;
    ir << result;
    EXPECT_EQ(where.counts["F_regs before loop"], 4) << ir.str();
    EXPECT_EQ(where.counts["F_regs next tile"], 4) << ir.str();
    EXPECT_EQ(where.counts["F_regs in loop"], 0) << ir.str();
    EXPECT_EQ(where.counts["G_regs before loop"], 0) << ir.str();
    EXPECT_EQ(where.counts["G_regs next tile"], 0) << ir.str();
    EXPECT_EQ(where.counts["G_regs in loop"], 4) << ir.str();
}

TEST(RegisterLevel, OneStepUnderAnIfIsRejected) {
    const std::map<std::string, alcop::PipelineRequest> both{{"P", {2, alcop::Level::Shared}},
                                                             {"F", {2, alcop::Level::Register}}};
    Stmt guarded = IfThenElse::make(var("tx") < 8, load_fragment(0));
    EXPECT_REJECTION(error_of(one_step_kernel(guarded), both), "alcop::pipeline(F, Level::Register)",
                     "under an if or a loop there");
}

// The two-level GEMM, read back as the sequence of what one thread does: fragment loads
// (which fragment, which register slot, whether from the next tile), computes (the register
// slot they read) and barriers, before and inside the streaming loop.
struct Event {
    std::string what;  ///< "load A", "load B", "compute" or "barrier"
    int slot = -1;
    bool next_tile = false;
    bool in_loop = false;
};

class RecordEvents : public IRVisitor {
    using IRVisitor::visit;
    int in_loop = 0;
    bool guarded_next = false;

    /** The first constant index of a load (or store) of a buffer named prefix... in s. */
    static int first_constant_index(const Stmt &s, const std::string &prefix, bool stores) {
        class Find : public IRVisitor {
            using IRVisitor::visit;
            void check(const std::string &name, const Expr &index) {
                // The fragments are vectorized: a slot's 4 floats are one Ramp from its first.
                const Ramp *ramp = index.as<Ramp>();
                const int64_t *i = as_const_int(ramp && is_const_one(ramp->stride) ? ramp->base : index);
                if (found < 0 && name.rfind(prefix, 0) == 0 && i) found = (int)*i;
            }
            void visit(const Load *op) override {
                if (!stores) check(op->name, op->index);
                IRVisitor::visit(op);
            }
            void visit(const Store *op) override {
                if (stores) check(op->name, op->index);
                IRVisitor::visit(op);
            }

        public:
            const std::string &prefix;
            bool stores;
            int found = -1;
            Find(const std::string &prefix, bool stores) : prefix(prefix), stores(stores) {
            }
        } find(prefix, stores);
        s.accept(&find);
        return find.found;
    }

    /** The register slot of the first constant index of `prefix`... in s (4 floats a slot), -1
     * when there is none: -1 / 4 would be slot 0. */
    static int slot_of(const Stmt &s, const std::string &prefix, bool stores) {
        const int index = first_constant_index(s, prefix, stores);
        return index < 0 ? -1 : index / 4;
    }

    void visit(const For *op) override {
        const bool streaming = op->name.find("r$y") != std::string::npos;
        in_loop += streaming;
        IRVisitor::visit(op);
        in_loop -= streaming;
    }
    void visit(const IfThenElse *op) override {
        std::ostringstream c;
        c << op->condition;
        const bool old = guarded_next;
        guarded_next = guarded_next || c.str().find("r$y + 1)") != std::string::npos;
        IRVisitor::visit(op);
        guarded_next = old;
    }
    void visit(const Evaluate *op) override {
        if (const Call *c = op->value.as<Call>(); c && c->is_intrinsic(Call::gpu_thread_barrier)) {
            events.push_back({"barrier", -1, false, in_loop > 0});
        }
    }
    void visit(const ProducerConsumer *op) override {
        // The fragments are the wrappers A_shared..._in_prod... and B_shared..._in_prod...
        // (Halide uniquifies names per generator instance), 4 floats each (thread_m =
        // thread_n = 4), so the slot is index / 4. A compute reads both; A's slot tells.
        const bool fragment = op->name.find("_in_prod") != std::string::npos;
        if (fragment && op->is_producer) {
            events.push_back(
                {std::string("load ") + op->name[0], slot_of(op->body, op->name, true), guarded_next, in_loop > 0});
            return;
        }
        if (fragment && op->name[0] == 'A') {
            events.push_back({"compute", slot_of(op->body, op->name, false), false, in_loop > 0});
            return;
        }
        IRVisitor::visit(op);
    }

public:
    std::vector<Event> events;
};

std::vector<Event> two_level_events(int stages, int register_stages, const std::string &fault = "none",
                                    int stages_b = 0) {
    Target t("host-opencl");
    auto gen = GeneratorRegistry::create("testing_gemm", GeneratorContext(t));
    gen->set_generator_param_values({{"stages", std::to_string(stages)},
                                     {"stages_b", std::to_string(stages_b)},
                                     {"register_stages", std::to_string(register_stages)},
                                     {"fault", fault}});
    Stmt s;
    alcop::set_lowering_observer([&](const Stmt &, const Stmt &after, const auto &) { s = after; });
    gen->build_module("gemm");
    alcop::set_lowering_observer(nullptr);
    RecordEvents r;
    s.accept(&r);
    return r.events;
}

/** What is wrong with the events of a two-level GEMM of tile_k = 8 steps and R register
 * stages; empty when nothing is. */
std::vector<std::string> two_level_problems(const std::vector<Event> &events, int register_stages) {
    const int steps = 8, distance = register_stages - 1;
    std::vector<std::string> problems;
    auto expect = [&](bool ok, const std::string &what) {
        if (!ok) problems.push_back(what);
    };
    std::vector<Event> prologue, loop;
    for (const Event &e : events) {
        expect(e.what == "barrier" || e.slot >= 0, e.what + " at no constant register slot");
        if (e.in_loop) {
            loop.push_back(e);
        } else if (loop.empty()) {
            prologue.push_back(e);
        }
    }
    // Before the loop: the register prologue loads steps 0 .. d-1 of the first tile into
    // slots 0 .. d-1, after the last barrier (which publishes that tile).
    std::vector<int> prologue_slots, expected;
    for (const Event &e : prologue) {
        if (e.what == "load A") prologue_slots.push_back(e.slot);
        if (e.what == "barrier") prologue_slots.clear();
    }
    for (int s = 0; s < distance; s++) expected.push_back(s);
    expect(prologue_slots == expected, "the register prologue is not slots 0 .. d-1 after the barrier");

    // In the loop: step j loads step j + d into slot (j + d) % R, then computes from slot
    // j % R; the loads of the next tile come after the loop's one barrier (at step T - d),
    // and nothing of the current tile is read after it.
    int computes = 0, barriers = 0;
    std::vector<int> load_slots, compute_slots;
    for (const Event &e : loop) {
        const std::string step = " (step " + std::to_string(computes) + ")";
        if (e.what == "barrier") {
            barriers++;
            expect(computes == steps - distance, "the barrier is not at step T - d" + step);
        } else if (e.what == "compute") {
            compute_slots.push_back(e.slot);
            computes++;
        } else if (e.what == "load A") {
            load_slots.push_back(e.slot);
            expect(e.next_tile == (computes + distance >= steps), "a load from the wrong tile" + step);
            expect(e.next_tile == (barriers == 1), "a load on the wrong side of the barrier" + step);
        }
    }
    expect(barriers == 1, "not one barrier per iteration");
    expect(computes == steps && load_slots.size() == (size_t)steps, "not one load and one compute per step");
    for (int j = 0; j < steps && j < (int)compute_slots.size() && j < (int)load_slots.size(); j++) {
        expect(compute_slots[j] == j % register_stages, "compute " + std::to_string(j) + " reads the wrong slot");
        expect(load_slots[j] == (j + distance) % register_stages,
               "load " + std::to_string(j) + " fills the wrong slot");
    }
    return problems;
}

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v) s += x + "; ";
    return s;
}

class TwoLevel : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(TwoLevel, PrefetchesFragmentsAcrossTheTileAfterItsBarrier) {
    const int stages = GetParam().first, register_stages = GetParam().second;
    EXPECT_EQ(join(two_level_problems(two_level_events(stages, register_stages), register_stages)), "");
}

/** What is wrong with the fragment loads of a two-level GEMM (tile_k = 8 steps, R register
 * stages) whose operand `own` is copied unpipelined at the shared level and `other` pipelined:
 * `other`'s fragments prefetch across the tile after the iteration's last barrier, `own`'s
 * start over in each iteration (its one buffer holds the next tile only after the next
 * iteration's copy), all read before that barrier, which lets the copy go. Empty when
 * nothing is. */
std::vector<std::string> one_operand_problems(const std::vector<Event> &events, char own, char other,
                                              int register_stages) {
    const int steps = 8, distance = register_stages - 1;
    std::vector<std::string> problems;
    auto expect = [&](bool ok, const std::string &what) {
        if (!ok) problems.push_back(what);
    };
    const std::string load_own = std::string("load ") + own, load_other = std::string("load ") + other;
    std::vector<Event> loop;
    int other_before_loop = 0;
    for (const Event &e : events) {
        if (e.in_loop) {
            loop.push_back(e);
        } else if (loop.empty()) {
            expect(e.what != load_own, load_own + " before the loop, where its buffer holds no tile yet");
            other_before_loop += e.what == load_other;
        }
    }
    size_t last_barrier = 0;
    for (size_t i = 0; i < loop.size(); i++) {
        if (loop[i].what == "barrier") last_barrier = i;
    }
    int own_loads = 0, own_before_compute = 0, other_next = 0, computes = 0;
    for (size_t i = 0; i < loop.size(); i++) {
        const Event &e = loop[i];
        computes += e.what == "compute";
        if (e.what == load_own) {
            own_loads++;
            own_before_compute += computes == 0;
            expect(!e.next_tile, load_own + " from the next tile, which its one buffer does not hold yet");
            expect(i < last_barrier, load_own + " after the barrier that lets the next copy overwrite it");
        } else if (e.what == load_other && e.next_tile) {
            other_next++;
            expect(i > last_barrier, load_other + " from the next tile before its barrier");
        }
    }
    expect(own_loads == steps, "not one " + load_own + " per step in the loop");
    // Its register prologue (steps 0 .. d-1), then step 0's prefetch of step d.
    expect(own_before_compute == distance + 1, "not d + 1 " + load_own + " before the first compute");
    expect(other_before_loop == distance, load_other + "'s register prologue is not before the loop");
    expect(other_next == distance, "not d " + load_other + " from the next tile");
    return problems;
}

// Issue found by the compile-time fuzzer (CompileFuzz.OneOperandPipelinedWithRegisterStages):
// only one operand pipelined at the shared level, the other copied into its one buffer in
// each iteration. Each fragment composes with its own operand's pipeline.
TEST(TwoLevel, OneOperandPipelinedComposesOnlyItsFragments) {
    for (int register_stages : {2, 3}) {
        EXPECT_EQ(
            join(one_operand_problems(two_level_events(1, register_stages, "none", 2), 'A', 'B', register_stages)), "")
            << "stages=1 stages_b=2 register_stages=" << register_stages;
        EXPECT_EQ(
            join(one_operand_problems(two_level_events(2, register_stages, "none", 1), 'B', 'A', register_stages)), "")
            << "stages=2 stages_b=1 register_stages=" << register_stages;
    }
}

// The checker bites: each deliberately broken two-level pipeline has the problem it names.
TEST(TwoLevelBroken, IsCaught) {
    const std::pair<std::string, std::string> faults[] = {
        {"fragment_before_barrier", "a load on the wrong side of the barrier"},
        {"slot_off_by_one", "reads the wrong slot"},
        {"drop_barrier", "not one barrier per iteration"},
    };
    for (const auto &[fault, problem] : faults) {
        const std::vector<Event> events = two_level_events(3, 2, fault);
        ASSERT_FALSE(events.empty()) << fault;
        const std::string problems = join(two_level_problems(events, 2));
        EXPECT_NE(problems.find(problem), std::string::npos) << fault << " was not caught as such: " << problems;
    }
}

INSTANTIATE_TEST_SUITE_P(Gemm, TwoLevel,
                         ::testing::Values(std::make_pair(2, 2), std::make_pair(3, 2), std::make_pair(4, 2),
                                           std::make_pair(3, 4), std::make_pair(2, 3)),
                         [](const ::testing::TestParamInfo<std::pair<int, int>> &info) {
                             return "shared" + std::to_string(info.param.first) + "_register" +
                                    std::to_string(info.param.second);
                         });

}  // namespace
