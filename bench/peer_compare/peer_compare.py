"""Kernel Tuner 1.5's strategies (simulation mode) against cutune's tuners, on every Kernel
Tuner cache under a data folder, counted the same way as cutune's replay
(src/tune/replay_study.cc): a trial is a unique configuration, failed ones included; the
curve after t trials is optimum time / true time of the best valid configuration found.

    run.sh kt      [--seeds 20] [--budget 400] [--jobs 2] [--strategies a,b] [--only SUBSTR[,SUBSTR]]
    run.sh cutune  [--seeds 20] [--budget 400] [--replay-efficiency build/bench/replay_efficiency]
    run.sh kt --needle --only convolution_old/RTX_3090   (the needle test space, see below)
    run.sh report  (tables per cache and the summary, into results/summary.md and .json)
    run.sh ... --data DIR --results DIR2  (another set of caches, e.g. held-out ones, with its
                                           runs and summary in DIR2 instead of results/)

Runs are appended to results/kt_runs.jsonl and results/cutune_runs.jsonl, one line per
(cache, tuner, seed), holding only the improvement points of the curve; a rerun skips what is
there (resumable). The runs are not kept in git (only the summaries are): `run.sh kt` and
`run.sh cutune` regenerate them, and `report` without them says so in one line and exits 2. Kernel Tuner's quirks and how they are handled:
  * its Latin-hypercube sampling (scipy.stats.qmc.LatinHypercube in bayes_opt) is unseeded:
    the class is replaced by one seeded from the run's seed;
  * bayes_opt takes failed entries kept in the space (cost sys.float_info.max) for valid
    observations (its is_valid compares with its own 1e20 sentinel and `== np.nan`), so the
    Gaussian process is fitted on 1.8e308 values; is_valid is replaced by one that rejects
    those;
  * several strategies stop before the budget (converged populations, exhausted
    neighbourhoods): the strategy is restarted with the next seed, configurations already
    measured costing nothing again, until the budget of unique configurations is spent or
    ten restarts add nothing (the curve then holds its last value).
"""

import argparse
import functools
import gzip
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for one_line_parser
from one_line_parser import OneLineParser  # noqa: E402
RESULTS = os.path.join(HERE, "results")
BAR_SEEDS = 20  # the bar: medians of 20 seeds
DEFAULT_DATA = os.path.join(ROOT, "..", "shared", "datasets")
BUDGETS = [25, 50, 100, 200, 400]
STRATEGIES = [
    "random_sample", "genetic_algorithm", "simulated_annealing", "dual_annealing",
    "basinhopping", "diff_evo", "firefly_algorithm", "pso", "greedy_ils", "mls", "bayes_opt",
]


def find_caches(data, only):
    out = []
    for folder, _, files in os.walk(data):
        for f in sorted(files):
            if f.endswith(".json.gz"):
                rel = os.path.relpath(os.path.join(folder, f), data)
                if not only or any(o and o in rel for o in only.split(",")):
                    out.append(rel)
    return sorted(out)


def load_cache(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def needle(d, plateau=0.89, neighbour=0.8):
    """The needle variant of a cache, as make_needle_cache in src/tune/replay_study.cc: the
    optimum kept, every other configuration within `plateau` slowed to exactly `plateau`,
    the optimum's one-knob neighbours slowed to at most `neighbour` of its throughput."""
    keys = d["tune_params_keys"]
    valid = {k: e for k, e in d["cache"].items() if isinstance(e.get("time"), (int, float))}
    best_key = min(valid, key=lambda k: valid[k]["time"])
    t0 = valid[best_key]["time"]
    opt = [valid[best_key][k] for k in keys]
    for key, e in valid.items():
        dist = sum(1 for k, v in zip(keys, opt) if e[k] != v)
        if dist == 1 and t0 / e["time"] > neighbour:
            e["time"] = t0 / neighbour
        elif dist >= 2 and t0 / e["time"] >= plateau:
            e["time"] = t0 / plateau
    return d


def load_named(data, rel):
    """A cache by its name; "needle:REL" is the needle variant of REL."""
    if rel.startswith("needle:"):
        return needle(load_cache(os.path.join(data, rel[len("needle:"):])))
    return load_cache(os.path.join(data, rel))


# --- Kernel Tuner side ------------------------------------------------------------------

_patched = False


def patch_kernel_tuner():
    """Seeded LHS and failed entries treated as invalid in bayes_opt (see the module doc)."""
    global _patched
    if _patched:
        return
    import numpy as np
    from scipy.stats import qmc
    from kernel_tuner.strategies import bayes_opt

    class SeededLatinHypercube(qmc.LatinHypercube):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("seed", np.random.randint(0, 2**31 - 1))
            super().__init__(*args, **kwargs)

    bayes_opt.LatinHypercube = SeededLatinHypercube

    def is_valid(self, observation):
        return observation is not None and np.isfinite(observation) and observation < 1e19

    bayes_opt.BayesianOptimization.is_valid = is_valid
    _patched = True


_plain = {}  # cache path -> (plain JSON path, parsed cache)


def plain_cache(data, rel):
    if rel not in _plain:
        d = load_named(data, rel)
        fd, path = tempfile.mkstemp(suffix=".json", prefix="kt_cache_")
        with os.fdopen(fd, "w") as f:
            json.dump(d, f)
        _plain[rel] = (path, d)
    return _plain[rel]


def kt_one(task):
    """One (cache, strategy, seed): the improvement points [(trial, best_time_ms), ...]."""
    data, rel, strategy, seed, budget = task
    import numpy as np
    import kernel_tuner

    patch_kernel_tuner()
    path, d = plain_cache(data, rel)
    keys = d["tune_params_keys"]
    tune_params = {k: d["tune_params"][k] for k in keys}
    present = set(d["cache"].keys())

    def in_cache(p):
        return ",".join(str(p[k]) for k in keys) in present

    seen = set()
    best = None
    points = []
    restarts = 0
    idle = 0
    start = time.time()
    while len(seen) < budget and idle < 10:
        run_seed = seed + 1000 * restarts
        random.seed(run_seed)
        np.random.seed(run_seed)
        before = len(seen)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with open(os.devnull, "w") as null:
                old = sys.stdout
                sys.stdout = null
                try:
                    results, _ = kernel_tuner.tune_kernel(
                        d["kernel_name"], "/* simulated */", d["problem_size"], [], tune_params,
                        restrictions=in_cache, strategy=strategy,
                        strategy_options={"max_fevals": budget}, cache=path,
                        simulation_mode=True, quiet=True, verbose=False)
                finally:
                    sys.stdout = old
        for r in results:
            key = ",".join(str(r[k]) for k in keys)
            if key in seen:
                continue
            if len(seen) >= budget:
                break
            seen.add(key)
            t = d["cache"][key].get("time")
            if isinstance(t, (int, float)) and (best is None or t < best):
                best = t
                points.append((len(seen), t))
        restarts += 1
        idle = idle + 1 if len(seen) == before else 0
    return {"cache": rel, "tuner": "kt:" + strategy, "seed": seed, "trials": len(seen),
            "restarts": restarts - 1, "points": points, "budget": budget,
            "seconds": round(time.time() - start, 2)}


def done_keys(path):
    out = set()
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                out.add((r["cache"], r["tuner"], r["seed"]))
    return out


def cmd_kt(args):
    out_path = os.path.join(RESULTS, "kt_runs.jsonl")
    done = done_keys(out_path)
    strategies = args.strategies.split(",") if args.strategies else STRATEGIES
    tasks = []
    # Seeds outermost, so that a partial run has every (cache, strategy) at a few seeds.
    caches = find_caches(args.data, args.only)
    if args.needle:
        caches = ["needle:" + c for c in caches]
    for seed in range(args.seeds):
        for rel in caches:
            for s in strategies:
                if (rel, "kt:" + s, seed) not in done:
                    tasks.append((args.data, rel, s, seed, args.budget))
    print(f"{len(tasks)} Kernel Tuner runs to do ({len(done)} done)", flush=True)
    n = 0
    start = time.monotonic()
    with mp.Pool(args.jobs) as pool, open(out_path, "a") as out:
        for r in pool.imap_unordered(kt_one, tasks):
            out.write(json.dumps(r) + "\n")
            out.flush()
            n += 1
            rate = n / max(time.monotonic() - start, 1e-9)
            print(f"[{n}/{len(tasks)}, {rate:.2f} runs/s, ETA {(len(tasks) - n) / rate:.0f} s] "
                  f"{r['cache']} {r['tuner']} seed {r['seed']}: "
                  f"{r['trials']} trials, {r['restarts']} restarts, {r['seconds']} s", flush=True)


# --- cutune side ------------------------------------------------------------------------

def cmd_cutune(args):
    """cutune's tuners through bench/replay_efficiency --curves; replaces their earlier lines."""
    out_path = os.path.join(RESULTS, "cutune_runs.jsonl")
    tmp = out_path + ".new"
    if os.path.exists(tmp):
        os.remove(tmp)
    cmd = [args.replay_efficiency, "--data", args.data, "--seeds", str(args.seeds), "--trials",
           str(args.budget), "--batch", str(args.batch), "--threads", str(args.jobs),
           "--tuners", args.tuners, "--curves", tmp] + (["--only", args.only] if args.only else []) \
        + (["--needle"] if args.needle else [])
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    fresh = [json.loads(l) for l in open(tmp)]
    for r in fresh:
        r.setdefault("budget", args.budget)  # the report censors every row at its budget
    names = {(r["cache"], r["tuner"]) for r in fresh}
    kept = []
    if os.path.exists(out_path):
        kept = [json.loads(l) for l in open(out_path)]
        kept = [r for r in kept if (r["cache"], r["tuner"]) not in names]
    with open(out_path, "w") as out:
        for r in kept + fresh:
            out.write(json.dumps(r) + "\n")
    os.remove(tmp)


# --- report -----------------------------------------------------------------------------

def median(v):
    v = sorted(v)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def optimum_and_random(data, rel):
    d = load_named(data, rel)
    times = [e["time"] for e in d["cache"].values() if isinstance(e.get("time"), (int, float))]
    opt = min(times)
    k = sum(1 for t in times if opt / t >= 0.95)
    return opt, (len(d["cache"]) + 1) / (k + 1)


def ratio_at(points, t, opt):
    best = 0.0
    for trial, ms in points:
        if trial <= t:
            best = opt / ms
    return best


def trials_to(points, opt, fraction=0.95):
    for trial, ms in points:
        if opt / ms >= fraction:
            return trial
    return float("inf")


def quantile(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def bootstrap_bar(mine, kt, draws=2000, seed=0):
    """The bar's verdict on trials to 95% under resampling of the seeds. mine: cutune's
    per-seed trials to 95% (inf: never); kt: each Kernel Tuner strategy's. Each draw resamples
    every list's seeds with replacement and compares cutune's median with the least median of
    the strategies, as the bar does; the least of eleven noisy medians is biased low (the
    winner's curse), which this shows. Returns the share of draws in which cutune's median is
    no more, and 90% intervals of both medians."""
    rng = random.Random(seed)
    wins, ours, theirs = 0, [], []
    for _ in range(draws):
        m = median([rng.choice(mine) for _ in mine])
        k = min(median([rng.choice(v) for _ in v]) for v in kt)
        wins += m <= k
        ours.append(m)
        theirs.append(k)
    return {"share_met": wins / draws,
            "cutune_90": [quantile(ours, 0.05), quantile(ours, 0.95)],
            "best_kt_90": [quantile(theirs, 0.05), quantile(theirs, 0.95)]}


def censor(trials, cap):
    """Trials to 95% past `cap` count as never (inf)."""
    return [t if t <= cap else float("inf") for t in trials]


def cmd_report(args):
    names = ("kt_runs.jsonl", "cutune_runs.jsonl")
    absent = [n for n in names if not os.path.exists(os.path.join(RESULTS, n))]
    if absent:
        # The runs are not in git; a summary from one side or none would be empty.
        print(f"peer_compare: no {' or '.join(absent)} in {RESULTS}: regenerate the runs with "
              f"bench/peer_compare/run.sh kt and run.sh cutune (same --data, --results, --seeds)",
              file=sys.stderr)
        sys.exit(2)
    runs = {}
    for name in names:
        p = os.path.join(RESULTS, name)
        if os.path.exists(p):
            with open(p) as f:
                for line in f:
                    r = json.loads(line)
                    if r["seed"] < args.seeds:  # the first --seeds seeds of every row
                        runs.setdefault((r["cache"], r["tuner"]), {})[r["seed"]] = r
    # The bar's view is 20 seeds (summary.md); another --seeds writes summary_seedsN.md and
    # keeps the rows that have that many (a firmer look at chosen caches and strategies).
    name = "summary" if args.seeds == BAR_SEEDS else f"summary_seeds{args.seeds}"
    if args.seeds != BAR_SEEDS:
        runs = {k: v for k, v in runs.items() if len(v) == args.seeds}
    caches = sorted({c for c, t in runs if t.startswith("kt:")} &
                    {c for c, t in runs if t.startswith("cutune:")})
    md = ["# cutune against Kernel Tuner 1.5 (simulation mode), replayed caches", "",
          "Generated by `bench/peer_compare/run.sh report`. Median over seeds; a trial is a "
          "unique configuration, failed ones included; `-`: the median seed never reached 95%.",
          ""]
    summary = []
    fmt_r = lambda r: "-" if r != r else f"{r:.3f}"
    fmt_t = lambda t: "-" if t == float("inf") else (f"{t:.1f}" if t % 1 else f"{t:.0f}")
    for rel in caches:
        opt, rnd = optimum_and_random(args.data, rel)
        rows, per_seed = [], {}
        for (c, tuner), by_seed in sorted(runs.items()):
            if c != rel:
                continue
            seeds = [by_seed[s] for s in sorted(by_seed)]
            # Runs of one row may have different budgets (older lines: 400); every figure is
            # censored at the smallest, so a median never mixes reached and unobserved trials.
            cap = min(r.get("budget", args.budget) for r in seeds)
            t95 = [trials_to(r["points"], opt) for r in seeds]
            per_seed[tuner] = t95
            row = {"tuner": tuner, "seeds": len(seeds), "budget": cap,
                   "trials_to_95": median(censor(t95, cap)),
                   "at": {b: median([ratio_at(r["points"], b, opt) for r in seeds])
                          if b <= cap else float("nan") for b in BUDGETS},
                   "short": sum(1 for r in seeds if r["trials"] < r.get("budget", args.budget))}
            rows.append(row)
        md += [f"## {rel} (random expects {rnd:.0f} trials to 95%)", "",
               "| tuner | seeds | " + " | ".join(f"@{b}" for b in BUDGETS) +
               " | trials to 95% | runs short of budget |",
               "|---|---|" + "---|" * len(BUDGETS) + "---|---|"]
        for row in rows:
            md.append(f"| {row['tuner']} | {row['seeds']} | " +
                      " | ".join(fmt_r(row['at'][b]) for b in BUDGETS) +
                      f" | {fmt_t(row['trials_to_95'])} | {row['short']} |")
        md.append("")
        kt = [r for r in rows if r["tuner"].startswith("kt:")]
        mine = [r for r in rows if r["tuner"] == "cutune:" + args.default]
        early = [r for r in rows if r["tuner"] == "cutune:" + args.default + "-early"]
        if kt and mine:
            best = min(kt, key=lambda r: (r["trials_to_95"], [-r["at"][b] for b in (200, 100, 50)]))
            # Both sides censored at the smaller budget, as the medians are compared.
            cap = min([mine[0]["budget"]] + [r["budget"] for r in kt])
            boot = bootstrap_bar(censor(per_seed[mine[0]["tuner"]], cap),
                                 [censor(per_seed[r["tuner"]], cap) for r in kt])
            summary.append({"cache": rel, "random_trials_to_95": rnd, "cutune": mine[0],
                            "bootstrap": boot,
                            "cutune_early": early[0] if early else None, "best_kt": best,
                            "kt_seeds": min(r["seeds"] for r in kt),
                            "best_kt_at": {b: max((r["at"][b] for r in kt if r["at"][b] == r["at"][b]),
                                                  default=float("nan")) for b in BUDGETS}})
    head = ["## Summary: cutune's default against the best Kernel Tuner strategy of each cache", "",
            "`best KT` is the strategy with the fewest median trials to 95% on that cache (its own "
            "medians at 50 / 100 / 200 in brackets); `any KT @b` the best median of any strategy "
            "at budget b. `bar`: on caches where random needs more than 50 trials, cutune needs "
            "no more trials to 95% than best KT and is no worse at 50, 100 and 200 trials than "
            "best KT (`strategy`) and than any KT strategy at each budget (`any`). `met in resamples`: "
            "the share of 2,000 bootstrap resamples of the seeds (every row resampled) in which "
            "cutune's median trials to 95% is no more than the least median of Kernel Tuner's "
            "strategies, with 90% intervals of both medians: the least of several medians of "
            f"{args.seeds} seeds is biased low, and a row's median moves by several trials between "
            "seed sets.", "",
            "| cache | random | seeds cutune / KT | cutune trials to 95% | best KT (trials to 95%) | " +
            " | ".join(f"cutune @{b} | best KT @{b} | any KT @{b}" for b in (50, 100, 200)) +
            " | bar (strategy / any) | met in resamples (cutune / best KT, 90%) |",
            "|---|---|---|---|---|" + "---|---|---|" * 3 + "---|---|"]
    verdicts = {"strategy": [0, 0], "any": [0, 0]}
    fmt_n = lambda t: "never" if t == float("inf") else fmt_t(t)
    fmt_boot = lambda b: (f"{100 * b['share_met']:.0f}% ({fmt_n(b['cutune_90'][0])} to "
                          f"{fmt_n(b['cutune_90'][1])} / {fmt_n(b['best_kt_90'][0])} to "
                          f"{fmt_n(b['best_kt_90'][1])})")
    for s in summary:
        c, k = s["cutune"], s["best_kt"]
        verdict = "-"
        if s["cache"].startswith("needle:"):
            # Its own bar: 95% within 200 trials (Kernel Tuner's strategies stall there).
            verdict = "needle " + ("met" if c["trials_to_95"] <= 200 else "missed")
        elif s["random_trials_to_95"] > 50:
            ok_t = c["trials_to_95"] <= k["trials_to_95"]
            ok_s = ok_t and all(c["at"][b] >= k["at"][b] for b in (50, 100, 200))
            ok_a = ok_t and all(c["at"][b] >= s["best_kt_at"][b] for b in (50, 100, 200))
            verdicts["strategy"][0] += ok_s
            verdicts["any"][0] += ok_a
            verdicts["strategy"][1] += 1
            verdicts["any"][1] += 1
            verdict = ("met" if ok_s else "missed") + " / " + ("met" if ok_a else "missed")
        s["bar"] = verdict
        head.append(f"| {s['cache']} | {s['random_trials_to_95']:.0f} | {c['seeds']} / {s['kt_seeds']} | "
                    f"{fmt_t(c['trials_to_95'])} | {k['tuner'][3:]} ({fmt_t(k['trials_to_95'])}) | " +
                    " | ".join(f"{fmt_r(c['at'][b])} | {fmt_r(k['at'][b])} | {fmt_r(s['best_kt_at'][b])}"
                               for b in (50, 100, 200)) + f" | {verdict} | {fmt_boot(s['bootstrap'])} |")
    head.append("")
    head.append(f"Bar met against the best strategy on {verdicts['strategy'][0]} of "
                f"{verdicts['strategy'][1]} caches, against any strategy at each budget on "
                f"{verdicts['any'][0]} of {verdicts['any'][1]}.")
    head.append("")
    with open(os.path.join(RESULTS, name + ".md"), "w") as f:
        f.write("\n".join(head + md) + "\n")
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print("\n".join(head))


def main():
    global RESULTS
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["kt", "cutune", "report"])
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--seeds", type=int, default=BAR_SEEDS)
    p.add_argument("--budget", type=int, default=400)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--strategies", default="")
    p.add_argument("--tuners", default="xgb")
    p.add_argument("--default", default="xgb")
    p.add_argument("--only", default="")
    p.add_argument("--needle", action="store_true",
                   help="kt, cutune: the needle variants of the caches (make_needle_cache)")
    p.add_argument("--replay-efficiency", dest="replay_efficiency",
                   default=os.path.join(ROOT, "build", "bench", "replay_efficiency"))
    p.add_argument("--results", default=RESULTS,
                   help="folder of the runs and the summary (default: results/ here)")
    args = p.parse_args()
    RESULTS = os.path.abspath(args.results)
    if not os.path.isdir(args.data):
        print(f"error: no data folder {args.data}", file=sys.stderr)
        sys.exit(2)
    os.makedirs(RESULTS, exist_ok=True)
    {"kt": cmd_kt, "cutune": cmd_cutune, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    main()
