#include "model/GpuSpec.h"

#include <algorithm>
#include <cctype>

namespace alcop {
namespace model {

namespace {

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * 1024;

// Chip-wide L2 -> SM bandwidth in GB/s from a per-SM bytes-per-clock figure.
// NVIDIA publishes the chip-wide figure for V100 (2048 B/clk) and A100
// (5120 B/clk) in the A100 whitepaper; for the other parts we assume a per-SM
// figure and say so in docs/model.md.
double l2_gbps_from(double bytes_per_clk_per_sm, int sms, double clock_ghz) {
    return bytes_per_clk_per_sm * sms * clock_ghz;
}

std::vector<GpuSpec> make_table() {
    std::vector<GpuSpec> gpus;

    {
        // Tesla V100 SXM2 (GV100, sm_70). V100 datasheet / Volta whitepaper.
        GpuSpec g;
        g.name = "V100";
        g.product = "NVIDIA Tesla V100 SXM2 32GB";
        g.compute_capability = 70;
        g.has_async_copy = false;  // cp.async arrived with sm_80
        g.sm_count = 80;
        g.clock_ghz = 1.530;
        g.max_threads_per_sm = 2048;
        g.max_blocks_per_sm = 32;
        g.smem_per_sm = 96 * KiB;
        g.smem_per_block_optin = 96 * KiB;
        g.smem_reserved_per_block = 0;
        g.smem_alloc_unit = 256;
        g.l2_bytes = 6 * MiB;
        g.dram_gbps = 900;
        g.l2_gbps = l2_gbps_from(2048.0 / 80, 80, 1.530);  // 2048 B/clk (A100 whitepaper)
        g.global_latency_cycles = 400;
        g.smem_latency_cycles = 19;
        g.fp32_lanes_per_sm = 64;
        g.fp32_tflops = 15.7;
        g.fp16_mma_tflops = 125;
        // sm_70 has mma.sync.m8n8k4 only: no m16n8k16 and no bf16 (PTX ISA, "Warp-level matrix
        // multiply-accumulate instructions"), so no tensor-core candidate fits a V100.
        g.mma_f16_flops_per_clk_per_sm = 0;
        g.mma_bf16_flops_per_clk_per_sm = 0;
        gpus.push_back(g);
    }
    {
        // A100 SXM4 80GB (GA100, sm_80). A100 datasheet / whitepaper.
        GpuSpec g;
        g.name = "A100";
        g.product = "NVIDIA A100 SXM4 80GB";
        g.compute_capability = 80;
        g.has_async_copy = true;
        g.sm_count = 108;
        g.clock_ghz = 1.410;
        g.max_threads_per_sm = 2048;
        g.max_blocks_per_sm = 32;
        g.smem_per_sm = 164 * KiB;
        g.smem_per_block_optin = 163 * KiB;
        g.smem_reserved_per_block = 1 * KiB;
        g.l2_bytes = 40 * MiB;
        g.dram_gbps = 2039;
        g.l2_gbps = l2_gbps_from(5120.0 / 108, 108, 1.410);  // 5120 B/clk (A100 whitepaper)
        g.global_latency_cycles = 450;
        g.smem_latency_cycles = 23;
        g.fp32_lanes_per_sm = 64;
        g.fp32_tflops = 19.5;
        g.fp16_mma_tflops = 312;
        // 1024 dense FP16 FMA per clock per SM (A100 whitepaper, Table "A100 SM"), fp16 and bf16
        // alike: 2048 x 108 x 1.41 GHz = 311.9 TFLOP/s, the datasheet's 312.
        g.mma_f16_flops_per_clk_per_sm = 2048;
        g.mma_bf16_flops_per_clk_per_sm = 2048;
        g.mma_latency_cycles = 32;
        gpus.push_back(g);
    }
    {
        // GeForce RTX 3090 (GA102, sm_86). GA102 whitepaper.
        GpuSpec g;
        g.name = "RTX3090";
        g.product = "NVIDIA GeForce RTX 3090";
        g.compute_capability = 86;
        g.has_async_copy = true;
        g.sm_count = 82;
        g.clock_ghz = 1.695;
        g.max_threads_per_sm = 1536;
        g.max_blocks_per_sm = 16;
        g.smem_per_sm = 100 * KiB;
        g.smem_per_block_optin = 99 * KiB;
        g.smem_reserved_per_block = 1 * KiB;
        g.l2_bytes = 6 * MiB;
        g.dram_gbps = 936;
        g.l2_gbps = l2_gbps_from(32, 82, 1.695);  // estimate: 32 B/clk/SM
        g.global_latency_cycles = 450;
        g.smem_latency_cycles = 23;
        g.fp32_lanes_per_sm = 128;
        g.fp32_tflops = 35.6;
        g.fp16_mma_tflops = 71;  // FP32 accumulate (142 with FP16 accumulate)
        // GA102 whitepaper: 71 TFLOP/s fp16 and bf16 with fp32 accumulation on the RTX 3090:
        // 512 x 82 x 1.695 GHz = 71.2.
        g.mma_f16_flops_per_clk_per_sm = 512;
        g.mma_bf16_flops_per_clk_per_sm = 512;
        g.mma_latency_cycles = 32;
        gpus.push_back(g);
    }
    {
        // GeForce RTX 4090 (AD102, sm_89). Ada whitepaper.
        GpuSpec g;
        g.name = "RTX4090";
        g.product = "NVIDIA GeForce RTX 4090";
        g.compute_capability = 89;
        g.has_async_copy = true;
        g.sm_count = 128;
        g.clock_ghz = 2.520;
        g.max_threads_per_sm = 1536;
        g.max_blocks_per_sm = 24;
        g.smem_per_sm = 100 * KiB;
        g.smem_per_block_optin = 99 * KiB;
        g.smem_reserved_per_block = 1 * KiB;
        g.l2_bytes = 72 * MiB;
        g.dram_gbps = 1008;
        g.l2_gbps = l2_gbps_from(32, 128, 2.520);  // estimate: 32 B/clk/SM
        g.global_latency_cycles = 500;
        g.smem_latency_cycles = 23;
        g.fp32_lanes_per_sm = 128;
        g.fp32_tflops = 82.6;
        g.fp16_mma_tflops = 165.2;  // FP32 accumulate (330.3 with FP16 accumulate)
        // Ada whitepaper: 165.2 TFLOP/s fp16 and bf16 with fp32 accumulation on the RTX 4090:
        // 512 x 128 x 2.52 GHz = 165.2.
        g.mma_f16_flops_per_clk_per_sm = 512;
        g.mma_bf16_flops_per_clk_per_sm = 512;
        g.mma_latency_cycles = 32;
        gpus.push_back(g);
    }
    {
        // H100 SXM5 80GB (GH100, sm_90). H100 datasheet / Hopper whitepaper.
        GpuSpec g;
        g.name = "H100";
        g.product = "NVIDIA H100 SXM5 80GB";
        g.compute_capability = 90;
        g.has_async_copy = true;
        g.sm_count = 132;
        g.clock_ghz = 1.980;
        g.max_threads_per_sm = 2048;
        g.max_blocks_per_sm = 32;
        g.smem_per_sm = 228 * KiB;
        g.smem_per_block_optin = 227 * KiB;
        g.smem_reserved_per_block = 1 * KiB;
        g.l2_bytes = 50 * MiB;
        g.dram_gbps = 3350;
        g.l2_gbps = l2_gbps_from(5120.0 / 108, 132, 1.980);  // estimate: A100's per-SM rate
        g.global_latency_cycles = 500;
        g.smem_latency_cycles = 23;
        g.fp32_lanes_per_sm = 128;
        g.fp32_tflops = 66.9;
        g.fp16_mma_tflops = 989.4;  // dense (1979 with sparsity)
        // The dense peak is wgmma's: 4096 FLOPs per clock per SM, twice A100's per SM (Hopper
        // whitepaper), quoted at 1830 MHz (4096 x 132 x 1.83 GHz = 989.4). mma.sync does not reach
        // it: issued by single warps and synchronous, it gets about half (docs/model.md, §12), the
        // per-SM rate of A100, which is what our kernels use.
        g.mma_f16_flops_per_clk_per_sm = 2048;
        g.mma_bf16_flops_per_clk_per_sm = 2048;
        g.mma_latency_cycles = 32;
        gpus.push_back(g);
    }
    {
        // H200 SXM 141GB: the GH100 compute die of the H100 SXM5 with HBM3e.
        // H200 datasheet: 4.8 TB/s, 67 TFLOP/s FP32, 1979 TFLOP/s FP16 sparse.
        GpuSpec g = gpus.back();
        g.name = "H200";
        g.product = "NVIDIA H200 SXM 141GB";
        g.dram_gbps = 4800;
        gpus.push_back(g);
    }
    return gpus;
}

// Lower-case and drop everything but letters and digits, then drop vendor and
// product-line words, so "NVIDIA GeForce RTX-3090" and "rtx3090" compare equal.
std::string normalize(const std::string &name) {
    std::string s;
    for (char c : name) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    for (const char *prefix : {"nvidia", "geforce", "tesla"}) {
        const std::string p(prefix);
        if (s.compare(0, p.size(), p) == 0) {
            s = s.substr(p.size());
        }
    }
    return s;
}

struct Alias {
    const char *alias;
    const char *name;
};

// Form-factor and memory suffixes people commonly write after the model name.
const Alias aliases[] = {
    {"v100", "V100"},     {"v100sxm2", "V100"},   {"v100sxm", "V100"},  {"a100", "A100"},
    {"a100sxm4", "A100"}, {"a100sxm", "A100"},    {"a10080gb", "A100"}, {"rtx3090", "RTX3090"},
    {"3090", "RTX3090"},  {"rtx4090", "RTX4090"}, {"4090", "RTX4090"},  {"h100", "H100"},
    {"h100sxm", "H100"},  {"h100sxm5", "H100"},   {"h200", "H200"},     {"h200sxm", "H200"},
};

}  // namespace

double GpuSpec::l2_bytes_per_clk_per_sm() const {
    return l2_gbps / (sm_count * clock_ghz);  // (GB/s) / (G cycles/s) = bytes/cycle
}

double GpuSpec::dram_bytes_per_clk() const {
    return dram_gbps / clock_ghz;
}

std::string GpuSpec::arch() const {
    return "sm_" + std::to_string(compute_capability);
}

const std::vector<GpuSpec> &all_gpus() {
    static const std::vector<GpuSpec> table = make_table();
    return table;
}

const GpuSpec *find_gpu(std::string name) {
    const std::string key = normalize(name);
    for (const Alias &a : aliases) {
        if (key == a.alias) {
            for (const GpuSpec &g : all_gpus()) {
                if (g.name == a.name) {
                    return &g;
                }
            }
        }
    }
    return nullptr;
}

const GpuSpec &default_gpu() {
    static const GpuSpec *h200 = find_gpu("H200");
    return *h200;
}

}  // namespace model
}  // namespace alcop
