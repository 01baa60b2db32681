#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and the binaries built here (Halide is not
# needed there), checks every CUDA variant against a reference, prints the benchmark table,
# shows that GEMM pipelines broken on purpose are caught, and runs compute-sanitizer's racecheck
# and synccheck on the pipelined variants, the fp16 / bf16 tensor-core ones included (and
# racecheck on a pipeline missing its barrier, which it must flag).
#
#   tools/gpu-check.sh OUT_DIR [BUILD_DIR]
#
# BUILD_DIR (default: build) must hold apps/bench/alcop_bench_cuda. Writes OUT_DIR/bench.txt,
# faults.txt, tune.txt (where the tuning variants were carried), sass/ (where the benchmark's PTX
# modules were carried), racecheck.txt, synccheck.txt, racecheck_fault.txt and summary.txt; exits non-zero
# when any check fails (a wrong result, a fault not caught, a hazard, a kernel of ours that
# spills). Takes a few minutes.
set -uo pipefail
out=${1:?usage: tools/gpu-check.sh OUT_DIR [BUILD_DIR]}
build=${2:-build}
bench="$build/apps/bench/alcop_bench_cuda"
mkdir -p "$out"
status=0
note() { echo "$*" | tee -a "$out/summary.txt"; }

# cuBLAS, cuDNN and cudart (the anchors) are loaded with dlopen: find them in the toolkit or in
# Python wheels (nvidia-cublas, nvidia-cudnn) where the machine has them; never the toolkit's
# link-time stubs, which would shadow the driver's libraries.
libdirs=$(find -H /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \
              \( -name 'libcublas.so*' -o -name 'libcudnn.so*' -o -name 'libcudart.so*' \) -not -path '*/stubs/*' 2>/dev/null |
          xargs -r -n1 dirname | xargs -r realpath | sort -u | paste -sd: -)
export LD_LIBRARY_PATH="${libdirs:+$libdirs:}${LD_LIBRARY_PATH:-}"

{
    echo "== GPU"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 ||
        echo "nvidia-smi failed"
    echo "library folders found for the anchors: ${libdirs:-none}"
} > "$out/summary.txt"
cat "$out/summary.txt"

# $1: name, $2: seconds, $3: file, then the command. Returns the command's status.
step() {
    local name=$1 seconds=$2 file=$3
    shift 3
    echo "== $name"
    timeout "$seconds" "$@" > "$out/$file" 2>&1
    local rc=$?
    cat "$out/$file"
    return $rc
}

if step "correctness and benchmark (large shapes, fp32, fp16 and bf16, median of 20 runs)" 420 bench.txt "$bench" --size large --runs 20; then
    note "bench: all variants correct"
else
    note "bench: FAILED (exit $?)"
    status=1
fi
# Local memory in our kernels (a spill, or an array left out of registers) is a performance bug.
spills=$(grep "^kernels with local memory" "$out/bench.txt" || echo "kernels with local memory (spills): not reported")
note "$spills"
case "$spills" in *": none") ;; *) status=1 ;; esac

if step "broken pipelines (each must be caught)" 60 faults.txt "$bench" --faults --size large --runs 3; then
    note "faults: every broken pipeline caught by the numbers"
else
    note "faults: FAILED (exit $?: a fault not caught, or the correct pipeline wrong)"
    status=1
fi

# The tuning experiment, where its CUDA variants were built here and carried beside the build
# (tools/alcop-tune --cuda --size large BUILD_DIR/tune-cuda: tune-cuda/variants.tar.gz; or
# ALCOP_TUNE_VARIANTS=path). Plot it here afterwards: tools/plot.sh tune OUT_DIR/tune.txt OUT_DIR.
tune_pack=${ALCOP_TUNE_VARIANTS:-$build/tune-cuda/variants.tar.gz}
tune_run="$build/tools/tune/alcop_tune_run_cuda"
if [ -f "$tune_pack" ] && [ -x "$tune_run" ]; then
    mkdir -p "$out/tune" && tar xzf "$tune_pack" -C "$out/tune"
    if step "tuning experiment (the model's ranking against the measured best)" 300 tune.txt \
        "$tune_run" "$out/tune/variants/manifest.txt" --runs 20; then
        note "tune: $(grep -c . "$out/tune.txt") lines (tune.txt)"
    else
        note "tune: FAILED (exit $?)"
        status=1
    fi
else
    note "tune: no CUDA variants carried ($tune_pack), not run"
fi

# The benchmark kernels' SASS as this machine's CUDA assembles them (the driver compiles the
# PTX with the same release), from the PTX modules written here before the carry
# (`build/tools/alcop_inspect BUILD_DIR/apps/bench/alcop_bench_cuda --ptx BUILD_DIR/apps/bench/ptx`).
# Read them back where Halide is: `alcop_inspect OUT_DIR/sass/<module>.sass`, the main loops in
# SASS. (The ptxas beside nvdisasm: a disassembler reads only its own release's cubins and older.)
ptx_dir="$build/apps/bench/ptx"
nvdisasm=$(PATH="$PATH:/usr/local/cuda/bin" command -v nvdisasm || true)
ptxas="$(dirname "${nvdisasm:-.}")/ptxas"
if [ -d "$ptx_dir" ] && [ -n "$nvdisasm" ] && [ -x "$ptxas" ]; then
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '.[:space:]')
    arch="sm_${cc:-90}"
    mkdir -p "$out/sass"
    made=0
    for ptx in "$ptx_dir"/*.ptx; do
        listing="$out/sass/$(basename "$ptx" .ptx).$arch"
        if "$ptxas" -arch="$arch" "$ptx" -o "$listing.cubin" >> "$out/sass/ptxas.log" 2>&1 &&
            "$nvdisasm" -c "$listing.cubin" > "$listing.sass"; then
            made=$((made + 1))
        fi
        rm -f "$listing.cubin"
    done
    note "sass: $made of $(ls "$ptx_dir"/*.ptx | wc -l) PTX modules as $arch SASS (ptxas $("$ptxas" --version |
        sed -n 's/.*release \([0-9.]*\).*/\1/p')) in sass/"
else
    note "sass: not made (no $ptx_dir carried, or no nvdisasm with its ptxas here)"
fi

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer \
    /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1 || true)
if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
    note "racecheck, synccheck: compute-sanitizer not found, not run"
    cat "$out/summary.txt"
    exit $status
fi
# (TC s1, s3 and s4: the tensor-core variants, ldmatrix and mma.sync, of the fp16 and bf16 rows.)
pipelined="stages 1,ALCOP s3,ALCOP deep,ALCOP auto,TC s1,TC s3,TC s4"
for tool in racecheck synccheck; do
    step "$tool on the pipelined variants (tiny shapes)" 120 $tool.txt \
        "$sanitizer" --tool $tool --error-exitcode 3 "$bench" --size tiny --runs 1 --only "$pipelined"
    rc=$?
    if [ $rc -eq 0 ]; then
        note "$tool: clean"
    else
        note "$tool: FAILED (exit $rc)"
        status=1
    fi
done
# The checker must bite: without the barrier between the copies and the compute, racecheck has
# to report hazards (exit 3).
step "racecheck on a pipeline without its barrier (must report hazards)" 60 racecheck_fault.txt \
    "$sanitizer" --tool racecheck --error-exitcode 3 "$bench" --faults --size tiny --runs 1 --only drop_bar
rc=$?
if [ $rc -eq 3 ]; then
    note "racecheck catches the missing barrier"
else
    note "racecheck on the missing barrier: FAILED (exit $rc, expected 3)"
    status=1
fi
cat "$out/summary.txt"
exit $status
