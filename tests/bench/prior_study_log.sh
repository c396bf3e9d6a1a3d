#!/bin/bash
# usage: prior_study_log.sh BUILD_DIR
# bench/prior_study on a real tuning log: a few emulated trials of a small GEMM (their times
# are emulator wall times, so only the figures' presence and ranges are checked, not the
# prior's quality), in text and as JSON.
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/src/cli/cutune" tune gemm --shape 48,40,24 --device emulator --trials 6 --batch 6 \
  --log "$work/log.jsonl" --quiet > /dev/null
"$build/bench/prior_study" --log "$work/log.jsonl" --first 3 --shuffles 50 | grep -q "^prior "
"$build/bench/prior_study" --log "$work/log.jsonl" --first 3 --shuffles 50 --json > "$work/out.json"
python3 - "$work/out.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["template"] == "gemm_nn" and o["sample"] == 6 and o["first"] == 3, o
for order in ("prior", "default", "random"):
    f = o[order]
    assert 0 < f["best_of_first"] <= 1, (order, f)
    assert 1 <= f["trials_to_95"] <= 7, (order, f)
assert -1 <= o["spearman"] <= 1, o
PY
# Two tasks in one log: refused in one line, exit 2.
"$build/src/cli/cutune" tune gemm --shape 40,40,24 --device emulator --trials 2 --batch 2 \
  --log "$work/log2.jsonl" --quiet > /dev/null
cat "$work/log2.jsonl" >> "$work/log.jsonl"
set +e
err=$("$build/bench/prior_study" --log "$work/log.jsonl" 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -q "more than one task" <<< "$err"
echo "prior_study: ok"
