#!/bin/bash
# alcop_inspect on bad input, as a new user gives it: each case must end with exit status 1 and
# Halide's error message naming what is wrong, never with std::terminate (status 134 and
# "terminate called after throwing an instance of 'Halide::CompileError'"); and --help.
# Usage: inspect_errors.sh path/to/alcop_inspect
inspect=$1
failed=0

# expect <text the message must hold> <alcop_inspect arguments...>
expect() {
    local want=$1
    shift
    local out rc
    out=$("$inspect" "$@" 2>&1)
    rc=$?
    if [ $rc -ne 1 ] || ! grep -qF -- "$want" <<< "$out" || grep -q "terminate called" <<< "$out"; then
        echo "FAILED: alcop_inspect $* (exit status $rc, wanted 1 and a message with '$want'):"
        echo "$out" | tail -5
        failed=1
    else
        echo "ok: alcop_inspect $*: $(grep -F -- "$want" <<< "$out" | head -1)"
    fi
}

cuda=target=host-cuda-cuda_capability_80
# A GeneratorParam's value the generator rejects, one it does not have, an unknown value of an
# enumeration, a target Halide cannot parse, and a schedule the ALCOP pass rejects.
expect "warp_m (48) and warp_n (64) must divide block_m (128)" gemm $cuda type=f16 warp_m=48
expect "no GeneratorParam named: bogus" gemm $cuda bogus=1
expect "Enumeration value not found: f64" gemm $cuda type=f64
expect "Did not understand Halide target host-cuda-nonsense" gemm target=host-cuda-nonsense
expect "more than the limit of 49152 bytes" gemm $cuda type=f16 stages=9
# A file that is not what its name says, and one that is not there.
text=$(mktemp -d)
trap 'rm -rf "$text"' EXIT
echo "not a listing" > "$text/k.sass"
echo "not a module" > "$text/k.ptx"
expect "no kernel found (no function: not a listing of nvdisasm or cuobjdump -sass)" "$text/k.sass"
expect "no kernel found (no .entry: not a PTX module)" "$text/k.ptx"
expect "cannot read $text/missing.sass" "$text/missing.sass"
printf 'ELF\0no kernels\0' > "$text/k.o"
expect "no PTX module found" "$text/k.o"
expect "a file takes --sass and --ptx DIR only" "$text/k.o" type=f16
expect "a file takes --sass and --ptx DIR only" "$text/k.o" $cuda
# Asked for help, it prints both forms of the command line on stdout and succeeds; with no
# argument at all the same is an error.
help=$("$inspect" --help 2>/dev/null)
rc=$?
if [ $rc -ne 0 ] || ! grep -qF "usage: " <<< "$help" || ! grep -qF "file.ptx|file.sass|file.o" <<< "$help"; then
    echo "FAILED: alcop_inspect --help (exit status $rc, wanted 0 and the usage on stdout)"
    failed=1
else
    echo "ok: alcop_inspect --help: $(head -1 <<< "$help")"
fi
expect "usage: "
exit $failed
