#!/usr/bin/env bash
# Every #include of a public header names Halide.h, a standard header or another public header
# (alcop/...), and that header exists: users never need src/ on their include path.
#   public_headers_test.sh INCLUDE_ALCOP_DIR
set -euo pipefail
dir=$1
bad=0
for h in "$dir"/*.h; do
    while read -r inc; do
        case "$inc" in
        '"Halide.h"' | '"HalideBuffer.h"' | '"HalideRuntime.h"' | \<*\>) ;;
        '"alcop/'*'"')
            f=${inc#\"alcop/}
            [ -e "$dir/${f%\"}" ] || { echo "$h includes $inc, which is not public"; bad=1; } ;;
        *) echo "$h includes $inc, which is not public"; bad=1 ;;
        esac
    done < <(sed -n 's/^\s*#\s*include\s*\(["<][^">]*[">]\).*/\1/p' "$h")
done
n=$(ls "$dir"/*.h | wc -l)
[ "$bad" -eq 0 ] && echo "$n public headers include nothing internal"
exit $bad
