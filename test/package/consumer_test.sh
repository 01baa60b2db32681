#!/usr/bin/env bash
# Installs the build in BUILD_DIR into a temporary prefix and builds and runs the consumer
# project in CONSUMER_DIR against it: only the prefix (and Halide, LLVM) is on its search path.
#   consumer_test.sh BUILD_DIR CONSUMER_DIR
set -euo pipefail
build=$1 consumer=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
# What a user gets: the umbrella header, the package config, the library and the plugin.
for f in include/alcop/Alcop.h lib/cmake/HalideAlcop/HalideAlcopConfig.cmake \
         lib/cmake/HalideAlcop/HalideAlcopConfigVersion.cmake lib/libHalideAlcop.a lib/libautoschedule_alcop.so \
         bin/alcop_inspect; do
    [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
# Nothing internal: no header of src/ and no test support.
if find "$work/prefix" -name 'TestHooks.h' -o -name 'LowerPipelines.h' -o -name 'EmulatedAsyncCopies.h' | grep .; then
    echo "internal headers were installed"
    exit 1
fi
cmake -S "$consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" || exit 1
# The pass ran in the consumer's generator: its kernel addresses 3 slots (k % 3), which the same
# schedule without alcop::Func::pipeline(3) never does.
mkdir "$work/stmt"
"$work/build/consumer_generators" -g pipelined_gemm -e stmt -o "$work/stmt" target=host-opencl
slots=$(grep -a -c '% 3' "$work/stmt/pipelined_gemm.stmt" || true)
[ "$slots" -gt 0 ] || { echo "the consumer's pipelined_gemm was not pipelined"; exit 1; }
echo "pipelined_gemm addresses its 3 slots in $slots places"
"$work/build/consumer"
# The installed alcop_inspect reports on the consumer's own generators, loaded from its module:
# the pipeline it made (3 stages, cp.async for CUDA sm_80), each kernel's bank conflicts, hazards
# (none) and main loop, and with --sass that loop's SASS or why there is none. It has no test
# generators.
report=$("$work/prefix/bin/alcop_inspect" -l "$work/build/libconsumer_inspectable.so" pipelined_gemm \
         target=host-cuda-cuda_capability_80 --sass 2>&1) || { echo "$report"; exit 1; }
echo "$report"
for line in 'requests: A_shared(stages 3, shared) B_shared(stages 3, shared)' 'copies into shared memory: ' \
            'bank conflicts: ' ': hazards: 0 (' 'main loop of _kernel_out'; do
    grep -qF "$line" <<< "$report" || { echo "the report lacks: $line"; exit 1; }
done
grep -qE '^  SASS sm_80 \(ptxas [0-9.]+\): [0-9]+ FFMA|^SASS not reported: nvdisasm not found' <<< "$report" ||
    { echo "the report lacks the main loop's SASS, or why it has none"; exit 1; }
# Its fp16 GEMM of runtime sizes, as the plugin schedules it for CUDA sm_80: mma.sync where the
# k tile divides K, in the kernel's main loop, and the kernels' hazards checked at such a K too.
report=$("$work/prefix/bin/alcop_inspect" -l "$work/build/libconsumer_inspectable.so" plain_gemm_f16 \
         target=host-cuda-cuda_capability_80 auto_schedule=true 2>&1) || { echo "$report"; exit 1; }
echo "$report"
for line in "mma.sync where r\$x's extent is a multiple of the k tile" ': hazards: 0 (' \
            'with A.extent.0 rounded up to a multiple of' \
            'main loop of _kernel_out'; do
    grep -qF "$line" <<< "$report" || { echo "the report lacks: $line"; exit 1; }
done
grep -qE '^main loop of _kernel_out.*: [0-9]+ mma\.sync, ' <<< "$report" ||
    { echo "the fp16 GEMM's main loop has no mma.sync"; exit 1; }
# Its fp16 GEMM on tensor cores scheduled by hand, of any K (a guarded last chunk, which the pass
# zero-fills): mma.sync in the main loop, no multiply-add of a thread's own, hazards checked, and
# A's 16-byte copies along K, clamped to K, cp.async (3 stages of 6 a thread: 2 in the loop).
report=$("$work/prefix/bin/alcop_inspect" -l "$work/build/libconsumer_inspectable.so" own_tc_gemm \
         target=host-cuda-cuda_capability_80 --ptx "$work/own_tc_gemm" 2>&1) || { echo "$report"; exit 1; }
echo "$report"
grep -qE '^main loop of _kernel_out.*: 16 mma\.sync, ' <<< "$report" ||
    { echo "the hand-scheduled fp16 GEMM's main loop has no mma.sync"; exit 1; }
grep -qF ': hazards: 0 (' <<< "$report" || { echo "the report lacks: hazards: 0"; exit 1; }
grep -qE '^main loop of _kernel_out.*, 2 cp\.async of 16 B, ' <<< "$report" ||
    { echo "the hand-scheduled fp16 GEMM's copies of A are not cp.async"; exit 1; }
if grep -q 'fma.rn.f32' "$work/own_tc_gemm/own_tc_gemm.ptx"; then
    echo "a chunk of the hand-scheduled fp16 GEMM runs on the threads' own multiply-adds"
    exit 1
fi
if "$work/prefix/bin/alcop_inspect" testing_gemm > /dev/null 2>&1; then
    echo "the installed alcop_inspect has the test generators"
    exit 1
fi
