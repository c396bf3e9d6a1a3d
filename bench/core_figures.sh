#!/bin/bash
# Reproduces the core figures of bench/README.md section 6:
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
if [[ $# -gt 2 || ( -n $suite && $suite != --suite ) || $build == -* ]]; then
  echo "core_figures.sh: usage: bench/core_figures.sh [BUILD_DIR] [--suite]" >&2
  exit 2
fi
[[ -d $build ]] || { echo "core_figures.sh: no build folder $build" >&2; exit 2; }
cutune=$build/src/cli/cutune
sample=${CORE_SAMPLE:-100}
seed=${CORE_SEED:-1}

summarise() {
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
passed = j["sampled"] - j["rejected"]
share = 100.0 * j["compiled"] / max(passed, 1)
print("  sampled %d, rejected by the verifier %d, compiled %d (%.1f%% of verifier-passed), failed %d"
      % (j["sampled"], j["rejected"], j["compiled"], share, j["failed"]))
print("  %.1f s with %d job(s): %.2f configs/s" % (j["seconds"], j["jobs"], j["configs_per_second"]))
r = j["registers"]
print("  registers min %.0f / median %.0f / max %.0f; histogram %s"
      % (r["min"], r["median"], r["max"], json.dumps(r["histogram"])))
print("  spilled %d; exceed the register file at their block size %d"
      % (j["spilled"], j["cannot_launch"]))
PY
}

echo "== compile throughput, gemm_nn 1024x1024x1024, $sample configurations (seed $seed), sm_90"
for jobs in 1 2; do
  echo "-- $cutune compile gemm --shape 1024,1024,1024 --sample $sample --jobs $jobs --seed $seed --json"
  json=$(mktemp)
  echo "   (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
  # CPU time next to wall time: on a shared machine the wall-clock rate says more about the
  # other load than about NVRTC.
  TIMEFORMAT='   process: wall %R s, user %U s, sys %S s'
  time "$cutune" compile gemm --shape 1024,1024,1024 --sample "$sample" --jobs "$jobs" \
    --seed "$seed" --arch sm_90 --json > "$json"
  summarise "$json"
  rm -f "$json"
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
