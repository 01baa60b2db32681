#!/usr/bin/env bash
# Installs what Halide-ALCOP needs from Debian 12, and nothing when all of it is there.
set -euo pipefail
packages=(cmake ninja-build g++ libhalide14-0-dev llvm-14-dev googletest libgtest-dev
          pocl-opencl-icd ocl-icd-opencl-dev
          gnuplot-nox)  # tools/plot.sh
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
