// Compile-time fuzzing on pocl: random configurations of the testing generators (block tiles,
// thread tiles, k tiles, vector widths, shared stages of A and B, register stages, how copies
// are made; tensor-core types and warp tiles where the generators have them; convolutions'
// strides and padding), each generated through the generator
// executable in a subprocess (tools/variants), loaded into this process and run at a few random
// runtime shapes with tails against a double-precision reference.
//
// The configurations are drawn from a table (Space: the values of each GeneratorParam, and the
// constraints that make a configuration one the generator must accept), so that a dimension is
// a line. Every configuration drawn must build and be exact: a build failure is a failure too.
//
//   ALCOP_FUZZ_COMPILE_CONFIGS  configurations (default 4, the CI's handful)
//   ALCOP_FUZZ_SEED             the seed (default 1234); printed with every failure
//   ALCOP_FUZZ_CONFIG           one configuration instead, as a failure prints it
//                               ("testing_gemm block_m=32 ..."), at the seed's shapes
//   ALCOP_FUZZ_FAULT            build every configuration with this testing::Fault (e.g.
//                               slot_off_by_one): each must then fail

#include "FuzzShapes.h"
#include "HalideBuffer.h"
#include "Reference.h"
#include "VariantBuild.h"
#include "VariantLoad.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using alcop::variants::Built;
using alcop::variants::Generation;
using alcop::variants::Variant;
using Halide::Runtime::Buffer;

struct Config {
    std::string generator;
    std::map<std::string, std::string> params;

    int at(const std::string &p, int fallback = 0) const {
        auto it = params.find(p);
        return it == params.end() ? fallback : std::stoi(it->second);
    }
    std::vector<std::string> key_values() const {
        std::vector<std::string> kv;
        for (const auto &[k, v] : params) kv.push_back(k + "=" + v);
        return kv;
    }
    std::string describe() const {
        std::string s = generator;
        for (const std::string &kv : key_values()) s += " " + kv;
        return s;
    }
};

/** One GeneratorParam the fuzzer draws, and the values it draws it from. */
struct Dimension {
    std::string param;
    std::vector<std::string> values;
};

/** What makes a configuration one the generator must accept and run exactly. */
struct Constraint {
    const char *what;
    std::function<bool(const Config &)> holds;
};

struct Space {
    std::vector<std::string> generators;
    std::vector<Dimension> dimensions;
    std::vector<Constraint> constraints;
};

std::vector<std::string> range(int lo, int hi) {
    std::vector<std::string> v;
    for (int i = lo; i <= hi; i++) v.push_back(std::to_string(i));
    return v;
}

int threads(const Config &c) {
    return (c.at("block_m") / c.at("thread_m", 1)) * (c.at("block_n") / c.at("thread_n", 1));
}

int stages_b(const Config &c) {
    return c.at("stages_b") ? c.at("stages_b") : c.at("stages", 1);
}

/** Elements per copy: vector_width (f32), or the 16-byte vectors of f16 and bf16 tiles. */
int copy_elements(const Config &c) {
    return c.params.count("type") ? 8 : c.at("vector_width");
}

// The constraints of generators/MatMulGenerator.h and ContractionSchedule.h, and the pass's
// limits on OpenCL (src/plan/ResourceLimits.h), for operands of `bytes` bytes.
std::vector<Constraint> matmul_constraints(int bytes) {
    return {
        {"the copies' vector divides tile_k and block_n",
         [](const Config &c) {
             return c.at("tile_k") % copy_elements(c) == 0 && c.at("block_n") % copy_elements(c) == 0;
         }},
        // A pipelined A_shared before an unpipelined B_shared in the kernel's allocation
        // cannot grow into its slots in place: its old tile stays, unused (PipelinePlan.cpp).
        {"the shared slots fit in 48 KiB",
         [bytes](const Config &c) {
             const int a_tiles = c.at("stages", 1) + (c.at("stages", 1) > 1 && stages_b(c) == 1);
             return bytes * c.at("tile_k") * (a_tiles * c.at("block_m") + stages_b(c) * c.at("block_n")) <= 48 * 1024;
         }},
        {"the register prefetch distance is at most the steps of a k tile",
         [](const Config &c) { return c.at("register_stages") < 2 || c.at("register_stages") - 1 <= c.at("tile_k"); }},
    };
}

// fp32: every tile shape, vector width and stage count the schedule takes, at work-groups of
// at most 256 work-items (pocl runs a work-group's items in a loop: larger ones are slow).
Space fp32_space() {
    Space s;
    s.generators = {"testing_gemm", "testing_bmm"};
    s.dimensions = {
        {"block_m", {"8", "16", "32", "64"}},
        {"block_n", {"8", "16", "32", "64"}},
        {"thread_m", {"1", "2", "4", "8"}},
        {"thread_n", {"1", "2", "4", "8"}},
        {"tile_k", {"4", "8", "16", "32"}},
        {"vector_width", {"1", "2", "4", "8", "16"}},
        {"stages", range(1, 6)},
        {"stages_b", range(0, 4)},  // 0: A's
        {"register_stages", range(0, 4)},
        {"copies", {"auto", "synchronous", "staged"}},  // cp.async (async) is CUDA's
    };
    s.constraints = matmul_constraints(4);
    s.constraints.push_back({"thread tiles divide the block tile", [](const Config &c) {
                                 return c.at("block_m") % c.at("thread_m") == 0 &&
                                        c.at("block_n") % c.at("thread_n") == 0;
                             }});
    s.constraints.push_back({"at most 256 work-items", [](const Config &c) { return threads(c) <= 256; }});
    return s;
}

// Tensor cores: fp16 and bf16 operands, warp tiles of mma.sync's shape (multiples of 16),
// k tiles of its k step (16), as check_tensor_core_tiles (ContractionSchedule.h) asks; register
// stages of the fragments where the pass takes them (both operands pipelined, R dividing the
// chunk's k steps); no vector_width (the copies are 16-byte vectors). Blocks of at most
// 32 x 32: pocl takes 25-190 s to compile a kernel of a larger block (one work-item per lane of
// each warp, the fragments in its private memory).
Space tensor_core_space() {
    Space s;
    s.generators = {"testing_gemm", "testing_bmm"};
    s.dimensions = {
        {"type", {"f16", "bf16"}}, {"block_m", {"16", "32"}}, {"block_n", {"16", "32"}},
        {"warp_m", {"16", "32"}},  {"warp_n", {"16", "32"}},  {"tile_k", {"16", "32", "48"}},
        {"stages", range(1, 4)},   {"stages_b", range(0, 3)},  // 0: A's
        {"register_stages", range(0, 2)},
    };
    s.constraints = matmul_constraints(2);
    s.constraints.push_back({"register stages take both operands pipelined and divide the k steps",
                             [](const Config &c) {
                                 return c.at("register_stages") < 2 ||
                                        (c.at("stages", 1) >= 2 && stages_b(c) >= 2 &&
                                         (c.at("tile_k") / 16) % c.at("register_stages") == 0);
                             }});
    s.constraints.push_back({"warp tiles divide the block tile", [](const Config &c) {
                                 return c.at("block_m") % c.at("warp_m") == 0 && c.at("block_n") % c.at("warp_n") == 0;
                             }});
    return s;
}

// Convolutions (fp32): the GEMM's tiles, vectors and stages (one count for both operands, and
// the default copies), with strides and padding.
Space conv2d_space() {
    Space s = fp32_space();
    s.generators = {"testing_conv2d"};
    s.dimensions.erase(std::remove_if(s.dimensions.begin(), s.dimensions.end(),
                                      [](const Dimension &d) { return d.param == "stages_b" || d.param == "copies"; }),
                       s.dimensions.end());
    s.dimensions.push_back({"stride", {"1", "2", "3"}});
    s.dimensions.push_back({"pad", {"0", "1", "2"}});
    return s;
}

Config draw(const Space &s, std::mt19937 &rng) {
    for (;;) {
        Config c;
        c.generator = s.generators[rng() % s.generators.size()];
        for (const Dimension &d : s.dimensions) c.params[d.param] = d.values[rng() % d.values.size()];
        bool ok = true;
        for (const Constraint &k : s.constraints) ok = ok && k.holds(c);
        if (ok) return c;
    }
}

/** A configuration as Config::describe() prints it: "generator key=value ...". */
Config parse(const std::string &text) {
    std::istringstream in(text);
    Config c;
    in >> c.generator;
    for (std::string kv; in >> kv;) c.params[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    return c;
}

// ---- Operands of the variant's own types (from its metadata).

halide_type_t argument_type(const Variant &v, const char *name) {
    for (int i = 0; i < v.metadata().num_arguments; i++) {
        if (!strcmp(v.metadata().arguments[i].name, name)) return v.metadata().arguments[i].type;
    }
    return halide_type_t(halide_type_float, 32);
}

/** Runs `v` at `shapes` random runtime shapes; "" when every output is close to the reference,
 * else what went wrong. */
std::string check(const Variant &v, bool batched, std::mt19937 &rng, int shapes) {
    std::ostringstream failures;
    for (int s = 0; s < shapes; s++) {
        const int batch = batched ? 1 + rng() % 3 : 1, m = fuzz::draw_size(rng), n = fuzz::draw_size(rng),
                  k = fuzz::draw_size(rng);
        std::vector<int> a_shape{k, m}, b_shape{n, k}, out_shape{n, m};
        if (batched) {
            a_shape.push_back(batch);
            b_shape.push_back(batch);
            out_shape.push_back(batch);
        }
        Buffer<float> a_values, b_values;
        Buffer<void> a = reference::random_operand(rng, a_shape, argument_type(v, "A"), a_values);
        Buffer<void> b = reference::random_operand(rng, b_shape, argument_type(v, "B"), b_values);
        Buffer<float> out = reference::poisoned(out_shape);
        std::string error;
        const int status = v.run({{"A", a.raw_buffer()}, {"B", b.raw_buffer()}, {"out", out.raw_buffer()}}, &error);
        std::ostringstream shape;
        shape << (batched ? "batch " + std::to_string(batch) + ", " : "") << "M " << m << ", N " << n << ", K " << k;
        if (status) {
            failures << "  " << shape.str() << ": returned " << status << " " << error << "\n";
            continue;
        }
        out.copy_to_host();
        // fp16 and bf16 products are exact in fp32: only the accumulation rounds.
        const bool exact_products = argument_type(v, "A").bits == 16 && argument_type(v, "B").bits == 16;
        const int wrong = reference::matmul_mismatches(a_values, b_values, out, exact_products);
        if (wrong) failures << "  " << shape.str() << ": " << wrong << " of " << out.number_of_elements() << " wrong\n";
    }
    return failures.str();
}

/** The same for a convolution variant (testing_conv2d) of `stride` and `pad`: random images,
 * channels and filter sizes, each at least one output pixel. */
std::string check_conv2d(const Variant &v, int stride, int pad, std::mt19937 &rng, int shapes) {
    std::ostringstream failures;
    for (int s = 0; s < shapes; s++) {
        const int n = 1 + rng() % 2, kw = 1 + rng() % 3, kh = 1 + rng() % 3;
        const int w = std::max(kw - 2 * pad, 1) + rng() % 12, h = std::max(kh - 2 * pad, 1) + rng() % 12;
        const int ci = 1 + rng() % 40, co = fuzz::draw_size(rng);
        const int ow = (w + 2 * pad - kw) / stride + 1, oh = (h + 2 * pad - kh) / stride + 1;
        Buffer<float> input(ci, w, h, n), filter(co, ci, kw, kh);
        reference::fill_random(input, rng);
        reference::fill_random(filter, rng);
        Buffer<float> out = reference::poisoned({co, ow * oh * n});
        std::string error;
        const int status =
            v.run({{"input", input.raw_buffer()}, {"filter", filter.raw_buffer()}, {"out", out.raw_buffer()}}, &error);
        std::ostringstream shape;
        shape << "N " << n << ", H " << h << ", W " << w << ", CI " << ci << ", CO " << co << ", filter " << kh << "x"
              << kw;
        if (status) {
            failures << "  " << shape.str() << ": returned " << status << " " << error << "\n";
            continue;
        }
        out.copy_to_host();
        const int wrong = reference::conv2d_mismatches(input, filter, out, stride, pad);
        if (wrong) failures << "  " << shape.str() << ": " << wrong << " of " << out.number_of_elements() << " wrong\n";
    }
    return failures.str();
}

struct Batch {
    int seed = 0;
    std::string dir;
    std::vector<Config> configs;
    std::vector<Built> built;
};

/** Builds `configs` (with `extra` params each) through the testing generator executable. */
Batch build(const std::vector<Config> &configs, int seed, const std::vector<std::string> &extra) {
    Batch r;
    r.seed = seed;
    r.configs = configs;
    std::string pattern = std::string(ALCOP_FUZZ_DIR) + "/compile_fuzz.XXXXXX";
    r.dir = mkdtemp(pattern.data()) ? pattern : std::string(ALCOP_FUZZ_DIR);
    std::vector<Generation> gens;
    for (size_t i = 0; i < configs.size(); i++) {
        Generation g;
        g.generator_exe = ALCOP_TESTING_GEN;
        g.generator = configs[i].generator;
        g.function = "fz" + std::to_string(i);
        g.target = ALCOP_OPENCL_TARGET;
        g.params = configs[i].key_values();
        g.params.insert(g.params.end(), extra.begin(), extra.end());
        gens.push_back(g);
    }
    r.built = alcop::variants::build_all(gens, r.dir, ALCOP_CXX);
    return r;
}

/** What went wrong with configuration i of `r` ("" if nothing), each with how to repeat it. */
std::string run_one(const Batch &r, size_t i, std::mt19937 &rng, int shapes) {
    const Built &b = r.built[i];
    std::ostringstream os;
    const std::string repeat = "  seed " + std::to_string(r.seed) + ", configuration " + std::to_string(i) + ": " +
                               r.configs[i].describe() + "\n  build: " + b.command + "\n";
    if (!b.ok) {
        os << "build failed\n" << repeat << alcop::variants::read_text(b.log);
        return os.str();
    }
    std::string error;
    std::unique_ptr<Variant> v = Variant::load(b.library, "fz" + std::to_string(i), &error);
    if (!v) return "load failed: " + error + "\n" + repeat;
    const Config &c = r.configs[i];
    const std::string wrong = c.generator == "testing_conv2d" ?
                                  check_conv2d(*v, c.at("stride", 1), c.at("pad", 0), rng, shapes) :
                                  check(*v, c.generator == "testing_bmm", rng, shapes);
    return wrong.empty() ? "" : "mismatch\n" + repeat + wrong;
}

const int shapes_per_config = 3;

/** Draws ALCOP_FUZZ_COMPILE_CONFIGS configurations of `space`, builds them (with
 * ALCOP_FUZZ_FAULT's fault, if set) and checks each; the number that failed. */
int fuzz_space(const Space &space) {
    const int seed = fuzz::env_int("ALCOP_FUZZ_SEED", 1234), n = fuzz::env_int("ALCOP_FUZZ_COMPILE_CONFIGS", 4);
    std::mt19937 rng(seed);
    std::vector<Config> configs;
    for (int i = 0; i < n; i++) configs.push_back(draw(space, rng));
    if (const char *given = getenv("ALCOP_FUZZ_CONFIG")) {
        configs = {parse(given)};  // a configuration a failure printed, again (at other shapes)
    }
    if (configs.empty()) {
        ADD_FAILURE() << "ALCOP_FUZZ_COMPILE_CONFIGS=" << n << " runs no configuration: nothing would be checked";
        return 1;
    }
    const char *fault = getenv("ALCOP_FUZZ_FAULT");
    const Batch r = build(configs, seed,
                          fault ? std::vector<std::string>{std::string("fault=") + fault} : std::vector<std::string>{});
    int failures = 0;
    for (size_t i = 0; i < configs.size(); i++) {
        printf("  configuration %zu: %s\n", i, configs[i].describe().c_str());
        const std::string what = run_one(r, i, rng, shapes_per_config);
        if (!what.empty()) {
            failures++;
            ADD_FAILURE() << what;
        }
    }
    printf("compile-time fuzz: seed %d, %zu configurations, %d shapes each, %d failing%s\n", seed, configs.size(),
           shapes_per_config, failures, failures ? (" (variants kept in " + r.dir + ")").c_str() : "");
    if (!failures) std::filesystem::remove_all(r.dir);
    return failures;
}

TEST(CompileFuzz, RandomConfigurationsMatchReference) {
    fuzz_space(fp32_space());
}

// The checker bites: a pipeline whose copies write the wrong slot (testing::Fault), built and
// run by the same machinery, must be reported.
TEST(CompileFuzz, BrokenPipelineIsCaught) {
    Config c{
        "testing_gemm",
        {{"block_m", "32"}, {"block_n", "32"}, {"thread_m", "2"}, {"thread_n", "2"}, {"tile_k", "8"}, {"stages", "3"}}};
    const Batch r = build({c}, 0, {"fault=slot_off_by_one"});
    std::mt19937 rng(1);
    const std::string what = run_one(r, 0, rng, 1);
    EXPECT_NE(what.find("mismatch"), std::string::npos) << "the broken pipeline was not caught: " << what;
    std::filesystem::remove_all(r.dir);
}

// Found by this fuzzer (seed 1234, its first configuration): with register fragments pipelined
// (register_stages >= 2), one operand pipelined at the shared level and the other not (stages
// or stages_b 1) gives wrong results, whichever operand it is; both pipelined (any counts) or
// register_stages 1 are right. The lowered kernel (stages=1 stages_b=2) composes both fragments
// with B's shared pipeline: A's first fragments are loaded before the loop, from A_shared that
// is produced only inside it, and the last R - 1 steps of chunk k load A's fragments of chunk
// k + 1 from A's one slot, which still holds chunk k. Fixed: each fragment composes with its
// own operand's pipeline; one whose operand is not pipelined starts over in each chunk (see
// PipelineFragments.h).
TEST(CompileFuzz, OneOperandPipelinedWithRegisterStages) {
    for (const char *stages : {"stages=1 stages_b=2", "stages=2 stages_b=1"}) {
        const Config c = parse(std::string("testing_gemm block_m=16 block_n=16 thread_m=2 thread_n=2 tile_k=8 "
                                           "vector_width=1 register_stages=2 ") +
                               stages);
        const Batch r = build({c}, 0, {});
        std::mt19937 rng(1);
        const std::string what = run_one(r, 0, rng, shapes_per_config);
        EXPECT_EQ(what, "");
        if (what.empty()) std::filesystem::remove_all(r.dir);
    }
}

// What the tensor-core space leaves out (by its values or its constraints), the generators
// reject, each with a user error saying why: the space is not narrower than they are.
TEST(CompileFuzz, TensorCoreConstraintsAreTheGenerators) {
    const std::string base = "testing_gemm type=f16 block_m=32 block_n=32 warp_m=16 warp_n=16 tile_k=32 stages=2 ";
    const std::vector<std::pair<std::string, std::string>> broken{
        {"block_m=48 warp_m=32", "must divide block_m (48)"},
        {"warp_n=24", "must be multiples of 16"},
        {"tile_k=24", "must be a multiple of 16"},
        {"block_m=128 block_n=128 warp_m=32 warp_n=32 tile_k=48 stages=4", "bytes of shared memory per block"},
    };
    const Space space = tensor_core_space();
    std::vector<Config> configs;
    for (const auto &[params, message] : broken) {
        Config c = parse(base);
        for (const auto &[k, v] : parse("g " + params).params) c.params[k] = v;
        int violated = 0;
        for (const Constraint &k : space.constraints) violated += !k.holds(c);
        const bool drawable = std::all_of(space.dimensions.begin(), space.dimensions.end(), [&](const Dimension &d) {
            auto it = c.params.find(d.param);
            return it == c.params.end() || std::count(d.values.begin(), d.values.end(), it->second) > 0;
        });
        EXPECT_TRUE(violated > 0 || !drawable) << c.describe() << ": the space draws it";
        configs.push_back(c);
    }
    const Batch r = build(configs, 0, {});
    for (size_t i = 0; i < configs.size(); i++) {
        const std::string log = alcop::variants::read_text(r.built[i].log);
        EXPECT_FALSE(r.built[i].ok) << configs[i].describe() << " built";
        EXPECT_NE(log.find(broken[i].second), std::string::npos) << configs[i].describe() << ":\n" << log;
    }
    std::filesystem::remove_all(r.dir);
}

// fp16 and bf16 on tensor cores, the ldmatrix and mma.sync markers emulated on pocl
// (test/support/EmulatedTensorCores.h).
TEST(CompileFuzz, TensorCoreConfigurationsMatchReference) {
    fuzz_space(tensor_core_space());
}

TEST(CompileFuzz, RandomConvolutionsMatchReference) {
    fuzz_space(conv2d_space());
}

}  // namespace
