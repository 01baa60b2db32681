#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and the binaries built here (Halide is not
# needed there), checks every CUDA variant against a reference, prints the benchmark table,
# and runs compute-sanitizer's racecheck and synccheck on a small pipelined run.
#
#   tools/gpu-check.sh OUT_DIR [BUILD_DIR]
#
# BUILD_DIR (default: build) must hold apps/bench/alcop_bench_cuda. Writes OUT_DIR/bench.txt,
# OUT_DIR/racecheck.txt, OUT_DIR/synccheck.txt and OUT_DIR/summary.txt; exits non-zero when any
# check fails. Takes a few minutes.
set -uo pipefail
out=${1:?usage: tools/gpu-check.sh OUT_DIR [BUILD_DIR]}
build=${2:-build}
bench="$build/apps/bench/alcop_bench_cuda"
mkdir -p "$out"
status=0
{
    echo "== GPU"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
} > "$out/summary.txt"

echo "== correctness and benchmark (large shapes, median of 20 runs)" | tee -a "$out/summary.txt"
if timeout 300 "$bench" --size large --runs 20 > "$out/bench.txt" 2>&1; then
    echo "bench: all variants correct" >> "$out/summary.txt"
else
    echo "bench: FAILED (exit $?)" >> "$out/summary.txt"
    status=1
fi
cat "$out/bench.txt"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1 || true)
for tool in racecheck synccheck; do
    if [ -n "$sanitizer" ] && [ -x "$sanitizer" ]; then
        timeout 120 "$sanitizer" --tool "$tool" --error-exitcode 3 "$bench" --size tiny --runs 1 > "$out/$tool.txt" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            echo "$tool: clean" >> "$out/summary.txt"
        else
            echo "$tool: FAILED (exit $rc)" >> "$out/summary.txt"
            status=1
        fi
    else
        echo "$tool: compute-sanitizer not found, not run" >> "$out/summary.txt"
    fi
done
cat "$out/summary.txt"
exit $status
