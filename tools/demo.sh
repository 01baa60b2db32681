#!/usr/bin/env bash
# The README's demo: what the pass pipelined (copies, barriers, bank conflicts per kernel), then
# the GEMM on the best device present — CUDA when a GPU works (with the speedup over
# unpipelined), else OpenCL on the CPU (pocl).
#   tools/demo.sh [-v] BUILD_DIR     (-v: also list each shared access with bank conflicts)
set -euo pipefail
verbose=()
if [[ ${1:-} == -v ]]; then
    verbose=(--verbose)
    shift
fi
build=${1:-build}
"$build/tools/alcop_inspect" gemm stages=3 "${verbose[@]}"
# Both levels: register fragments double-buffered under the shared pipeline.
echo "=== the same with both levels (register_stages=2) ==="
"$build/tools/alcop_inspect" gemm stages=3 register_stages=2 "${verbose[@]}" | sed -n '/^after:/,$p'
if command -v nvidia-smi > /dev/null && nvidia-smi > /dev/null 2>&1; then
    "$build/apps/bench/alcop_bench_cuda" --size large --runs 20
else
    echo "(no working GPU: OpenCL on the CPU, where times say nothing about a GPU's)"
    "$build/apps/gemm_demo/gemm_demo"
fi
