#!/usr/bin/env bash
# Installs the build in BUILD_DIR into a temporary prefix and builds the encoder-layer app
# (APP_DIR, apps/encoder_layer) as a project of its own against it, its kernels made by the
# installed generators (HalideAlcop::generators), then runs the tiny layer on pocl, whose
# numbers the app checks against its double-precision reference.
#   encoder_layer_test.sh BUILD_DIR APP_DIR
set -euo pipefail
build=$1 app=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
[ -x "$work/prefix/bin/alcop_gen" ] || { echo "not installed: bin/alcop_gen"; exit 1; }
cmake -S "$app" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
      -DENCODER_BACKENDS=opencl > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" || exit 1
# Its kernels came from the installed generators, not from a build tree.
grep -q "$work/prefix/bin/alcop_gen" "$work/build/build.ninja" ||
    { echo "the app's kernels were not made by the installed generators"; exit 1; }
"$work/build/encoder_layer_opencl" --config tiny --runs 1
