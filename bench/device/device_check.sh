#!/usr/bin/env bash
# The device check: runs a packed build (bench/device/pack_device_build.sh) on a machine with
# one NVIDIA GPU, most valuable steps first, under one overall deadline, and brings back every
# figure.
#
#   bash PACK/device_check.sh [--dry-run] [--deadline SECONDS] [--plan full|breadth|bars|probe]
#                             [--only REGEX] [--sample-log LOG]
#   (--plan python: the Python package on the GPU machine's python3: plan_python.sh)
#
# --deadline: default 420 s (450 s with --plan probe). --plan full (default): the steps below
# with the trials the bars need;
# --plan breadth: every kind of step once with few trials and short caps, so that a first run on
# a new machine reaches every part (GEMM fp32/fp16 mma.sync/wgmma, export, spec kernels, both
# convolution suites, every gpu test) before the deadline; --plan bars: the issues' bars with
# the trials they need (1,000 trials of fp32 4096^3, all twelve ResNet-18 layers, ...);
# --plan probe: why the Hopper GEMMs trail cuBLAS (named configurations beside cuBLAS, ncu, the
# Triton and Inductor peers, a random sample of the wgmma space): plan_probe.sh beside this file,
# whose --sample-log continues the sample of an earlier call.
# --only REGEX: only the steps whose
# names match (extended regex), e.g. to rerun what failed.
#
# The pack is self-contained: this script, bin/ (programs, run bit set here) and lib/ (shared
# libraries a plain CUDA image lacks). lib/ is put on LD_LIBRARY_PATH for the packed programs
# only; the CUDA libraries are found by cutune's own search (cutune doctor shows where).
#
# Steps: preflight (cutune doctor, ldd of every packed program), the test_runtime_gpu smoke test
# (stops the check when it fails), test_tma_gpu, GEMM 1024^3 tune + bench and export round trip,
# fp16 GEMM 4096^3 on wgmma against cuBLAS, the conv2d
# example of examples/ (a user kernel from its T1 spec) tuned and benched, ResNet-18
# C2/C7/C8 against cuDNN (fp32, then fp16 on wgmma), bf16 4096^3, fp16 8192^3 and 127x4096x255 on wgmma, fp16 GEMM 4096^3
# on mma.sync against cuBLAS, fp32 GEMM 4096^3, the odd shapes
# 2048x2048x64 and 127x4096x255, then the fault-injection and remaining gpu tests. Each step's
# timeout is the smaller of its cap and what is left of the deadline.
#
# $OUT (default ./device_check_out) ends up holding at most four files (the probe plan adds
# three: plan_probe.sh), rewritten after every step, so that whatever is killed when, the last
# complete state is there:
#   summary.md, summary.json (steps: name, status, seconds, figures), device_check.log (the
#   step log), device_check.tgz (every step's output).
# --dry-run goes through every step as if there were no device ("skipped: no CUDA device");
# preflight runs either way, since it needs no GPU.
set -uo pipefail

pack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dry_run=0
deadline=""
plan=full
only=""
sample_log=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --deadline) deadline=${2:?--deadline needs seconds}; shift ;;
    --plan) plan=${2:?--plan needs full, breadth, bars, probe or python}; shift ;;
    --only) only=${2:?--only needs a regex}; shift ;;
    --sample-log) sample_log=${2:?--sample-log needs a tuning log}; shift ;;
    *) echo "device_check.sh: unknown argument '$1' (accepted: --dry-run, --deadline S, --plan full|breadth|bars|probe|python, --only REGEX, --sample-log LOG)" >&2; exit 2 ;;
  esac
  shift
done
if [[ $plan != full && $plan != breadth && $plan != bars && $plan != probe && $plan != python ]]; then
  echo "device_check.sh: unknown plan '$plan' (accepted: full, breadth, bars, probe, python)" >&2; exit 2
fi
[[ -z $deadline ]] && deadline=$([[ $plan == probe ]] && echo 450 || echo 420)
if [[ -n $sample_log && ( $plan != probe || ! -s $sample_log ) ]]; then
  echo "device_check.sh: --sample-log goes with --plan probe and names a tuning log ('$sample_log')" >&2; exit 2
fi
[[ -n $sample_log ]] && sample_log=$(cd "$(dirname "$sample_log")" && pwd)/$(basename "$sample_log")
if [[ ! -d "$pack/bin" ]]; then
  echo "device_check.sh: $pack has no bin/: run the copy inside a pack (bench/device/pack_device_build.sh)" >&2
  exit 2
fi
out=${OUT:-$PWD/device_check_out}
mkdir -p "$out" && out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/device_check.XXXXXX")
logs="$work/logs"
mkdir -p "$logs"
bin="$pack/bin"
chmod +x "$bin"/* 2>/dev/null
start=$(date +%s)
steps_file="$work/steps.tsv"   # name \t status \t seconds \t figures (JSON object text)
: > "$steps_file"

log() { echo "[$(( $(date +%s) - start ))s] $*" >> "$out/device_check.log"; echo "[$(( $(date +%s) - start ))s] $*"; }
remaining() { echo $(( deadline - ($(date +%s) - start) )); }

# Packed programs run with the pack's libraries (and the CUDA folders doctor found, for
# export_example, which links libcuda and libcublas); nothing else (no system tool) does.
cuda_dirs=""   # set from cutune doctor in preflight
program_path() { echo "$pack/lib${cuda_dirs:+:$cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }

json_string() {
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/ }
  s=${s//$'\r'/ }
  s=${s//$'\n'/ }
  printf '"%s"' "$s"
}

# The first number after "key": in a JSON file (pretty or not), or nothing.
json_number() {
  grep -o "\"$2\": *-\?[0-9][0-9.eE+-]*" "$1" 2>/dev/null | head -1 | sed 's/.*: *//'
}

write_summary() {
  local total=$(( $(date +%s) - start ))
  {
    printf '{\n  "deadline_s": %s,\n  "seconds": %s,\n  "dry_run": %s,\n  "pack": %s,\n  "steps": [' \
      "$deadline" "$total" "$([[ $dry_run == 1 ]] && echo true || echo false)" "$(json_string "$pack")"
    local first=1 name status seconds figures
    while IFS=$'\t' read -r name status seconds figures; do
      [[ $first == 1 ]] || printf ','
      first=0
      printf '\n    {"name": %s, "status": %s, "seconds": %s, "figures": %s}' \
        "$(json_string "$name")" "$(json_string "$status")" "$seconds" "${figures:-{\}}"
    done < "$steps_file"
    printf '\n  ]\n}\n'
  } > "$work/summary.json.tmp" && mv "$work/summary.json.tmp" "$out/summary.json"
  {
    echo "# cutune device check"
    echo
    echo "$total s of a $deadline s deadline$([[ $dry_run == 1 ]] && echo ' (dry run)')."
    echo
    echo "| step | status | seconds | figures |"
    echo "|---|---|---|---|"
    while IFS=$'\t' read -r name status seconds figures; do
      echo "| $name | $status | $seconds | $(sed 's/^{//; s/}$//; s/"//g' <<<"$figures") |"
    done < "$steps_file"
    # A plan's own section (the probe's table of peers).
    if [[ -s "$work/plan_summary.md" ]]; then echo; cat "$work/plan_summary.md"; fi
  } > "$work/summary.md.tmp" && mv "$work/summary.md.tmp" "$out/summary.md"
  cp "$out/device_check.log" "$logs/device_check.log" 2>/dev/null
  tar czf "$work/device_check.tgz.tmp" -C "$work" logs && mv "$work/device_check.tgz.tmp" "$out/device_check.tgz"
}

record() {  # name status seconds figures
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-{\}}" >> "$steps_file"
  log "$1: $2 (${3} s) ${4:-}"
  write_summary
}

# Figures each kind of step prints, as a JSON object.
figures_of() {  # kind file
  local kind=$1 file=$2
  case "$kind" in
    test)
      local passed failed total
      if grep -q "All tests passed" "$file"; then
        total=$(grep -o "in [0-9]* test case" "$file" | tail -1 | grep -o "[0-9]*")
        passed=$total failed=0
      else
        total=$(grep -o "^test cases: *[0-9]*" "$file" | tail -1 | grep -o "[0-9]*$")
        passed=$(grep -o "[0-9]* passed" "$file" | tail -1 | grep -o "^[0-9]*")
        failed=$(grep -o "[0-9]* failed" "$file" | tail -1 | grep -o "^[0-9]*")
      fi
      local skipped
      skipped=$(grep -c "SKIPPED\|skipped:" "$file")
      printf '{"test_cases": %s, "passed": %s, "failed": %s, "skip_lines": %s}' \
        "${total:-null}" "${passed:-null}" "${failed:-0}" "${skipped:-0}" ;;
    tune)
      local ms trials valid flops
      ms=$(json_number "$file" time_ms)
      trials=$(json_number "$file" trials)
      valid=$(json_number "$file" valid)
      flops=${3:-}
      local gflops=null
      [[ -n "$ms" && -n "$flops" ]] && gflops=$(awk -v f="$flops" -v t="$ms" 'BEGIN { printf "%.1f", f / (t * 1e-3) / 1e9 }')
      # Where the run's wall time went (time_split_s): trials/s, and what the GPU waited for.
      local seconds measure propose rate=null
      seconds=$(json_number "$file" seconds)
      measure=$(json_number "$file" measure)
      propose=$(json_number "$file" propose)
      [[ -n "$seconds" && -n "$trials" ]] && rate=$(awk -v n="$trials" -v s="$seconds" 'BEGIN { if (s > 0) printf "%.2f", n / s; else print "null" }')
      printf '{"best_ms": %s, "gflops": %s, "trials": %s, "valid": %s, "seconds": %s, "trials_per_s": %s, "measure_s": %s, "propose_s": %s}' \
        "${ms:-null}" "$gflops" "${trials:-null}" "${valid:-null}" "${seconds:-null}" "$rate" "${measure:-null}" "${propose:-null}" ;;
    bench)
      local ratio baseline tuned
      ratio=$(json_number "$file" ratio_to_baseline)
      # results[0] is the library, results[1] the tuned kernel.
      baseline=$(grep -o '"median_s": *[0-9.eE+-]*' "$file" | sed -n 1p | sed 's/.*: *//')
      tuned=$(grep -o '"median_s": *[0-9.eE+-]*' "$file" | sed -n 2p | sed 's/.*: *//')
      printf '{"library_median_s": %s, "cutune_median_s": %s, "ratio_to_library": %s}' \
        "${baseline:-null}" "${tuned:-null}" "${ratio:-null}" ;;
    configs)
      # bench --config: the library first, then each configuration, with its ratio.
      local medians ratios
      medians=$(grep -o '"median_s": *[0-9.eE+-]*' "$file" | sed 's/.*: *//' | paste -sd, -)
      ratios=$(grep -o '"ratio_to_baseline": *[0-9.eE+-]*' "$file" | sed 's/.*: *//' | paste -sd, -)
      printf '{"medians_s": [%s], "ratios_to_library": [%s]}' "$medians" "$ratios" ;;
    suite)
      local geo
      geo=$(json_number "$file" geomean_speedup)
      local layers
      layers=$(grep -o '"speedup": *[0-9.eE+-]*' "$file" | sed 's/.*: *//' | paste -sd, -)
      # Each layer's set-up before its tuning starts (worker, task, transfer model).
      local setups
      setups=$(grep -o '"setup_s": *[0-9.eE+-]*' "$file" | sed 's/.*: *//' | paste -sd, -)
      printf '{"geomean_speedup_over_cudnn": %s, "layer_speedups": [%s], "layer_setup_s": [%s]}' \
        "${geo:-null}" "$layers" "$setups" ;;
    spec_bench)
      # results[0] is the spec's reference configuration, results[1] the log's best.
      local reference best speedup
      reference=$(grep -o '"median_s": *[0-9.eE+-]*' "$file" | sed -n 1p | sed 's/.*: *//')
      best=$(grep -o '"median_s": *[0-9.eE+-]*' "$file" | sed -n 2p | sed 's/.*: *//')
      speedup=$(json_number "$file" speedup_over_reference)
      printf '{"reference_median_s": %s, "best_median_s": %s, "speedup_over_reference": %s}' \
        "${reference:-null}" "${best:-null}" "${speedup:-null}" ;;
    *) if declare -F plan_figures > /dev/null; then plan_figures "$kind" "$file"; else printf '{}'; fi ;;
  esac
}

device_ok=1   # cleared by preflight (no device) or --dry-run

# run_step NAME CAP KIND [FLOPS] -- COMMAND...: runs COMMAND under min(CAP, what is left).
run_step() {
  local name=$1 cap=$2 kind=$3 flops=""
  shift 3
  if [[ "$1" != "--" ]]; then flops=$1; shift; fi
  shift
  if [[ -n "$only" ]] && ! [[ $name =~ $only ]]; then return 1; fi
  if [[ $dry_run == 1 || $device_ok == 0 ]]; then record "$name" "skipped: no CUDA device" 0; return 1; fi
  # A packed program by path; a system tool (bash) from the PATH.
  if [[ "$1" == */* && ! -x "$1" ]] || [[ "$1" != */* ]] && ! command -v "$1" > /dev/null; then
    record "$name" "missing: $(basename "$1") not in the pack" 0; return 1
  fi
  local left t
  left=$(( $(remaining) - 10 ))   # 10 s kept for the last summary
  t=$(( cap < left ? cap : left ))
  if (( t < 5 )); then record "$name" "skipped: out of time" 0; return 1; fi
  log "$name: running (cap ${t} s): $(basename "$1") ${*:2}"
  local file="$logs/$name.txt" t0 rc
  t0=$(date +%s)
  timeout -k 5 "$t" env LD_LIBRARY_PATH="$(program_path)" "$@" > "$file" 2>&1
  rc=$?
  local seconds=$(( $(date +%s) - t0 )) status
  case $rc in
    0) status=ok ;;
    77) status="skipped: the program found no device (exit 77)" ;;
    3) status="skipped: $(grep -o 'skipped: .*' "$file" | tail -1 | cut -c10-200)" ;;  # a bench script's "cannot here"
    130) status="stopped at its time (SIGINT, exit 130)" ;;
    124|137) status="timeout after ${t} s" ;;
    *) status="failed (exit $rc): $(tail -1 "$file" | cut -c1-200)" ;;
  esac
  record "$name" "$status" "$seconds" "$(figures_of "$kind" "$file" "$flops")"
  [[ $rc == 0 ]]
}

log "device check from $pack into $out (deadline ${deadline} s$([[ $dry_run == 1 ]] && echo ', dry run'))"

# Preflight: needs no GPU, so it runs in a dry run too. It informs; the smoke test is the gate.
t0=$(date +%s)
pre="$logs/preflight.txt"
timeout -k 2 20 env LD_LIBRARY_PATH="$(program_path)" "$bin/cutune" doctor --json > "$logs/doctor.json" 2> "$pre"
doctor_rc=$?
# export_example links libcuda and libcublas directly: it gets the folders doctor found them in.
cuda_dirs=$(grep -o '"path": *"[^"]*"' "$logs/doctor.json" 2>/dev/null | sed 's/.*: *"//; s/"$//' |
  xargs -r -n1 dirname | sort -u | paste -sd: -)
{
  echo "== cutune doctor"; timeout -k 2 20 env LD_LIBRARY_PATH="$(program_path)" "$bin/cutune" doctor 2>&1
  echo "== ldd (LD_LIBRARY_PATH=$(program_path))"
  for b in "$bin"/*; do echo "-- $b"; LD_LIBRARY_PATH="$(program_path)" ldd "$b" 2>&1; done
  echo "== nvidia-smi"; timeout 10 nvidia-smi 2>&1 || true
} >> "$pre"
devices=$(tr -d ' \n' < "$logs/doctor.json" | grep -o '"devices":\[[^]]*\]' | grep -o '"ordinal"' | wc -l)
not_found=$(for b in "$bin"/*; do LD_LIBRARY_PATH="$(program_path)" ldd "$b" 2>&1 | awk -v b="$(basename "$b")" '/not found/ {print b ": " $1}'; done | paste -sd, - | sed 's/,/, /g')
missing_libs=$(tr -d '\n' < "$logs/doctor.json" | grep -o '"missing": *\[[^]]*\]' | sed 's/"missing": *//; s/  */ /g')
missing_tests=""
for t in test_runtime_gpu test_tma_gpu test_spec_gpu test_gpu_measure test_worker_protocol test_gpu_conv cutune_test_worker export_example; do
  [[ -x "$bin/$t" ]] || missing_tests+="${missing_tests:+, }$t"
done
status=ok
[[ -n "$not_found" ]] && status="failed: ldd finds no $not_found"
[[ $doctor_rc != 0 ]] && status="failed: cutune doctor exit $doctor_rc"
[[ -n "$missing_tests" ]] && log "not in the pack (logged as missing): $missing_tests"
record preflight "$status" $(( $(date +%s) - t0 )) \
  "{\"devices\": $devices, \"ldd_not_found\": $(json_string "$not_found"), \"missing_libraries\": ${missing_libs:-null}, \"missing_from_pack\": $(json_string "$missing_tests")}"
(( devices == 0 )) && device_ok=0

# The gpu tests find their worker and the export example through these.
export CUTUNE_TEST_WORKER="$bin/cutune_test_worker" CUTUNE_EXPORT_EXAMPLE="$bin/export_example"
export CUTUNE_EXAMPLES_DIR="$pack/examples"

plan_full() {
  # A failed smoke test does not stop the check: on a first run every step's own error is worth more
  # than the time a broken step costs (each is capped).
  run_step smoke_test_runtime_gpu 60 test -- "$bin/test_runtime_gpu"

  # TMA and mbarrier on the hardware: driver-encoded tensor maps, swizzled tiles, a TMA ring,
  # against the emulator's outputs (the wgmma templates' TMA loads rest on these).
  run_step test_tma_gpu 30 test -- "$bin/test_tma_gpu"

  run_step gemm_1024_tune 75 tune $((2 * 1024 * 1024 * 1024)) -- "$bin/cutune" tune gemm --shape 1024,1024,1024 \
    --trials 200 --log "$logs/gemm_1024.log" --quiet --json
  run_step gemm_1024_bench 25 bench -- "$bin/cutune" bench gemm --shape 1024,1024,1024 --log "$logs/gemm_1024.log" --json
  run_step gemm_1024_export 20 other -- bash -c "'$bin/cutune' export '$logs/gemm_1024.log' --out '$logs/export' && '$bin/export_example' '$logs/export'"

  # Hopper warpgroup MMA (issue 12): fp16 GEMM 4096^3 on wgmma (B column-major, as cuBLAS's TN
  # GEMM) tuned and timed against cuBLAS with the same types.
  run_step gemm_fp16_wgmma_4096_tune 60 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm_fp16 \
    --shape 4096,4096,4096 --template gemm_fp16_wgmma_nt --trials 60 --log "$logs/gemm_fp16_wgmma_4096.log" --quiet --json
  run_step gemm_fp16_wgmma_4096_bench 25 bench -- "$bin/cutune" bench gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_wgmma_nt --log "$logs/gemm_fp16_wgmma_4096.log" --json

  # User kernels from T1 specs (examples/, packed beside bin/): the conv2d example tuned on the GPU
  # (constant memory, scalars, the reference configuration's output as the reference), then its
  # reference and best configurations timed by bench --spec, and the reduction example's reference
  # configuration (scalars, dynamic shared memory, atomics) checked and timed; then test_spec_gpu
  # (sampled configurations of both examples against their references, a planted wrong answer).
  run_step spec_conv2d_tune 60 tune $((2 * 4096 * 4096 * 49)) -- "$bin/cutune" tune \
    --spec "$pack/examples/conv2d/conv2d.json" --trials 64 --log "$logs/spec_conv2d.log" --quiet --json
  run_step spec_conv2d_bench 25 spec_bench -- "$bin/cutune" bench --spec "$pack/examples/conv2d/conv2d.json" \
    --log "$logs/spec_conv2d.log" --json
  run_step spec_reduce_bench 25 spec_bench -- "$bin/cutune" bench --spec "$pack/examples/reduction/reduce.json" \
    --config 0 --json
  run_step test_spec_gpu 60 test -- "$bin/test_spec_gpu"

  run_step resnet18_suite 120 suite -- "$bin/cutune" tune-suite resnet18 --layers C2,C7,C8 --trials 60 \
    --log "$logs/resnet18.log" --quiet --json
  run_step resnet18_c2_bench 25 bench -- "$bin/cutune" bench conv2d --shape 1,64,56,56,64,3,3,1,1,1 \
    --log "$logs/resnet18.log" --json

  # Issue 12's convolution bar: ResNet-18 layers in fp16 NHWC on the wgmma implicit GEMM against
  # cuDNN fp16 (the suite's geometric mean).
  run_step resnet18_fp16_wgmma_suite 90 suite -- "$bin/cutune" tune-suite resnet18 --layers C2,C7,C8 \
    --dtype fp16 --template conv2d_fp16_wgmma_nhwc --trials 40 --log "$logs/resnet18_fp16_wgmma.log" --quiet --json

  # The rest of issue 12's GEMM bars: bf16 at 4096^3, fp16 at 8192^3, and an odd shape. The
  # bf16 search and the 8192^3 one learn from the fp16 4096^3 log where that step left one (the
  # bf16 template has the fp16 one's IR features; cuBLAS runs both types at one speed).
  local fp16_log="$logs/gemm_fp16_wgmma_4096.log" from_fp16=()
  [[ $(grep -c '"status":"ok"' "$fp16_log" 2>/dev/null) -ge 2 ]] && from_fp16=(--transfer-from "$fp16_log")
  run_step gemm_bf16_wgmma_4096_tune 45 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm_bf16 \
    --shape 4096,4096,4096 --template gemm_bf16_wgmma_nt --trials 40 --log "$logs/gemm_bf16_wgmma_4096.log" --quiet --json \
    "${from_fp16[@]}"
  run_step gemm_bf16_wgmma_4096_bench 25 bench -- "$bin/cutune" bench gemm_bf16 --shape 4096,4096,4096 \
    --template gemm_bf16_wgmma_nt --log "$logs/gemm_bf16_wgmma_4096.log" --json
  run_step gemm_fp16_wgmma_8192_tune 45 tune $((2 * 8192 * 8192 * 8192)) -- "$bin/cutune" tune gemm_fp16 \
    --shape 8192,8192,8192 --template gemm_fp16_wgmma_nt --trials 30 --log "$logs/gemm_fp16_wgmma_8192.log" --quiet --json \
    "${from_fp16[@]}"
  run_step gemm_fp16_wgmma_8192_bench 30 bench -- "$bin/cutune" bench gemm_fp16 --shape 8192,8192,8192 \
    --template gemm_fp16_wgmma_nt --log "$logs/gemm_fp16_wgmma_8192.log" --json
  run_step gemm_fp16_wgmma_127x4096x255_tune 30 tune $((2 * 127 * 4096 * 255)) -- "$bin/cutune" tune gemm_fp16 \
    --shape 127,4096,255 --template gemm_fp16_wgmma_nt --trials 60 --log "$logs/gemm_fp16_wgmma_odd.log" --quiet --json
  run_step gemm_fp16_wgmma_127x4096x255_bench 20 bench -- "$bin/cutune" bench gemm_fp16 --shape 127,4096,255 \
    --template gemm_fp16_wgmma_nt --log "$logs/gemm_fp16_wgmma_odd.log" --json
  # Few output tiles and a long K: the split-K reference (16 splits, split_k_wide) seeds it.
  run_step gemm_fp16_wgmma_256x256x8192_tune 30 tune $((2 * 256 * 256 * 8192)) -- "$bin/cutune" tune gemm_fp16 \
    --shape 256,256,8192 --template gemm_fp16_wgmma_nn --trials 30 --log "$logs/gemm_fp16_wgmma_splitk.log" --quiet --json
  run_step gemm_fp16_wgmma_256x256x8192_bench 20 bench -- "$bin/cutune" bench gemm_fp16 --shape 256,256,8192 \
    --template gemm_fp16_wgmma_nn --log "$logs/gemm_fp16_wgmma_splitk.log" --json

  run_step gemm_fp16_4096_tune 60 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_nn --trials 100 --log "$logs/gemm_fp16_4096.log" --quiet --json
  run_step gemm_fp16_4096_bench 25 bench -- "$bin/cutune" bench gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_nn --log "$logs/gemm_fp16_4096.log" --json

  run_step gemm_4096_tune 90 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm --shape 4096,4096,4096 \
    --trials 150 --log "$logs/gemm_4096.log" --quiet --json
  run_step gemm_4096_bench 25 bench -- "$bin/cutune" bench gemm --shape 4096,4096,4096 --log "$logs/gemm_4096.log" --json
  for shape in 2048,2048,64 127,4096,255; do
    IFS=, read -r m n k <<<"$shape"
    name=gemm_${m}x${n}x${k}
    run_step "${name}_tune" 45 tune $((2 * m * n * k)) -- "$bin/cutune" tune gemm --shape "$shape" --trials 100 \
      --log "$logs/$name.log" --quiet --json
    run_step "${name}_bench" 20 bench -- "$bin/cutune" bench gemm --shape "$shape" --log "$logs/$name.log" --json
  done

  run_step test_gpu_measure 90 test -- "$bin/test_gpu_measure"
  run_step test_worker_protocol 30 test -- "$bin/test_worker_protocol"
  run_step test_gpu_conv 90 test -- "$bin/test_gpu_conv"
}

# Every kind of step once, few trials, short caps (about 6 minutes when everything works).
plan_breadth() {
  run_step smoke_test_runtime_gpu 45 test -- "$bin/test_runtime_gpu"
  run_step gemm_1024_tune 40 tune $((2 * 1024 * 1024 * 1024)) -- "$bin/cutune" tune gemm --shape 1024,1024,1024 \
    --trials 64 --log "$logs/gemm_1024.log" --quiet --json
  run_step gemm_1024_bench 15 bench -- "$bin/cutune" bench gemm --shape 1024,1024,1024 --log "$logs/gemm_1024.log" \
    --seconds 1 --json
  run_step gemm_1024_export 15 other -- bash -c "'$bin/cutune' export '$logs/gemm_1024.log' --out '$logs/export' && '$bin/export_example' '$logs/export'"
  run_step test_tma_gpu 20 test -- "$bin/test_tma_gpu"
  run_step gemm_fp16_wgmma_4096_tune 40 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm_fp16 \
    --shape 4096,4096,4096 --template gemm_fp16_wgmma_nt --trials 24 --log "$logs/gemm_fp16_wgmma_4096.log" --quiet --json
  run_step gemm_fp16_wgmma_4096_bench 15 bench -- "$bin/cutune" bench gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_wgmma_nt --log "$logs/gemm_fp16_wgmma_4096.log" --seconds 1 --json
  run_step gemm_fp16_wgmma_4096_export 15 other -- bash -c "'$bin/cutune' export '$logs/gemm_fp16_wgmma_4096.log' --out '$logs/export_wgmma' && '$bin/export_example' '$logs/export_wgmma'"
  run_step gemm_fp16_4096_tune 30 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_nn --trials 24 --log "$logs/gemm_fp16_4096.log" --quiet --json
  run_step gemm_fp16_4096_bench 15 bench -- "$bin/cutune" bench gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_nn --log "$logs/gemm_fp16_4096.log" --seconds 1 --json
  run_step test_gpu_measure 60 test -- "$bin/test_gpu_measure"
  run_step spec_conv2d_tune 30 tune $((2 * 4096 * 4096 * 49)) -- "$bin/cutune" tune \
    --spec "$pack/examples/conv2d/conv2d.json" --trials 24 --log "$logs/spec_conv2d.log" --quiet --json
  run_step spec_conv2d_bench 15 spec_bench -- "$bin/cutune" bench --spec "$pack/examples/conv2d/conv2d.json" \
    --log "$logs/spec_conv2d.log" --seconds 1 --json
  run_step spec_reduce_bench 15 spec_bench -- "$bin/cutune" bench --spec "$pack/examples/reduction/reduce.json" \
    --config 0 --seconds 1 --json
  run_step resnet18_suite 40 suite -- "$bin/cutune" tune-suite resnet18 --layers C2,C7 --trials 24 \
    --log "$logs/resnet18.log" --quiet --json
  run_step resnet18_fp16_wgmma_suite 40 suite -- "$bin/cutune" tune-suite resnet18 --layers C2,C7 \
    --dtype fp16 --template conv2d_fp16_wgmma_nhwc --trials 24 --log "$logs/resnet18_fp16_wgmma.log" --quiet --json
  run_step test_worker_protocol 25 test -- "$bin/test_worker_protocol"
  run_step test_gpu_conv 60 test -- "$bin/test_gpu_conv"
  run_step test_spec_gpu 40 test -- "$bin/test_spec_gpu"
}

# The bars of issues 4/9, 5 and 12 with the trials they need, most valuable first, for a session
# whose breadth run has passed (about 10 minutes when everything runs to its cap: give it
# --deadline 560 and a 600 s call). The gpu tests whose code was not yet run on a GPU first.
plan_bars() {
  run_step test_gpu_conv 60 test -- "$bin/test_gpu_conv"
  run_step test_gpu_measure 55 test -- "$bin/test_gpu_measure"
  # One measurer and one worker backend for templates and specs (issue 49): a user kernel's
  # scalars, constant memory and reference kernel on the backend the templates use.
  run_step test_spec_gpu 40 test -- "$bin/test_spec_gpu"
  # Early, since it needs no search: Hopper tiles side by side, beside cuBLAS: 128x128 and
  # 128x256 (TMA + producer), the large one also with mma_pipe and with 4 tiles a block (one
  # wave of 128 blocks at 4096^3); 128x128 with 8 tiles a block (128 blocks), the warpgroups
  # splitting each tile or in ping-pong.
  local common='"block_k":64,"stages":4,"warpgroups":2,"swizzle":128,"copy_bytes":16,"raster_group":8,"split_k":1,"loads":1,"producer":1'
  run_step gemm_fp16_wgmma_4096_tiles 55 configs -- "$bin/cutune" bench gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_wgmma_nt --rounds 3 --seconds 3 --json --config \
    "{\"knobs\":{\"block_m\":128,\"block_n\":128,\"epilogue\":2,$common}}" \
    "{\"knobs\":{\"block_m\":128,\"block_n\":256,\"epilogue\":1,$common}}" \
    "{\"knobs\":{\"block_m\":128,\"block_n\":256,\"epilogue\":1,\"mma_pipe\":1,$common}}" \
    "{\"knobs\":{\"block_m\":128,\"block_n\":256,\"epilogue\":1,\"mma_pipe\":1,\"tiles_per_block\":4,$common}}" \
    "{\"knobs\":{\"block_m\":128,\"block_n\":128,\"epilogue\":1,\"mma_pipe\":1,\"tiles_per_block\":8,$common}}" \
    "{\"knobs\":{\"block_m\":128,\"block_n\":128,\"epilogue\":1,\"mma_pipe\":1,\"tiles_per_block\":8,\"pingpong\":1,$common}}"
  # Issue 4's rate bar (1,000 trials of 4096^3 in under 2 minutes) and its 90%-of-cuBLAS bar.
  run_step gemm_4096_1000_tune 150 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm \
    --shape 4096,4096,4096 --trials 1000 --log "$logs/gemm_4096_1000.log" --quiet --json
  run_step gemm_4096_1000_bench 20 bench -- "$bin/cutune" bench gemm --shape 4096,4096,4096 \
    --log "$logs/gemm_4096_1000.log" --json
  run_step gemm_127x4096x255_tune 40 tune $((2 * 127 * 4096 * 255)) -- "$bin/cutune" tune gemm \
    --shape 127,4096,255 --trials 200 --log "$logs/gemm_127x4096x255.log" --quiet --json
  run_step gemm_127x4096x255_bench 15 bench -- "$bin/cutune" bench gemm --shape 127,4096,255 \
    --log "$logs/gemm_127x4096x255.log" --json
  # Issue 5's bar: all twelve ResNet-18 layers, fp32, against cuDNN.
  run_step resnet18_all_suite 200 suite -- "$bin/cutune" tune-suite resnet18 --trials 100 \
    --log "$logs/resnet18_all.log" --quiet --json
  # Issue 12: wgmma GEMM with more trials, and the fp16 convolutions on all twelve layers.
  run_step gemm_fp16_wgmma_4096_tune 60 tune $((2 * 4096 * 4096 * 4096)) -- "$bin/cutune" tune gemm_fp16 \
    --shape 4096,4096,4096 --template gemm_fp16_wgmma_nt --trials 200 --log "$logs/gemm_fp16_wgmma_4096.log" --quiet --json
  run_step gemm_fp16_wgmma_4096_bench 15 bench -- "$bin/cutune" bench gemm_fp16 --shape 4096,4096,4096 \
    --template gemm_fp16_wgmma_nt --log "$logs/gemm_fp16_wgmma_4096.log" --json
  # The tuned wgmma kernel (TMA loads: tensor maps; split-K: a zeroed C) outside cutune.
  run_step gemm_fp16_wgmma_4096_export 15 other -- bash -c "'$bin/cutune' export '$logs/gemm_fp16_wgmma_4096.log' --out '$logs/export_wgmma' && '$bin/export_example' '$logs/export_wgmma'"
  run_step resnet18_fp16_wgmma_all_suite 150 suite -- "$bin/cutune" tune-suite resnet18 --dtype fp16 \
    --template conv2d_fp16_wgmma_nhwc --trials 60 --log "$logs/resnet18_fp16_wgmma_all.log" --quiet --json
}

case $plan in
  breadth) plan_breadth ;;
  bars) plan_bars ;;
  probe)
    # shellcheck source=plan_probe.sh
    source "$pack/plan_probe.sh" && plan_probe ;;
  python)
    # shellcheck source=plan_python.sh
    source "$pack/plan_python.sh" && plan_python ;;
  *) plan_full ;;
esac

log "done in $(( $(date +%s) - start )) s"
write_summary
rm -rf "$work"
