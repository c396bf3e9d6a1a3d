#!/usr/bin/env bash
# Packs a build for a GPU machine that has the CUDA toolkit, cmake and ninja but no Debian
# packages and no network: the cutune binary, the gpu test binaries and the worker, plus every
# shared library they need that is neither part of the CUDA toolkit (found there at run time) nor
# of glibc. libstdc++, libgcc_s and libgomp are included to be safe.
#
#   bench/pack_device_build.sh [BUILD_DIR] [PACK_DIR]    (defaults: build-gpu, device_pack)
#
# The pack holds bin/ (the programs), lib/ (the libraries) and env.sh, which device_check.sh
# sources: LD_LIBRARY_PATH=lib plus the toolkit's lib folders.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
pack=${2:-$root/device_pack}
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib"

programs=(src/cli/cutune tests/gpu/cutune_test_worker tests/gpu/test_gpu_measure
          tests/gpu/test_worker_protocol tests/runtime/test_runtime_gpu bench/export_example)
for p in "${programs[@]}"; do
  if [[ -x "$build/$p" ]]; then cp "$build/$p" "$pack/bin/"; else echo "pack: missing $build/$p (skipped)" >&2; fi
done
strip --strip-debug "$pack"/bin/* 2>/dev/null || true

# Libraries from ldd, minus glibc's own and the CUDA toolkit's (and libcuda, the driver's).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libcuda\.so|libnvidia-ml)'
for b in "$pack"/bin/*; do
  ldd "$b" 2>/dev/null | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $skip || "$path" == /usr/local/cuda* ]]; then continue; fi
  cp -L "$path" "$pack/lib/$name"
done
for extra in libstdc++.so.6 libgcc_s.so.1 libgomp.so.1; do
  p=$(ldconfig -p | awk -v n="$extra" '$1 == n && /x86-64/ {print $NF; exit}')
  if [[ -n "$p" && ! -e "$pack/lib/$extra" ]]; then cp -L "$p" "$pack/lib/$extra"; fi
done
strip --strip-unneeded "$pack"/lib/*.so* 2>/dev/null || true

cat > "$pack/env.sh" <<'ENV'
# Sourced by bench/device_check.sh: the packed libraries first, then the toolkit's.
pack_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH="$pack_dir/lib:$cuda/lib64:$cuda/lib:$cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$pack_dir/bin:$PATH"
ENV
du -sh "$pack"
ls "$pack/bin" "$pack/lib"
