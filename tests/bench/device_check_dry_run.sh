#!/usr/bin/env bash
# The device check without a GPU: packs BUILD_DIR, runs `bash PACK/device_check.sh --dry-run`
# from an unrelated folder, and checks the $OUT rules: at most four files, exactly the names
# summary.md, summary.json, device_check.log, device_check.tgz; every step listed in
# summary.json, each but preflight "skipped: no CUDA device"; the pack under 40 MiB; nothing of
# the unpacked payload left behind; a tune step's figures read from a real tune --json; the
# probe plan's steps and helpers.
set -euo pipefail
root=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$root/bench/device/pack_device_build.sh" "$build" "$tmp/pack" > "$tmp/pack.txt"
mkdir "$tmp/elsewhere"
mkdir "$tmp/tmpdir"
(cd "$tmp/elsewhere" && TMPDIR="$tmp/tmpdir" OUT="$tmp/out" bash "$tmp/pack/device_check.sh" --dry-run > "$tmp/run.txt" 2>&1) ||
  { cat "$tmp/run.txt"; echo "FAIL: the dry run exited non-zero"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

files=$(cd "$tmp/out" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ' -)
[[ "$files" == "device_check.log device_check.tgz summary.json summary.md" ]] ||
  fail "\$OUT holds '$files'"
steps=(preflight smoke_test_runtime_gpu test_tma_gpu gemm_1024_tune gemm_1024_bench gemm_1024_export
       gemm_fp16_wgmma_4096_tune gemm_fp16_wgmma_4096_bench spec_conv2d_tune spec_conv2d_bench spec_reduce_bench test_spec_gpu resnet18_suite resnet18_c2_bench resnet18_fp16_wgmma_suite gemm_bf16_wgmma_4096_tune gemm_bf16_wgmma_4096_bench
       gemm_fp16_wgmma_8192_tune gemm_fp16_wgmma_8192_bench gemm_fp16_wgmma_127x4096x255_tune
       gemm_fp16_wgmma_127x4096x255_bench gemm_fp16_wgmma_256x256x8192_tune
       gemm_fp16_wgmma_256x256x8192_bench gemm_fp16_4096_tune gemm_fp16_4096_bench gemm_4096_tune
       gemm_4096_bench gemm_2048x2048x64_tune gemm_2048x2048x64_bench gemm_127x4096x255_tune
       gemm_127x4096x255_bench test_gpu_measure test_worker_protocol test_gpu_conv)
summary="$tmp/out/summary.json"
for s in "${steps[@]}"; do
  line=$(grep "\"name\": \"$s\"" "$summary") || fail "step $s is not in summary.json"
  if [[ $s != preflight ]]; then
    grep -q '"status": "skipped: no CUDA device"' <<<"$line" || fail "step $s: $line"
  fi
  grep -q "| $s |" "$tmp/out/summary.md" || fail "step $s is not in summary.md"
done
(( $(grep -c '"name":' "$summary") == ${#steps[@]} )) || fail "summary.json lists other steps"
if command -v python3 > /dev/null; then
  env -u LD_LIBRARY_PATH python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$summary" ||
    fail "summary.json is not JSON"
fi
# The listing first: `tar | grep -q` under pipefail fails when grep exits before tar is done.
listing=$(tar tzf "$tmp/out/device_check.tgz") || fail "device_check.tgz does not read"
grep -q 'logs/doctor.json' <<<"$listing" || fail "the tarball lacks doctor.json"
grep -q '"libraries"' "$tmp/out/summary.json" && fail "summary.json should not inline doctor"
(( $(du -sm "$tmp/pack" | cut -f1) <= 40 )) || fail "the pack is over 40 MiB"
grep -q 'missing_from_pack": ""' "$summary" || fail "programs missing from the pack: $(grep -o 'missing_from_pack[^,]*' "$summary")"
ls -d "$tmp"/tmpdir/cutune_pack.* > /dev/null 2>&1 && fail "the unpacked payload was left in TMPDIR"
# The other plans go through their steps too.
for plan in breadth bars; do
  rm -rf "$tmp/out_$plan"
  (cd "$tmp/elsewhere" && TMPDIR="$tmp/tmpdir" OUT="$tmp/out_$plan" bash "$tmp/pack/device_check.sh" --dry-run \
     --plan "$plan" > "$tmp/run_$plan.txt" 2>&1) || { cat "$tmp/run_$plan.txt"; fail "--plan $plan exited non-zero"; }
  n=$(grep -c '"status": "skipped: no CUDA device"' "$tmp/out_$plan/summary.json")
  (( n >= 10 )) || fail "--plan $plan lists $n steps"
done
# The probe plan: every step listed and skipped, the same four files (the sample and the ncu
# reports come only from a GPU), and --sample-log only with it.
probe_steps=(preflight probe_gpu_state probe_bench_fp16_4096 probe_ncu_metrics probe_ncu_list probe_ncu_cublas
             probe_ncu_best1 probe_ncu_best2 probe_ncu_best3 probe_peers probe_bench_bf16_4096
             probe_bench_fp16_8192 probe_bench_bf16_8192 probe_bench_fp32_4096 probe_prior_on
             probe_prior_off probe_prior_random probe_sample probe_sample_cache probe_prior_study)
(cd "$tmp/elsewhere" && TMPDIR="$tmp/tmpdir" OUT="$tmp/out_probe" bash "$tmp/pack/device_check.sh" --dry-run \
   --plan probe > "$tmp/run_probe.txt" 2>&1) || { cat "$tmp/run_probe.txt"; fail "--plan probe exited non-zero"; }
files=$(cd "$tmp/out_probe" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ' -)
[[ "$files" == "device_check.log device_check.tgz summary.json summary.md" ]] || fail "--plan probe: \$OUT holds '$files'"
for s in "${probe_steps[@]}"; do
  line=$(grep "\"name\": \"$s\"" "$tmp/out_probe/summary.json") || fail "--plan probe: step $s is not in summary.json"
  [[ $s == preflight ]] || grep -q '"status": "skipped: no CUDA device"' <<<"$line" || fail "--plan probe: $line"
done
(( $(grep -c '"name":' "$tmp/out_probe/summary.json") == ${#probe_steps[@]} )) || fail "--plan probe lists other steps"
grep -q '"deadline_s": 450' "$tmp/out_probe/summary.json" || fail "--plan probe's default deadline is not 450 s"
rc=0
(cd "$tmp/elsewhere" && bash "$tmp/pack/device_check.sh" --sample-log "$tmp/pack.txt" > /dev/null 2>&1) || rc=$?
(( rc == 2 )) || fail "--sample-log without --plan probe exits $rc, not 2"
# The Python plan: its steps listed and skipped; the pack carries what it builds and runs.
(cd "$tmp/elsewhere" && TMPDIR="$tmp/tmpdir" OUT="$tmp/out_python" bash "$tmp/pack/device_check.sh" --dry-run \
   --plan python > "$tmp/run_python.txt" 2>&1) || { cat "$tmp/run_python.txt"; fail "--plan python exited non-zero"; }
for s in python_loader_build python_tests python_example; do
  grep -q "\"name\": \"$s\", \"status\": \"skipped: no CUDA device\"" "$tmp/out_python/summary.json" ||
    fail "--plan python: step $s is not listed as skipped"
done
packed=$(tar tzf "$tmp/pack/payload.tar.gz") || fail "the payload does not read"
for f in plan_python.sh python_pkg/src/python/CMakeLists.txt python_pkg/src/python/loader_module.cc \
         python_pkg/src/python/cutune/kernels.py python_pkg/src/export/cubin_loader.h \
         python_pkg/include/nlohmann/json.hpp python_pkg/tests/python/test_gpu.py \
         python_pkg/examples/python/tune_and_call.py; do
  grep -q "cutune_pack/$f" <<<"$packed" || fail "the pack lacks $f"
done
for f in plan_probe.sh python/gemm_peers.py python/ncu_probe.py python/one_line_parser.py; do
  grep -q "cutune_pack/$f" <<<"$packed" || fail "the pack lacks $f"
done
# The probe's helpers: the references of a template from `cutune space --json` (the fp32
# template's two at 256^3), and a script's figures line.
refs=$(bin="$build/src/cli" bash -c "program_path() { echo; }; $(sed -n '/^probe_references()/,/^}/p' "$root/bench/device/plan_probe.sh")
  probe_references gemm gemm_nn 256,256,256")
want=$("$build/src/cli/cutune" space gemm --shape 256,256,256 --json | python3 -c \
  'import json, sys; print(" ".join(str(r["index"]) for r in json.load(sys.stdin)["references"]))')
[[ -n $refs && $refs == "$want" ]] || fail "probe_references gives '$refs', space --json lists '$want'"
printf 'some output\nfigures: {"kernel": "nvjet_x", "grid": "(132, 1, 1)"}\n' > "$tmp/line.txt"
figures=$(bash -c "$(sed -n '/^plan_figures()/,/^}/p' "$root/bench/device/plan_probe.sh"); plan_figures line '$tmp/line.txt'")
[[ $figures == '{"kernel": "nvjet_x", "grid": "(132, 1, 1)"}' ]] || fail "a figures line reads as '$figures'"
# The sample step's path on the emulator: a random sample of the wgmma template logged by tune,
# written as a Kernel Tuner cache (`cutune cache`, gzipped, as the step does), replayed by
# tune --replay.
"$build/src/cli/cutune" tune gemm_fp16 --shape 128,128,64 --template gemm_fp16_wgmma_nt --device emulator \
  --tuner random --seed 50 --trials 3 --batch 3 --log "$tmp/sample.jsonl" --quiet --json > /dev/null 2>&1 ||
  fail "the emulator's random sample failed"
"$build/src/cli/cutune" cache "$tmp/sample.jsonl" --out "$tmp/sample.json" --force > /dev/null ||
  fail "cutune cache does not write the sample"
gzip -9 -c "$tmp/sample.json" > "$tmp/sample.json.gz"
"$build/src/cli/cutune" tune --replay "$tmp/sample.json.gz" --trials 3 --log "$tmp/replayed.jsonl" --quiet \
  > /dev/null 2>&1 || fail "tune --replay does not read the sample's cache"
# A tune step's figures from a real `tune --json` (the emulator's): the best time, the rate and
# where the wall time went (time_split_s), which the next GPU run's summary reports.
"$build/src/cli/cutune" tune gemm --shape 32,32,16 --device emulator --trials 4 --batch 4 \
  --log "$tmp/emulated.log" --json > "$tmp/tune.json" 2> /dev/null || fail "the emulator's tune failed"
figures=$(bash -c "$(sed -n '/^json_number()/,/^}/p;/^figures_of()/,/^}/p' "$root/bench/device/device_check.sh")
  figures_of tune '$tmp/tune.json' 16384")
for key in best_ms trials seconds trials_per_s measure_s propose_s; do
  grep -q "\"$key\": [0-9]" <<<"$figures" || fail "a tune step's figures lack $key: $figures"
done
# A suite step's figures: every layer's set-up seconds listed.
"$build/src/cli/cutune" tune-suite resnet18 --layers C8 --trials 2 --batch 2 --device emulator \
  --log "$tmp/suite.log" --quiet --json > "$tmp/suite.json" 2> /dev/null || fail "the emulator's suite failed"
figures=$(bash -c "$(sed -n '/^json_number()/,/^}/p;/^figures_of()/,/^}/p' "$root/bench/device/device_check.sh")
  figures_of suite '$tmp/suite.json'")
grep -q '"layer_setup_s": \[[0-9]' <<<"$figures" || fail "a suite step's figures lack layer_setup_s: $figures"
rc=0
(cd "$tmp/elsewhere" && bash "$tmp/pack/device_check.sh" --plan nonsense > /dev/null 2>&1) || rc=$?
(( rc == 2 )) || fail "an unknown plan exits $rc, not 2"
echo "dry run ok: ${#steps[@]} steps; plans breadth, bars and probe listed"
