"""Nsight Compute for the device check's probe plan (plan_probe.sh): which metrics this ncu
knows, which kernels a `cutune bench` launches (cuBLAS's is generated at run time, so only the
GPU can name it), and one profile of one kernel, with the readings the probe reports.

    ncu_probe.py metrics DIR                     ncu's version, sections and metrics: keeps the
                                                 wanted ones it lists (one unknown metric name
                                                 makes ncu profile nothing) in DIR/metrics.txt
    ncu_probe.py list DIR [--exclude RE] -- CMD  every kernel CMD launches, by launch count, with
                                                 its grid and block; DIR/cublas_kernel.txt is
                                                 the most launched one not matching RE
    ncu_probe.py profile DIR NAME KERNEL [--skip N] -- CMD
                                                 one launch of KERNEL (exact function name) after
                                                 N of them, full sections and DIR/metrics.txt,
                                                 into DIR/NAME.ncu-rep, NAME_details.csv and
                                                 NAME_source.csv (SASS with stall samples)
    ncu_probe.py --self-test

Each command's last line is `figures: {JSON}` (the device check's figures for the step). Always
--clock-control none: the GPU runs at the clocks it chooses, as in the timed runs. ncu runs with
the environment this script was started with, except LD_LIBRARY_PATH, which is --target-ld's
for CMD only (the pack's libraries are for cutune, not for ncu). Exit 3 (skipped, one line) when
there is no ncu.
"""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from one_line_parser import OneLineParser  # noqa: E402

SKIPPED = 3
# The readings the gap note asks for: SM clock, tensor pipe, L2 and DRAM, issue and occupancy.
WANTED = [
    "sm__cycles_elapsed.avg.per_second",
    "gpc__cycles_elapsed.avg.per_second",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_bytes.sum.per_second",
    "lts__t_sector_hit_rate.pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "gpu__time_duration.sum",
]
SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "ComputeWorkloadAnalysis",
            "MemoryWorkloadAnalysis", "WarpStateStats", "SchedulerStats", "SourceCounters"]
# Short names of the figures a profile reports (the first of each group that was collected).
FIGURES = {
    "sm_clock_hz": ["sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second"],
    "tensor_pipe_pct": ["sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"],
    "fma_pipe_pct": ["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"],
    "l2_pct": ["lts__throughput.avg.pct_of_peak_sustained_elapsed"],
    "l2_hit_pct": ["lts__t_sector_hit_rate.pct"],
    "dram_pct": ["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
    "issue_pct": ["smsp__issue_active.avg.pct_of_peak_sustained_active"],
    "duration_ns": ["gpu__time_duration.sum"],
    "grid": ["launch__grid_size"],
    "block": ["launch__block_size"],
    "registers": ["launch__registers_per_thread"],
    "cluster": ["launch__cluster_size", "launch__cluster_dim_x"],
    "dynamic_smem": ["launch__shared_mem_per_block_dynamic"],
}
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def find_ncu():
    found = shutil.which("ncu")
    if found:
        return found
    for root in ["/usr/local/cuda/bin", "/opt/nvidia/nsight-compute"]:
        for dirpath, _, files in os.walk(root):
            if "ncu" in files:
                return os.path.join(dirpath, "ncu")
    return None


def figures_line(obj):
    print("figures: " + json.dumps(obj, sort_keys=True))


def csv_rows(text):
    """The CSV rows of ncu's output (it also prints ==PROF== and program lines)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def keep_known(wanted, listing):
    """The wanted metric names that `ncu --query-metrics-mode all` listed (full names), or, when
    that listing holds no full names (an older ncu), those whose base name it listed."""
    names = {line.split()[0] for line in listing.splitlines() if line.strip()}
    full = any("." in n for n in names)
    kept = [m for m in wanted if (m in names if full else m.split(".")[0] in names)]
    return kept, [m for m in wanted if m not in kept]


def read_listing(rows, exclude):
    """Kernels of a `--csv --metrics gpu__time_duration.sum` run: [(name, launches, grid,
    block)] by launches, and the most launched name not matching `exclude`."""
    if not rows:
        return [], None
    head = rows[0]

    def column(word):  # ncu versions name the columns slightly differently
        return next((i for i, h in enumerate(head) if word in h.lower()), None)
    kname, grid, block = column("kernel name"), column("grid"), column("block")
    launch = head.index("ID") if "ID" in head else None
    if kname is None or grid is None or block is None:
        return [], None
    seen, shape = Counter(), {}
    for r in rows[1:]:
        if len(r) != len(head) or r[kname] == head[kname]:
            continue
        name = r[kname]
        key = (name, r[launch] if launch is not None else len(shape))
        if key in shape:
            continue  # one row per metric: count each launch once
        seen[name] += 1
        shape[key] = (r[grid], r[block])
    table = []
    for name, n in seen.most_common():
        grid, block = next(v for k, v in shape.items() if k[0] == name)
        table.append((name, n, grid, block))
    pick = next((t for t in table if not (exclude and re.search(exclude, t[0]))), None)
    return table, pick


def read_raw(rows):
    """Figures of one profiled kernel from `--page raw --csv --print-units base`."""
    if len(rows) < 3:
        return {}
    head, values = rows[0], rows[-1]
    got = dict(zip(head, values))

    def number(v):
        try:
            return float(v.replace(",", ""))
        except ValueError:
            return v
    out = {"kernel": got.get("Kernel Name")}
    for short, names in FIGURES.items():
        for n in names:
            if got.get(n) not in (None, "", "n/a"):
                out[short] = number(got[n])
                break
    stalls = []
    for n, v in got.items():
        m = STALL.match(n)
        if m and isinstance(number(v), float):
            stalls.append((number(v), m.group(1)))
    out["top_stalls"] = {name: round(v, 3) for v, name in sorted(stalls, reverse=True)[:4]}
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def ncu_env():
    return dict(os.environ)


def with_target_ld(args, cmd):
    # ncu's own environment stays clean; CMD gets the pack's libraries through `env`.
    return (["env", f"LD_LIBRARY_PATH={args.target_ld}"] if args.target_ld else []) + cmd


def cmd_metrics(args, ncu):
    version = run([ncu, "--version"], env=ncu_env()).stdout.strip().splitlines()
    listing = ""
    for extra in ([], ["--chip", "gh100"]):
        r = run([ncu, "--query-metrics-mode", "all", "--query-metrics"] + extra, env=ncu_env())
        if r.returncode == 0 and r.stdout.strip():
            listing = r.stdout
            break
    sections = run([ncu, "--list-sections"], env=ncu_env()).stdout
    with open(os.path.join(args.dir, "query_metrics.txt"), "w") as f:
        f.write(listing)
    kept, dropped = keep_known(WANTED, listing)
    # Sections by their identifiers; none listed (an ncu that lists them otherwise): the full set.
    known_sections = [s for s in SECTIONS if re.search(rf"\b{s}\b", sections)]
    with open(os.path.join(args.dir, "metrics.txt"), "w") as f:
        f.write(",".join(kept) + "\n")
    with open(os.path.join(args.dir, "sections.txt"), "w") as f:
        f.write(" ".join(known_sections) + "\n")
    print(f"ncu {version[-1] if version else '?'}; kept {len(kept)} metrics, dropped: "
          f"{', '.join(dropped) or 'none'}; sections {' '.join(known_sections) or '(the full set)'}")
    figures_line({"ncu": version[-1] if version else None, "metrics_kept": len(kept),
                  "metrics_dropped": dropped, "sections": known_sections})
    return 0


def cmd_list(args, ncu):
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--csv",
           "--print-units", "base", "--kernel-name-base", "function",
           "--metrics", "gpu__time_duration.sum", "-c", str(args.count)] + with_target_ld(args, args.cmd)
    r = run(cmd, env=ncu_env())
    with open(os.path.join(args.dir, "listing.txt"), "w") as f:
        f.write(r.stdout + r.stderr)
    table, pick = read_listing(csv_rows(r.stdout), args.exclude)
    for name, n, grid, block in table:
        print(f"{n:5d}  grid {grid:>16}  block {block:>14}  {name}")
    if pick:
        with open(os.path.join(args.dir, "cublas_kernel.txt"), "w") as f:
            f.write(pick[0] + "\n")
    figures_line({"kernel": pick[0] if pick else None, "launches": pick[1] if pick else None,
                  "grid": pick[2] if pick else None, "block": pick[3] if pick else None,
                  "kernels": len(table)})
    return 0 if pick else 1


def cmd_profile(args, ncu):
    def read(name, default=""):
        try:
            with open(os.path.join(args.dir, name)) as f:
                return f.read().strip()
        except OSError:
            return default
    metrics = read("metrics.txt")
    sections = read("sections.txt").split()
    rep = os.path.join(args.dir, args.name)
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name-base",
           "function", "-k", args.kernel, "--launch-skip", str(args.skip), "-c", "1", "-f",
           "-o", rep]
    for s in sections:
        cmd += ["--section", s]
    if not sections:
        cmd += ["--set", "full"]
    if metrics:
        cmd += ["--metrics", metrics]
    r = run(cmd + with_target_ld(args, args.cmd), env=ncu_env())
    with open(rep + "_ncu.txt", "w") as f:
        f.write(r.stdout + r.stderr)
    if not os.path.exists(rep + ".ncu-rep"):
        print(f"ncu wrote no report for {args.kernel} (exit {r.returncode}): "
              f"{(r.stderr or r.stdout).strip().splitlines()[-1:] or ''}")
        figures_line({"kernel": args.kernel, "report": False})
        return 1
    details = run([ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "details"], env=ncu_env())
    with open(rep + "_details.csv", "w") as f:
        f.write(details.stdout)
    source = run([ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "source", "--print-source",
                  "sass"], env=ncu_env())
    with open(rep + "_source.csv", "w") as f:
        f.write(source.stdout or source.stderr)
    raw = run([ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
              env=ncu_env())
    figures = read_raw(csv_rows(raw.stdout))
    for k, v in figures.items():
        print(f"{k}: {v}")
    figures_line(figures)
    return 0


def self_test():
    listing = "\n".join([
        "==PROF== Connected to process 12",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"',
        '"0","12","cutune","h","nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN","1","7","(384, 1, 1)",'
        '"(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","210000"',
        '"1","12","cutune","h","gemm_fp16_wgmma_nt","1","7","(384, 1, 1)","(1376, 1, 1)","0",'
        '"9.0","Command line profiler metrics","gpu__time_duration.sum","ns","280000"',
    ] + [f'"{i}","12","cutune","h","nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN","1","7",'
         f'"(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics",'
         f'"gpu__time_duration.sum","ns","211000"' for i in range(2, 5)] + [
        '"5","12","cutune","h","gemm_fp16_wgmma_nt","1","7","(384, 1, 1)","(1376, 1, 1)","0",'
        '"9.0","Command line profiler metrics","gpu__time_duration.sum","ns","280000"',
        '"6","12","cutune","h","sm90_xmma_gemm_f16f16_f16f32","1","7","(128, 1, 1)","(64, 2, 1)",'
        '"0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","400000"'])
    table, pick = read_listing(csv_rows(listing), "^gemm_fp16_wgmma_nt$")
    assert [(t[0], t[1]) for t in table] == [("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", 4),
                                             ("gemm_fp16_wgmma_nt", 2),
                                             ("sm90_xmma_gemm_f16f16_f16f32", 1)], table
    assert pick == ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", 4, "(132, 1, 1)", "(384, 1, 1)")
    assert read_listing(csv_rows(listing), "nvjet|gemm_fp16")[1][0] == "sm90_xmma_gemm_f16f16_f16f32"
    assert read_listing([], None) == ([], None)
    # Metric names: full names when the listing has them, else base names.
    full = "sm__cycles_elapsed.avg.per_second  Counter  cycles\nlts__t_bytes.sum  Counter  x\n"
    assert keep_known(["sm__cycles_elapsed.avg.per_second", "lts__t_bytes.sum.per_second"], full) == \
        (["sm__cycles_elapsed.avg.per_second"], ["lts__t_bytes.sum.per_second"])
    base = "sm__cycles_elapsed  Counter  cycles\nlts__t_bytes  Counter  x\n"
    assert keep_known(["lts__t_bytes.sum.per_second", "nope__x.sum"], base) == \
        (["lts__t_bytes.sum.per_second"], ["nope__x.sum"])
    # A profile's raw page: the figures and the largest stall reasons.
    raw = "\n".join([
        '"ID","Kernel Name","sm__cycles_elapsed.avg.per_second","launch__grid_size",'
        '"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",'
        '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"',
        '"","","hz","","%","inst","inst","inst"',
        '"0","gemm_fp16_wgmma_nt","1,755,000,000","1376","71.5","0.5","2.25","n/a"'])
    f = read_raw(csv_rows(raw))
    assert f["kernel"] == "gemm_fp16_wgmma_nt" and f["sm_clock_hz"] == 1.755e9, f
    assert f["grid"] == 1376 and f["tensor_pipe_pct"] == 71.5, f
    assert list(f["top_stalls"]) == ["long_scoreboard", "barrier"], f
    print("ncu_probe.py: self-test ok")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    cmd = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    p = OneLineParser(prog="ncu_probe.py", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["metrics", "list", "profile"])
    p.add_argument("dir")
    p.add_argument("name", nargs="?")
    p.add_argument("kernel", nargs="?")
    p.add_argument("--exclude")
    p.add_argument("--skip", type=int, default=5)
    p.add_argument("--count", type=int, default=600, help="list: kernels profiled at most")
    p.add_argument("--target-ld", default="", help="LD_LIBRARY_PATH of CMD")
    args = p.parse_args(argv)
    args.cmd = cmd
    if args.command != "metrics" and not cmd:
        p.error(f"{args.command} needs -- CMD")
    if args.command == "profile" and not (args.name and args.kernel):
        p.error("profile needs NAME and KERNEL")
    ncu = find_ncu()
    if not ncu:
        print("ncu_probe.py: skipped: no ncu on the PATH or under /usr/local/cuda, /opt/nvidia")
        return SKIPPED
    os.makedirs(args.dir, exist_ok=True)
    return {"metrics": cmd_metrics, "list": cmd_list, "profile": cmd_profile}[args.command](args, ncu)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
