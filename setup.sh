#!/usr/bin/env bash
# Installs the Debian packages DBench needs (only the missing ones, so re-running is cheap), then configures
# and builds. Usage: ./setup.sh [--asan] [--slurm] [--no-build] [--build-dir DIR]
#   --asan        also build build-asan/: AddressSanitizer + UBSan, the parts that do not link LibTorch
#   --slurm       also install Slurm (slurmctld, slurmd, srun) and munge for the cluster test, tests/slurm
#   --no-build    install packages only
set -euo pipefail
cd "$(dirname "$0")"

build_dir=build
asan=0
slurm=0
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --asan) asan=1 ;;
    --slurm) slurm=1 ;;
    --no-build) build=0 ;;
    --build-dir) build_dir="$2"; shift ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libsimgrid-dev                      # network and compute model of the simulator
  libtorch-dev libopenblas-dev libopenblas0-pthread  # models; OpenBLAS instead of the 10x slower reference BLAS
  zlib1g-dev                          # reads the gzipped IDX data sets
  libjpeg-dev                         # decodes ImageNet-style JPEG folders
  libopenmpi-dev openmpi-bin          # real workers and CPU transport
  libboost-graph-dev libeigen3-dev libspectra-dev    # graph algorithms and spectra
  libfmt-dev doctest-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
  gnuplot-nox                         # plots in reports
  chromium                            # headless browser of the report render test (tests/experiments/test_report.cpp)
  dataset-fashion-mnist               # the real data set of the quickstart and the tests
)
if [ "$slurm" = 1 ]; then
  # The cluster test starts its own one-node Slurm from these (it configures and stops them itself).
  packages+=(slurmctld slurmd slurm-client munge python3)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup.sh: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "$build" = 1 ] || exit 0

jobs=$(nproc)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"
if [ "$asan" = 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBENCH_SANITIZE=ON -DDBENCH_BUILD_BENCH=OFF -DDBENCH_WITH_CUDA=OFF
  cmake --build build-asan -j "$jobs"
fi
