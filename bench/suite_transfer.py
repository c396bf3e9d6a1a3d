#!/usr/bin/env python3
"""Does transfer between the tasks of a replay suite help?

Tunes one replay suite of the shared caches (several GPUs per kernel) with and without
transfer (`--no-transfer`), for several seeds, and reports for every task that learns (every
cache but the first of its kernel) the median over seeds of optimum / best-found at a few
budgets, and the median trials to reach 90% and 95% of the optimum.

    bench/suite_transfer.py [BUILD_DIR] [SEEDS] [TRIALS]     (defaults: build 5 64)

Each task's records are read from the log in trial order; the optimum is the cache's best
(the summary's optimum_ms). Single process: transfer makes no difference to who measures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from one_line_parser import OneLineParser  # bench/, the script's folder


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a whole number greater than 0, not '{text}'")
    return value


cli = OneLineParser(description="Transfer between the tasks of a replay suite.")
cli.add_argument("build", nargs="?", default="build", help="the build folder (build)")
cli.add_argument("seeds", nargs="?", type=positive_int, default=5, help="seeds (5)")
cli.add_argument("trials", nargs="?", type=positive_int, default=64, help="trials a task (64)")
args = cli.parse_args()
build, seeds, trials = args.build, args.seeds, args.trials
batch = 16
budgets = [b for b in (8, 16, 32, 64, 128) if b <= trials]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
data = os.path.join(root, "..", "shared", "datasets")
caches = [
    "gemm/RTX_3090", "gemm/RTX_2080_Ti", "gemm/RTX_3060_laptop",
    "convolution_old/RTX_3090", "convolution_old/RTX_2080_Ti", "convolution_old/RTX_3060_laptop",
    "convolution_milo/A4000", "convolution_milo/A6000_original", "convolution_milo/W6600",
    "convolution_milo/W7800",
    "dedispersion_milo/A4000", "dedispersion_milo/W6600", "dedispersion_milo/MI250X",
]
paths = [os.path.join(data, c + ".json.gz") for c in caches]
for p in paths:
    if not os.path.exists(p):
        print(f"skipped: dataset absent: {p}")
        sys.exit(0)
cutune = os.path.join(build, "src", "cli", "cutune")


def run(seed, transfer, log):
    cmd = [cutune, "tune", "--quiet", "--json", "--tuner", "xgb", "--batch", str(batch),
           "--seed", str(seed), "--trials", str(trials), "--log", log, "--replay", *paths]
    if not transfer:
        cmd.append("--no-transfer")
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    tasks = {t["task"]: t for t in out["tasks"]}
    names = {t["task"]: c for t, c in zip(out["tasks"], caches)}
    curves = {}
    for line in open(log):
        r = json.loads(line)
        t = r["task"]
        key = f'{t["op"]}[{"x".join(map(str, t["shape"]))} {t["dtype"]}] {t["template"]} ' \
              f'{t["arch"]} ({t["device"]})'
        curves.setdefault(key, []).append(r)
    result = {}
    for key, recs in curves.items():
        recs.sort(key=lambda r: r["config"]["trial"])
        optimum = tasks[key]["optimum_ms"] * 1e-3
        best, ratios = float("inf"), []
        for r in recs:
            if r["result"]["status"] == "ok":
                best = min(best, sum(r["result"]["times"]) / len(r["result"]["times"]))
            ratios.append(optimum / best if best < float("inf") else 0.0)
        result[names[key]] = (ratios, tasks[key]["transfer_tasks"])
    return result


def trials_to(ratios, f):
    for i, r in enumerate(ratios):
        if r >= f:
            return i + 1
    return None


with tempfile.TemporaryDirectory() as tmp:
    runs = {True: [], False: []}
    for seed in range(1, seeds + 1):
        for transfer in (True, False):
            log = os.path.join(tmp, f"s{seed}{'t' if transfer else 'n'}.jsonl")
            runs[transfer].append(run(seed, transfer, log))
            print(f"seed {seed} transfer {'on' if transfer else 'off'} done", file=sys.stderr)

keys = [c for c in caches if runs[True][0][c][1] > 0]
print(f"{len(keys)} learning tasks, {seeds} seeds, {trials} trials, xgb, batch {batch}")
print("columns: median over seeds of optimum/best-found at each budget, on (transfer) / off")
print(f"{'cache (learns from the earlier ones of its kernel)':<58}" + "".join(f"{'@' + str(b):>14}" for b in budgets) + f"{'to 95%':>14}")
summary = {b: {True: [], False: []} for b in budgets}
reach = {True: [], False: []}
for k in keys:
    cells = []
    for b in budgets:
        on = statistics.median(r[k][0][b - 1] for r in runs[True])
        off = statistics.median(r[k][0][b - 1] for r in runs[False])
        summary[b][True].append(on)
        summary[b][False].append(off)
        cells.append(f"{on:.3f}/{off:.3f}")
    t95 = {}
    for tr in (True, False):
        ts = [trials_to(r[k][0], 0.95) for r in runs[tr]]
        ts = [t if t is not None else trials + 1 for t in ts]
        t95[tr] = statistics.median(ts)
        reach[tr].append(t95[tr])
    name = k if len(k) <= 57 else k[:54] + "..."
    print(f"{name:<58}" + "".join(f"{c:>14}" for c in cells) +
          f"{str(t95[True]) + '/' + str(t95[False]):>14}")
print(f"{'geometric mean over the learning tasks':<58}" + "".join(
    f"{statistics.geometric_mean(max(x, 1e-9) for x in summary[b][True]):>7.3f}/"
    f"{statistics.geometric_mean(max(x, 1e-9) for x in summary[b][False]):<6.3f}"
    for b in budgets))
wins = sum(1 for k in range(len(keys)) if summary[budgets[1]][True][k] >
           summary[budgets[1]][False][k])
losses = sum(1 for k in range(len(keys)) if summary[budgets[1]][True][k] <
             summary[budgets[1]][False][k])
print(f"at {budgets[1]} trials transfer is ahead on {wins}, behind on {losses} of {len(keys)} "
      f"tasks; trials to 95% ({trials + 1} = not reached): median on "
      f"{statistics.median(reach[True])}, off {statistics.median(reach[False])}")
