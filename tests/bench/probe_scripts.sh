#!/usr/bin/env bash
# The probe plan's Python scripts without a GPU: their self-tests (the interleaved timing and
# medians with a fake timer, the table of bench and peers outputs, ncu's listings and raw
# pages), and the peers script on a machine without torch, Triton or a CUDA device: one line
# saying what is missing, exit code 3 (the device check's "skipped"), no JSON written.
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 "$src/bench/gemm_peers.py" --self-test || fail "gemm_peers.py --self-test"
python3 "$src/bench/device/ncu_probe.py" --self-test || fail "ncu_probe.py --self-test"
out=$(python3 "$src/bench/gemm_peers.py" --shapes 64,64,64 --json "$tmp/peers.json" 2>&1)
rc=$?
(( rc == 3 )) || fail "gemm_peers.py without a GPU exits $rc: $out"
[[ $(wc -l <<<"$out") == 1 && $out == "gemm_peers.py: skipped: "* ]] || fail "gemm_peers.py without a GPU says '$out'"
[[ -e "$tmp/peers.json" ]] && fail "gemm_peers.py without a GPU wrote its JSON"
# The table of a missing peers file and no bench outputs is its header alone.
table=$(python3 "$src/bench/gemm_peers.py" --table "$tmp/absent.json") || fail "--table of nothing failed"
[[ $(wc -l <<<"$table") == 2 ]] || fail "--table of nothing: $table"
echo "probe scripts ok"
