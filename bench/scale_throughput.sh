#!/usr/bin/env bash
# Trials per second of a replay suite against the number of MPI ranks, each replayed answer
# costing T ms of wall time on the measuring rank (a sleep: ranks may oversubscribe the cores),
# and the coordinator's own cost per trial (search, model, log: the same suite with T = 0 on
# one process), which bounds how far adding ranks can help.
#
#   bench/scale_throughput.sh [BUILD_DIR] [T_MS] [TRIALS_PER_TASK]     (defaults: build 50 96)
#   RANKS="1 4" bench/scale_throughput.sh                              (some rank counts only)
#   TRANSFER=off bench/scale_throughput.sh                             (tasks do not learn from
#                                                                       each other: all at once)
#
# Output: one line per rank count: ranks, trials, wall seconds (start-up included: every rank
# loads every cache), trials/s over the wall time, and the steady rate between the first and
# the last record of the log (start-up excluded) with its speed-up over the first rank count.
set -euo pipefail
build=${1:-build}
cost=${2:-50}
trials=${3:-96}
if [[ $# -gt 3 || ! $cost =~ ^[0-9]+$ || ! $trials =~ ^[1-9][0-9]*$ ]]; then
  echo "scale_throughput.sh: usage: bench/scale_throughput.sh [BUILD_DIR] [T_MS] [TRIALS_PER_TASK] (whole numbers)" >&2
  exit 2
fi
[[ -x $build/src/cli/cutune ]] || { echo "scale_throughput.sh: no cutune in $build/src/cli" >&2; exit 2; }
data=$(cd "$(dirname "$0")/.." && pwd)/../shared/datasets
cutune=$build/src/cli/cutune
# Eight tasks searched at once: while some refit their models, the others keep the ranks busy.
caches=("$data"/gemm/{RTX_3090,RTX_2080_Ti,RTX_3060_laptop}.json.gz
        "$data"/convolution_old/{RTX_3090,RTX_2080_Ti,RTX_3060_laptop}.json.gz
        "$data"/convolution_milo/{A4000,A6000_original}.json.gz)
for c in "${caches[@]}"; do [[ -f $c ]] || { echo "skipped: dataset absent: $c"; exit 0; }; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(tune --quiet --tuner xgb --batch 32 --seed 1 --trials "$trials" --replay "${caches[@]}")
# With transfer (the default), a task waits for the earlier caches of its kernel: three chains
# (gemm, convolution_old, convolution_milo) instead of eight tasks at once.
[[ ${TRANSFER:-on} == off ]] && args+=(--no-transfer)
total=$((trials * ${#caches[@]}))

now() { date +%s.%N; }
# Records per second between the log's first and last timestamp ("time":"...THH:MM:SS.mmmZ").
steady_rate() {
  sed -n 's/.*"time":"[^"]*T\([0-9:.]*\)Z".*/\1/p' "$1" | awk -F: '
    { t = $1 * 3600 + $2 * 60 + $3; if (NR > 1 && t < last) t += 86400; last = t
      if (NR == 1) first = t }
    END { printf "%.2f", (NR - 1) / (last - first) }'
}

start=$(now)
"$cutune" "${args[@]}" --log "$tmp/free.jsonl" > /dev/null
end=$(now)
awk -v s="$start" -v e="$end" -v n="$total" -v x="$(steady_rate "$tmp/free.jsonl")" 'BEGIN {
  printf "coordinator cost (T = 0, one process): %.2f ms per trial over the wall time (%.0f trials/s); steady %.0f trials/s\n",
         (e - s) * 1e3 / n, n / (e - s), x }'

echo "T = $cost ms per answer, ${#caches[@]} tasks x $trials trials, xgb, batch 32, transfer ${TRANSFER:-on}"
printf "%6s %7s %8s %9s %9s %8s\n" ranks trials seconds trials/s steady/s speedup
base=""
for ranks in ${RANKS:-1 2 4 8}; do
  start=$(now)
  mpirun -n "$ranks" --oversubscribe "$cutune" "${args[@]}" --replay-cost-ms "$cost" \
    --log "$tmp/r$ranks.jsonl" > /dev/null
  end=$(now)
  rate=$(steady_rate "$tmp/r$ranks.jsonl")
  base=${base:-$rate}
  awk -v r="$ranks" -v n="$total" -v s="$start" -v e="$end" -v x="$rate" -v b="$base" 'BEGIN {
    printf "%6d %7d %8.2f %9.2f %9.2f %7.2fx\n", r, n, e - s, n / (e - s), x, x / b }'
done
