#!/usr/bin/env bash
# Held-out caches for the search (bench/README.md §3, "Held-out caches"): the Kernel Tuner
# caches of the benchmark hub that ../shared/datasets does not hold (other GPUs of the same
# kernels, and pnpoly, a kernel the search was never tuned on). They are third-party data:
# this script copies them from a clone of the hub into a folder outside the repository; they
# never go into the project.
#
#   git clone https://github.com/AutoTuningAssociation/benchmark_hub /tmp/benchmark_hub
#   bench/peer_compare/heldout_caches.sh /tmp/benchmark_hub /tmp/heldout
#   ./build/bench/replay_efficiency --data /tmp/heldout --tuners xgb --seeds 20 --trials 200
#   bench/peer_compare/run.sh kt --data /tmp/heldout --results bench/peer_compare/results_heldout ...
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BENCHMARK_HUB_CLONE DEST" >&2
  exit 2
fi
src="$1"
dest="$2"
# The hub's commit of ../shared/datasets (its README).
commit=8eeb99e7179e6838af95d392ac6c60cebfd8c434
if ! git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "error: $src is not a clone of the benchmark hub holding commit $commit" >&2
  exit 2
fi
# DEST path <- path in the hub at that commit.
files=(
  "convolution_milo/A100.json.gz=cachefiles/convolution_milo/A100.json.gz"
  "convolution_milo/A6000.json.gz=cachefiles/convolution_milo/A6000.json.gz"
  "convolution_milo/MI250X.json.gz=cachefiles/convolution_milo/MI250X.json.gz"
  "dedispersion_milo/A100.json.gz=cachefiles/dedispersion_milo/A100.json.gz"
  "dedispersion_milo/A6000.json.gz=cachefiles/dedispersion_milo/A6000.json.gz"
  "dedispersion_milo/W7800.json.gz=cachefiles/dedispersion_milo/W7800.json.gz"
  "kt_convolution/RTX_Titan.json.gz=currently_unused/cachefiles/KernelTuner data/convolution/RTX_Titan.json.gz"
  "kt_gemm/RTX_Titan.json.gz=currently_unused/cachefiles/KernelTuner data/gemm/RTX_Titan.json.gz"
  "kt_pnpoly/RTX_2080_Ti.json.gz=currently_unused/cachefiles/KernelTuner data/pnpoly/RTX_2080_Ti.json.gz"
  "kt_pnpoly/RTX_3060_laptop.json.gz=currently_unused/cachefiles/KernelTuner data/pnpoly/RTX_3060_laptop.json.gz"
  "kt_pnpoly/RTX_3090.json.gz=currently_unused/cachefiles/KernelTuner data/pnpoly/RTX_3090.json.gz"
  "kt_pnpoly/RTX_Titan.json.gz=currently_unused/cachefiles/KernelTuner data/pnpoly/RTX_Titan.json.gz"
)
missing=0
for f in "${files[@]}"; do
  to="$dest/${f%%=*}"
  from="${f#*=}"
  mkdir -p "$(dirname "$to")"
  if ! git -C "$src" show "$commit:$from" >"$to" 2>/dev/null || [[ ! -s "$to" ]]; then
    echo "missing: $from" >&2
    rm -f "$to"
    missing=$((missing + 1))
  fi
done
echo "$(( ${#files[@]} - missing )) of ${#files[@]} caches in $dest"
[[ $missing -eq 0 ]]
