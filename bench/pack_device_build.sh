#!/usr/bin/env bash
# Packs a build for the device check on a GPU machine that has the driver, the CUDA toolkit and
# NVIDIA's Python wheels but no Debian packages and no network:
#   PACK/device_check.sh  the check (bench/device_check.sh), run as `bash PACK/device_check.sh`
#   PACK/bin/             cutune, the worker, the gpu tests, export_example (debug info stripped)
#   PACK/examples/        the T1 specs and kernels of examples/ (tune --spec)
#   PACK/lib/             every shared library they need that is neither glibc's nor CUDA's
#                         (libxgboost, libdmlc, libfmt, libboost_context, libz, libstdc++, ...)
#   PACK/manifest.txt     what is packed, and what was missing from the build
# CUDA libraries are not packed: cutune finds them on the machine (cutune doctor says where).
#
#   bench/pack_device_build.sh [BUILD_DIR] [PACK_DIR]       (defaults: build, device_pack)
#
# Fails when the pack is over 30 MiB (the device tool carries at most 64 MiB with the tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
pack=${2:-$root/device_pack}
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib"
pack=$(cd "$pack" && pwd)

programs=(src/cli/cutune tests/measure/cutune_test_worker tests/runtime/test_runtime_gpu
          tests/measure/test_gpu_measure tests/measure/test_worker_protocol
          tests/baselines/test_gpu_conv bench/export_example)
{
  echo "# cutune device pack, built $(date -u +%FT%TZ) from $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  for p in "${programs[@]}"; do
    if [[ -x "$build/$p" ]]; then
      cp "$build/$p" "$pack/bin/"
      echo "bin $(basename "$p")"
    else
      echo "missing $p" ; echo "pack: $build/$p is not built (listed as missing)" >&2
    fi
  done
} > "$pack/manifest.txt"
strip --strip-debug "$pack"/bin/*
chmod +x "$pack"/bin/*

# From ldd: everything but glibc's own libraries and the CUDA ones (found on the machine).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libcuda\.so|libnvidia-ml|libnvrtc|libcudart|libcublas|libcupti|libcudnn)'
for b in "$pack"/bin/*; do
  ldd "$b" 2>/dev/null | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  cp -L "$path" "$pack/lib/$name"
  echo "lib $name" >> "$pack/manifest.txt"
done
strip --strip-unneeded "$pack"/lib/*.so* 2>/dev/null || true
cp "$root/bench/device_check.sh" "$pack/device_check.sh"
cp -r "$root/examples" "$pack/examples"  # the user-kernel specs that tune --spec steps run

size=$(du -sm "$pack" | cut -f1)
echo "pack: $pack, ${size} MiB: $(ls "$pack/bin" | tr '\n' ' ')"
if (( size > 30 )); then echo "pack: ${size} MiB is over the 30 MiB limit" >&2; exit 1; fi
