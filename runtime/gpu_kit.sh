#!/usr/bin/env bash
# Packs, for a GPU machine that cannot install packages (no network), what runtime/gpu_check.sh needs besides
# that machine's own compiler, CMake, Ninja, CUDA toolkit, NCCL and PyTorch: the headers, libraries, CMake and
# pkg-config files of DBench's Debian dependencies (SimGrid, Boost, Eigen, Spectra, fmt, CLI11, toml++, JSON,
# doctest, OpenBLAS, libjpeg, zlib), pkgconf, and the Fashion-MNIST files, as one archive. MPI is left out:
# the GPU checks run one worker, which needs no launcher. Run it on the Debian machine where ./setup.sh built
# build/ (the headers are those that build included), then carry the archive to the GPU machine;
# gpu_check.sh unpacks it when it finds it.
#
#   runtime/gpu_kit.sh [ARCHIVE]        (default: .gpu-kit/kit.tar.xz, ignored by git)
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
archive=$(realpath -m "${1:-$src/.gpu-kit/kit.tar.xz}")
build=${DBENCH_BUILD:-$src/build}
arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$arch
if [[ ! -f $build/build.ninja ]]; then
  echo "gpu_kit.sh: $build is not a Ninja build of DBench: run ./setup.sh first" >&2
  exit 2
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root

# copy PATH...: each file (a symbolic link as a link) or folder at its own path under the kit's root, merged
# with what is there.
copy() {
  local f
  for f in "$@"; do
    if [[ -d $f && ! -L $f ]]; then
      mkdir -p "$root$f"
      cp -a "$f/." "$root$f/"
    else
      mkdir -p "$root$(dirname "$f")"
      cp -a "$f" "$root$f"
    fi
  done
}

# copy_library LINK: a library and the chain of links that leads to it, each under its own name; a link that
# leaves $libdir (Debian's alternatives) becomes the file it points to.
copy_library() {
  local f=$1 target
  while [[ -L $f ]]; do
    target=$(readlink "$f")
    [[ $target == /* ]] || target=$(dirname "$f")/$target
    if [[ $target != "$libdir"/* ]]; then
      mkdir -p "$root$(dirname "$f")"
      cp -L "$f" "$root$f"
      return
    fi
    copy "$f"
    f=$target
  done
  copy "$f"
}

# 1. Headers: every header the build included that a package other than the C library, the kernel's, the
#    compiler's, LibTorch's or MPI's (the GPU machine has its own, or needs none) installed; whole folders of
#    the header-only libraries, whose other headers a newer compiler may pick.
skip='^(libc6-dev|linux-libc-dev|libtorch-dev|libopenmpi-dev|libgoogle-glog-dev|libgflags-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev)$'
ninja -C "$build" -t deps | awk '/^ /{print $1}' | grep '^/usr/include/' |
  grep -v -e '^/usr/include/c++/' -e "^/usr/include/$arch/c++/" | sort -u > "$stage/headers"
# dpkg -S prints "package[:arch][, package...]: path".
xargs dpkg -S < "$stage/headers" 2>/dev/null | while IFS= read -r line; do
  packages=${line%%: /*}
  path=${line#"$packages: "}
  keep=0
  for p in ${packages//,/ }; do
    p=${p%%:*}
    [[ $p =~ $skip ]] || keep=1
  done
  if [[ $keep == 1 ]]; then
    echo "$path"
  fi
done > "$stage/kept"
while IFS= read -r f; do copy "$f"; done < "$stage/kept"
for d in fmt CLI toml++ nlohmann doctest Spectra simgrid smpi xbt eigen3 boost/config; do
  if [[ -d /usr/include/$d ]]; then
    copy "/usr/include/$d"
  fi
done
copy /usr/include/xbt.h "/usr/include/$arch/openblas-pthread"

# 2. Libraries: those DBench links, each with its links, then every library they load (not the C library or
#    the C++ runtime: the GPU machine's newer ones serve).
for name in simgrid fmt tomlplusplus jpeg z openblas; do
  copy_library "$libdir/lib$name.so"
done
# A library is loaded by its SONAME: each copied under another name gets a link by that one.
find "$root$libdir" -maxdepth 1 -name '*.so*' -type f | while read -r lib; do
  soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  if [[ -n $soname && ! -e $root$libdir/$soname ]]; then
    ln -s "$(basename "$lib")" "$root$libdir/$soname"
  fi
done
runtime_skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so)'
# ldd lists what a library loads through the others too, so one pass takes the whole closure.
find "$root$libdir" -maxdepth 1 -name '*.so*' -type f | while read -r lib; do
  ldd "$lib" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r soname path; do
  if [[ ! $soname =~ $runtime_skip && ! -e $root$libdir/$soname ]]; then
    cp -L "$path" "$root$libdir/$soname"
  fi
done

# 3. How CMake and pkg-config find them (relative to their own place, so the kit works wherever unpacked).
copy "$libdir/cmake/Boost-1.74.0" "$libdir/cmake/boost_headers-1.74.0" "$libdir/cmake/BoostDetectToolset-1.74.0.cmake" \
  "$libdir/cmake/fmt" "$libdir/cmake/tomlplusplus" /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json \
  /usr/lib/cmake/doctest /usr/share/eigen3/cmake "$libdir/pkgconfig/simgrid.pc"
# A config that names its prefix outright (doctest's) finds it from its own place instead.
grep -rl 'set(_IMPORT_PREFIX "/usr")' "$root/usr" --include='*.cmake' | while read -r f; do
  up=$(realpath -m --relative-to="$(dirname "$f")" "$root/usr")
  sed -i "s|set(_IMPORT_PREFIX \"/usr\")|get_filename_component(_IMPORT_PREFIX \"\${CMAKE_CURRENT_LIST_DIR}/$up\" ABSOLUTE)|" "$f"
done
copy /usr/bin/pkgconf /usr/bin/pkg-config
copy_library "$libdir/libpkgconf.so.3"

# 4. The data set of the GPU checks.
copy /usr/share/datasets/fashion-mnist

mkdir -p "$(dirname "$archive")"
tar -C "$root" -cf - . | xz -T0 -6 > "$archive.tmp"
mv "$archive.tmp" "$archive"
echo "gpu_kit.sh: $(du -h "$archive" | cut -f1) in $archive ($(find "$root" -type f | wc -l) files)"
