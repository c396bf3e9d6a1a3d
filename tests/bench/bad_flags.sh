#!/bin/bash
# usage: bad_flags.sh BENCH_DIR [SOURCE_DIR]
# Each bench program (and, given the source folder, each bench script), given a bad flag or
# value, must print one line on stderr that names what is wrong and exit with code 2, before
# doing any work.
dir=$1
src=${2:-}
fail=0
check() {  # PROGRAM EXPECTED_TEXT ARGS...
  local prog=$1 want=$2
  shift 2
  local err rc
  local run=("$dir/$prog")
  case $prog in
    *.sh) run=(bash "$src/bench/$prog") ;;
    *.py) run=(python3 "$src/bench/$prog") ;;
  esac
  err=$("${run[@]}" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] ||
    ! printf '%s' "$err" | grep -qF -- "$want"; then
    echo "FAIL: $prog $*: exit $rc, stderr: $err"
    fail=1
  fi
}
check replay_efficiency "--seeds" --seeds 3x
check replay_efficiency "--basin-gain" --basin-gain abc
check replay_efficiency "--trials" --trials 99999999999
check replay_efficiency "foo" --tuners xgb,foo
check replay_efficiency "--incumbent-share" --incumbent-share 1.5
check replay_efficiency "min_batch" --min-batch 0
check replay_efficiency "--bogus" --bogus
check replay_efficiency "--transfer-half" --transfer --transfer-half 0
check replay_efficiency "--seeds" --seeds
check tune_round "--records" --records 1e3x
check tune_round "--features" --features gpu
check tune_round "--nope" --nope 1
check check_cost "ELEMENTS" 0
check check_cost "MAX_THREADS" 100 abc
check check_cost "not expected" 1 1 1 1
check core_emulator "LAYOUT" 64,64,64 gemm_xx
check core_emulator "RUNS" 64,64,64 gemm_nn -1
check feature_speed "ONLY" 10 0.1 bogus
check feature_speed "SECONDS" 10 zero
check sanitizer_cost "RUNS" 2x
check prior_study "--log" --first 3
check prior_study "--first" --log x --first 0
check prior_study "--arch" --log x --arch sm_1
check prior_study "nonexistent" --log /nonexistent/log.jsonl
if [ -n "$src" ]; then
  check core_figures.sh "usage" --suite
  check scale_throughput.sh "usage" "$dir/.." abc
  check device/pack_device_build.sh "usage" /nonexistent/build
  check suite_transfer.py "seeds" "$dir/.." x
  check sass_mix.py "--bogus" --bogus
  check peer_compare/peer_compare.py "--seeds" kt --seeds x
  check gemm_peers.py "--shapes" --shapes 64,64
  check gemm_peers.py "--dtypes" --dtypes fp8
  check device/ncu_probe.py "needs -- CMD" list /tmp
fi
# --help is not an error.
"$dir/replay_efficiency" --help >/dev/null || { echo "FAIL: replay_efficiency --help"; fail=1; }
exit $fail
