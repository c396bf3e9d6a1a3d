#!/usr/bin/env bash
# The device check without a GPU: packs BUILD_DIR, runs `bash PACK/device_check.sh --dry-run`
# from an unrelated folder, and checks the $OUT rules: at most four files, exactly the names
# summary.md, summary.json, device_check.log, device_check.tgz; every step listed in
# summary.json, each but preflight "skipped: no CUDA device"; the pack under 40 MiB; nothing of
# the unpacked payload left behind; a tune step's figures read from a real tune --json.
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
echo "dry run ok: ${#steps[@]} steps, \$OUT = $files; plans breadth and bars listed"
