#!/bin/bash
# Reproduces the core figures of bench/README.core.md:
#   1. compile throughput and ptxas outcome mix for GEMM 1024^3, 100 sampled configurations,
#      with 1 and 2 NVRTC jobs;
#   2. the emulator's time for the reference configuration on 256^3;
#   3. (with --suite) the whole test suite's time with ctest -j2.
#
# usage: bench/core_figures.sh [BUILD_DIR] [--suite]     (BUILD_DIR defaults to build)
# Needs the targets cutune and core_emulator (and the tests for --suite) built in BUILD_DIR.

set -euo pipefail
build=${1:-build}
suite=${2:-}
cutune=$build/src/cli/cutune
sample=${CORE_SAMPLE:-100}
seed=${CORE_SEED:-1}

summarise() {
  python3 -c '
import json, sys
j = json.load(sys.stdin)
passed = j["sampled"] - j["rejected"]
print(f"  sampled {j[\"sampled\"]}, rejected by the verifier {j[\"rejected\"]}, "
      f"compiled {j[\"compiled\"]} ({100.0 * j[\"compiled\"] / max(passed, 1):.1f}% of verifier-passed), "
      f"failed {j[\"failed\"]}")
print(f"  {j[\"seconds\"]:.1f} s with {j[\"jobs\"]} job(s): {j[\"configs_per_second\"]:.2f} configs/s")
r = j["registers"]
print(f"  registers min {r[\"min\"]:.0f} / median {r[\"median\"]:.0f} / max {r[\"max\"]:.0f}; "
      f"histogram {r[\"histogram\"]}")
print(f"  spilled {j[\"spilled\"]}, exceed the register file at their block size {j[\"cannot_launch\"]}")
'
}

echo "== compile throughput, gemm_nn 1024x1024x1024, $sample configurations (seed $seed), sm_90"
for jobs in 1 2; do
  echo "-- $cutune compile gemm --shape 1024,1024,1024 --sample $sample --jobs $jobs --seed $seed --json"
  "$cutune" compile gemm --shape 1024,1024,1024 --sample "$sample" --jobs "$jobs" --seed "$seed" \
    --arch sm_90 --json | summarise
done

echo "== emulator, reference configuration on 256x256x256"
for layout in gemm_nn gemm_nt; do
  echo "-- $build/bench/core_emulator 256,256,256 $layout 2"
  "$build/bench/core_emulator" 256,256,256 "$layout" 2
done

if [[ $suite == --suite ]]; then
  echo "== test suite: ctest -j2 in $build (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
  start=$(date +%s.%N)
  ctest --test-dir "$build" -j2 --output-on-failure | tail -n 15 || true
  end=$(date +%s.%N)
  python3 -c "print(f'  wall {float($end) - float($start):.1f} s')"
fi
