#!/usr/bin/env bash
# Packs a build for the device check on a GPU machine that has the driver, the CUDA toolkit and
# NVIDIA's Python wheels but no Debian packages and no network:
#   PACK/device_check.sh  run as `bash PACK/device_check.sh [ARGS]`: unpacks the payload into a
#                         temporary folder and runs the check there (bench/device/device_check_launch.sh)
#   PACK/manifest.txt     what is packed, and what was missing from the build
#   PACK/payload.tar.gz   cutune_pack/ holding
#     device_check.sh     the check itself (bench/device/device_check.sh)
#     plan_probe.sh       its probe plan (bench/device/plan_probe.sh)
#     python/             the probe's scripts: bench/gemm_peers.py (Triton and Inductor beside
#                         cuBLAS), bench/device/ncu_probe.py, bench/one_line_parser.py
#     bin/                cutune, the worker, the gpu tests, export_example (debug info stripped)
#     examples/           the T1 specs and kernels of examples/ (tune --spec, test_spec_gpu)
#     lib/                every shared library they need that is neither glibc's nor CUDA's
#                         (libxgboost, libdmlc, libfmt, libboost_context, libz, libstdc++, ...)
# CUDA libraries are not packed: cutune finds them on the machine (cutune doctor says where).
#
#   bench/device/pack_device_build.sh [BUILD_DIR] [PACK_DIR]       (defaults: build, device_pack)
#
# Fails when the pack is over 40 MiB (the device tool carries at most 64 MiB with the tree); the
# programs link the whole project statically and compress about threefold.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $# -gt 2 || ${1:-} == -* || ! -d ${1:-$root/build} ]]; then
  echo "pack_device_build.sh: usage: bench/device/pack_device_build.sh [BUILD_DIR] [PACK_DIR] (BUILD_DIR a folder)" >&2
  exit 2
fi
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/device_pack}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pack=$stage/cutune_pack
mkdir -p "$pack/bin" "$pack/lib"

programs=(src/cli/cutune tests/measure/cutune_test_worker tests/runtime/test_runtime_gpu
          tests/measure/test_gpu_measure tests/measure/test_worker_protocol
          tests/baselines/test_gpu_conv tests/runtime/test_tma_gpu tests/spec/test_spec_gpu
          bench/export_example bench/prior_study)
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
cp "$root/bench/device/device_check.sh" "$root/bench/device/plan_probe.sh" "$root/bench/device/plan_python.sh" "$pack/"
mkdir -p "$pack/python"
cp "$root/bench/gemm_peers.py" "$root/bench/device/ncu_probe.py" "$root/bench/one_line_parser.py" "$pack/python/"
cp -r "$root/examples" "$pack/examples"  # the user-kernel specs that tune --spec steps run
# The Python plan: the package, its loader's sources (built there, for that machine's Python),
# its tests and example, as a checkout lays them out.
py=$pack/python_pkg
mkdir -p "$py/src/export" "$py/include/nlohmann" "$py/tests" "$py/examples"
cp -r "$root/src/python" "$py/src/python"
find "$py/src/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$root/src/export/cubin_loader.h" "$py/src/export/"
cp /usr/include/nlohmann/json.hpp "$py/include/nlohmann/"
cp -r "$root/tests/python" "$py/tests/python"
find "$py/tests/python" -name __pycache__ -prune -exec rm -rf {} +
cp -r "$root/examples/python" "$py/examples/python"

tar -C "$stage" -czf "$out/payload.tar.gz" cutune_pack
cp "$pack/manifest.txt" "$out/manifest.txt"
cp "$root/bench/device/device_check_launch.sh" "$out/device_check.sh"

size=$(du -sm "$out" | cut -f1)
echo "pack: $out, ${size} MiB compressed ($(du -sm "$pack" | cut -f1) MiB unpacked): $(ls "$pack/bin" | tr '\n' ' ')"
if (( size > 40 )); then echo "pack: ${size} MiB is over the 40 MiB limit" >&2; exit 1; fi
