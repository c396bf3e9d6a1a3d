"""The GEMMs a user would pick instead of cutune's, on the same GPU, timed the way `cutune bench`
times (the L2 flushed before every run, CUDA events around the one product, the median of
interleaved rounds): cuBLAS through torch.mm (the anchor), a Triton matmul kernel autotuned over
block sizes, stages and warps, and torch.compile(mode="max-autotune") on torch.matmul.

    python3 bench/gemm_peers.py [--shapes M,N,K ...] [--dtypes fp16,bf16] [--layout nt|nn]
                                [--out-dtype fp32|input] [--peers cublas,triton,inductor]
                                [--rounds 5] [--runs 10] [--budget-s S] [--json FILE]
    python3 bench/gemm_peers.py --table PEERS.json [--bench BENCH.json ...]
    python3 bench/gemm_peers.py --best N --bench BENCH.json   (its N fastest configurations)
    python3 bench/gemm_peers.py --self-test

Defaults match the probe's cutune templates (gemm_{fp16,bf16}_wgmma_nt): B stored [N,K], C in
fp32 (cuBLAS through mm's out_dtype; Triton stores fp32; Inductor compiles
torch.matmul(a, b).to(torch.float32), the conversion fused into its kernels' epilogue, the
rounding the input type's). Each (shape, dtype) case is written to --json as soon as it is
done, and no case starts after --budget-s, so a run stopped by its caller keeps what it
finished. Every peer's output is
compared with the anchor's (relative Frobenius error). --table prints the markdown table of a
peers file beside `cutune bench --json` outputs: for each case cuBLAS, cutune's fastest
configuration, Triton and Inductor, each as a time and as a speed relative to the cuBLAS timed
in the same process (so each ratio compares two times taken by one timer).

Exit codes: 0 done; 2 a bad argument (one line); 3 skipped, no torch, Triton or CUDA device here
(one line): the device check records that as "skipped".
"""

import io
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from one_line_parser import OneLineParser  # noqa: E402

SKIPPED = 3
PEERS = ["cublas", "triton", "inductor"]
DTYPES = ["fp16", "bf16"]
# Triton's autotune list: tile sizes around cuBLAS's Hopper tiles (128x256, 256x128, 128x128)
# and smaller ones, pipeline depth and warps. Each costs a compile (about a second) per dtype.
TRITON_CONFIGS = [  # (block_m, block_n, block_k, stages, warps)
    (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 256, 64, 4, 8), (128, 128, 64, 4, 4),
    (128, 128, 64, 4, 8), (128, 128, 64, 5, 8), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
    (128, 128, 32, 5, 4),
]


def parse_shape(text):
    parts = text.split(",")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"bad shape '{text}': expected M,N,K, three positive integers")
    return tuple(int(p) for p in parts)


def parse_args(argv):
    p = OneLineParser(prog="gemm_peers.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", default=["4096,4096,4096", "8192,8192,8192"])
    p.add_argument("--dtypes", default="fp16,bf16")
    p.add_argument("--layout", choices=["nt", "nn"], default="nt")
    p.add_argument("--out-dtype", choices=["fp32", "input"], default="fp32")
    p.add_argument("--peers", default=",".join(PEERS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=10, help="timed runs of each peer per round")
    p.add_argument("--budget-s", type=float, default=float("inf"))
    p.add_argument("--json", dest="json_path")
    p.add_argument("--table", metavar="PEERS_JSON")
    p.add_argument("--bench", nargs="+", default=[], metavar="BENCH_JSON")
    p.add_argument("--best", type=int, metavar="N")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args(argv)
    try:
        a.shapes = [parse_shape(s) for s in a.shapes]
    except ValueError as e:
        p.error(f"--shapes: {e}")
    a.dtypes = a.dtypes.split(",")
    if any(d not in DTYPES for d in a.dtypes):
        p.error(f"--dtypes: '{','.join(a.dtypes)}' (accepted: {', '.join(DTYPES)})")
    a.peers = a.peers.split(",")
    if any(x not in PEERS for x in a.peers) or "cublas" not in a.peers:
        p.error(f"--peers: '{','.join(a.peers)}' (cublas, the anchor, and any of triton, inductor)")
    if not 1 <= a.rounds <= 100 or not 1 <= a.runs <= 1000:
        p.error("--rounds must be in [1, 100] and --runs in [1, 1000]")
    if not a.budget_s > 0:
        p.error("--budget-s must be > 0")
    return a


def median(xs):
    return statistics.median(xs) if xs else None


def time_interleaved(fns, rounds, runs, timer):
    """{name: fn} -> {name: [seconds]}. Round r times every peer `runs` times in turn, starting
    one further along the list each round, so no peer always runs first or after the same one."""
    names = list(fns)
    times = {n: [] for n in names}
    per_round = {n: [] for n in names}
    for r in range(rounds):
        for i in range(len(names)):
            n = names[(r + i) % len(names)]
            t = timer(fns[n], runs)
            times[n].extend(t)
            per_round[n].append(median(t))
    return times, per_round


def rel_error(x, ref):
    d = (x.double() - ref.double()).norm().item()
    n = ref.double().norm().item()
    return d / n if n > 0 else d


class Torch:
    """torch, triton and the GPU, loaded once; None with the reason when one is missing."""

    @staticmethod
    def load():
        try:
            import torch
        except Exception as e:  # ImportError, or a broken install
            return None, f"no torch ({str(e).splitlines()[0]})"
        if not torch.cuda.is_available():
            return None, "no CUDA device visible to torch"
        try:
            import triton  # noqa: F401
        except Exception as e:
            return None, f"no triton ({str(e).splitlines()[0]})"
        return torch, None


def make_triton_matmul(torch):
    import triton
    import triton.language as tl

    @triton.autotune(
        configs=[triton.Config({"BM": m, "BN": n, "BK": k, "GROUP_M": 8}, num_stages=s, num_warps=w)
                 for m, n, k, s, w in TRITON_CONFIGS],
        key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
        # Output tiles in groups of GROUP_M tile rows, so that a group's B columns stay in L2.
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BM)
        tiles_n = tl.cdiv(N, BN)
        per_group = GROUP_M * tiles_n
        first_m = (pid // per_group) * GROUP_M
        rows = min(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % rows
        pid_n = (pid % per_group) // rows
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        # Rows and columns past the edge wrap round (their results are not stored), so that
        # only K needs a mask on the loads.
        pa = a + (rm % M)[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + (rn % N)[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            ta = tl.load(pa, mask=rk[None, :] < K - k0, other=0.0)
            tb = tl.load(pb, mask=rk[:, None] < K - k0, other=0.0)
            acc = tl.dot(ta, tb, acc)
            pa += BK * sak
            pb += BK * sbk
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    def matmul(a, bk, out_dtype):  # bk: B as a [K, N] view (strides say the layout)
        M, K = a.shape
        N = bk.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=out_dtype)
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
        kernel[grid](a, bk, c, M, N, K, a.stride(0), a.stride(1), bk.stride(0), bk.stride(1),
                     c.stride(0), c.stride(1))
        return c

    return matmul, kernel


def run_case(torch, shape, dtype, args, triton_matmul, triton_kernel):
    M, N, K = shape
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    out_dt = torch.float32 if args.out_dtype == "fp32" else tdt
    dev = torch.device("cuda")
    a = torch.randn(M, K, device=dev, dtype=tdt)
    # nt: B stored [N, K] (cutune's *_nt templates, cuBLAS's TN); the product reads it as a view.
    b = torch.randn(N, K, device=dev, dtype=tdt) if args.layout == "nt" else \
        torch.randn(K, N, device=dev, dtype=tdt)
    bk = b.t() if args.layout == "nt" else b

    def mm(x, y):
        return torch.mm(x, y, out_dtype=out_dt) if out_dt != x.dtype else torch.mm(x, y)

    fns, notes = {}, {}
    fns["cublas"] = lambda: mm(a, bk)
    if "triton" in args.peers:
        fns["triton"] = lambda: triton_matmul(a, bk, out_dt)
    if "inductor" in args.peers:
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)

        def inductor_of(f):
            # Static shapes: each case its own kernels (dynamo would otherwise compile the second
            # shape of the same function for any shape).
            compiled = torch.compile(f, mode="max-autotune", dynamic=False)

            def call():
                if mark:  # max-autotune replays CUDA graphs; each call is a new step
                    mark()
                return compiled(a, bk)
            return call
        # torch.matmul as a user writes it, its result converted to C's type: Inductor fuses the
        # conversion into the epilogue of its own kernels (a mm with out_dtype it would hand to
        # cuBLAS unchanged).
        fns["inductor"] = inductor_of(lambda x, y: torch.matmul(x, y).to(out_dt))

    # First calls: Triton's autotuning and Inductor's compile happen here, outside the timing.
    setup_s, errors, ref = {}, {}, None
    for name in list(fns):
        t0 = time.time()
        try:
            out = fns[name]()
            torch.cuda.synchronize()
            if name == "cublas":
                ref = out.clone()
            else:
                errors[name] = rel_error(out, ref)
            for _ in range(3):  # CUDA graphs are recorded on the first calls after compiling
                fns[name]()
            torch.cuda.synchronize()
        except Exception as e:
            notes[name] = f"failed: {str(e).splitlines()[0][:200]}"
            del fns[name]
        setup_s[name] = time.time() - t0

    flush = torch.empty(2 * max(torch.cuda.get_device_properties(0).L2_cache_size, 4 << 20) // 4,
                        device=dev, dtype=torch.int32)

    sleep = getattr(torch.cuda, "_sleep", None)

    def timer(fn, runs):
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(runs)]
        # The GPU waits (about 1 ms + 0.2 ms a run at 2 GHz) while the runs are queued, so that
        # no host-side launch cost (Triton's and Inductor's Python wrappers) lands between the
        # events.
        if sleep:
            sleep(int(2e6 + 4e5 * runs))
        for i, (start, end) in enumerate(events):
            flush.fill_(i)  # writes twice the L2: the product reads its inputs from DRAM
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e-3 for s, e in events]

    times, per_round = time_interleaved(fns, args.rounds, args.runs, timer)
    flops = 2.0 * M * N * K
    anchor = median(times.get("cublas", []))
    results = {}
    for name in PEERS:
        if name not in args.peers:
            continue
        r = {"setup_s": round(setup_s.get(name, 0.0), 3)}
        if name in notes:
            r["status"] = notes[name]
        else:
            t = median(times[name])
            r.update(status="ok", median_s=t, runs=len(times[name]), round_medians_s=per_round[name],
                     tflops=flops / t * 1e-12)
            if anchor:
                r["speed_vs_cublas"] = anchor / t
            if name in errors:
                r["rel_error_vs_cublas"] = errors[name]
        if name == "triton" and name not in notes:
            best = getattr(triton_kernel, "best_config", None)
            r["best_config"] = str(best) if best is not None else None
        results[name] = r
    return results


def case_key(dtype, shape):
    return f"{dtype} {shape[0]},{shape[1]},{shape[2]}"


def measure(args):
    torch, why = Torch.load()
    if torch is None:
        print(f"gemm_peers.py: skipped: {why}")
        return SKIPPED
    import triton
    triton_matmul, triton_kernel = make_triton_matmul(torch) if "triton" in args.peers else (None, None)
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "triton": triton.__version__, "layout": args.layout, "out_dtype": args.out_dtype,
           "rounds": args.rounds, "runs_per_round": args.runs, "l2_flush": True,
           "timer": "cuda events, one product each", "cases": {}}
    run_cases(args, out, lambda shape, dtype: run_case(torch, shape, dtype, args, triton_matmul,
                                                     triton_kernel), time.time)
    print(table(out, []))
    print("figures: " + json.dumps(speeds(out), sort_keys=True))  # the device check's figures
    return 0


def speeds(peers):
    """{case: {peer: speed relative to cuBLAS}} of a peers file (the one-line summary)."""
    return {key: {n: round(r["speed_vs_cublas"], 3) for n, r in case.get("peers", {}).items()
                  if n != "cublas" and r.get("speed_vs_cublas")}
            for key, case in peers.get("cases", {}).items()}


def run_cases(args, out, run_one, clock):
    """Every (type, shape) case into out["cases"], written to --json after each; none starts
    once --budget-s has passed. Types outer: a type's Triton kernels compile once for every
    shape, so that a budget that ends early still covers both shapes of the first type."""
    start = clock()
    for dtype in args.dtypes:
        for shape in args.shapes:
            key = case_key(dtype, shape)
            if clock() - start > args.budget_s:
                out["cases"][key] = {"status": f"skipped: out of time ({args.budget_s:g} s budget)"}
            else:
                out["cases"][key] = {"status": "ok", "peers": run_one(shape, dtype)}
            done = [f"{n} {r['median_s'] * 1e3:.3f} ms" if "median_s" in r else f"{n} {r['status']}"
                    for n, r in out["cases"][key].get("peers", {}).items()]
            print(f"{key}: {', '.join(done) or out['cases'][key]['status']}", flush=True)
            if args.json_path:
                write_json(args.json_path, out)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def bench_case(bench):
    """(case key, cuBLAS seconds, cutune's fastest seconds and its name) of a `cutune bench --json`."""
    t = bench.get("template", "")
    dtype = "bf16" if "bf16" in t else "fp16" if "fp16" in t else "fp32"
    results = bench.get("results", [])
    lib = results[0].get("median_s") if results and results[0].get("status") == "ok" else None
    ours = [r for r in results[1:] if r.get("status") == "ok" and r.get("median_s")]
    best = min(ours, key=lambda r: r["median_s"]) if ours else None
    return case_key(dtype, bench.get("shape", [0, 0, 0])), lib, best


def fmt_ms(s):
    return f"{s * 1e3:.3f}" if s else "-"


def fmt_x(a, b):
    return f"{a / b:.3f}" if a and b else "-"


def table(peers, benches):
    """Markdown: per case, times in ms and speeds relative to cuBLAS (within each timer)."""
    rows = {}
    for b in benches:
        key, lib, best = bench_case(b)
        rows.setdefault(key, {})["bench"] = (lib, best)
    for key, case in (peers or {}).get("cases", {}).items():
        rows.setdefault(key, {})["peers"] = case
    lines = ["| case | cuBLAS ms | cutune ms | cutune x cuBLAS | cutune config | "
             "Triton ms | Triton x cuBLAS | Inductor ms | Inductor x cuBLAS | torch.mm ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(rows, key=lambda k: (k.split()[1], k.split()[0])):
        lib, best = rows[key].get("bench", (None, None))
        ps = rows[key].get("peers", {}).get("peers", {})

        def peer(n):
            r = ps.get(n, {})
            return r.get("median_s"), r.get("speed_vs_cublas")
        tri, tri_x = peer("triton")
        ind, ind_x = peer("inductor")
        anchor, _ = peer("cublas")
        cfg = best["name"] if best else "-"
        lines.append(f"| {key} | {fmt_ms(lib)} | {fmt_ms(best and best['median_s'])} | "
                     f"{fmt_x(lib, best and best['median_s'])} | {cfg} | {fmt_ms(tri)} | "
                     f"{f'{tri_x:.3f}' if tri_x else '-'} | {fmt_ms(ind)} | "
                     f"{f'{ind_x:.3f}' if ind_x else '-'} | {fmt_ms(anchor)} |")
    return "\n".join(lines)


def load_json(path):
    """The JSON object in a file, or None. A step's output file may hold stderr lines around
    the object (the device check keeps both in one file), or half of one when it was killed."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            return None
        if start == 0 or text[start - 1] == "\n":
            try:
                return decoder.raw_decode(text, start)[0]
            except ValueError:
                pass
        pos = start + 1


def best_indices(bench, n):
    """The configuration indices of a bench output's n fastest timed configurations."""
    ours = [r for r in bench.get("results", [])[1:] if r.get("status") == "ok" and r.get("median_s")
            and r.get("name", "").split()[-1].isdigit()]
    ours.sort(key=lambda r: r["median_s"])
    return [int(r["name"].split()[-1]) for r in ours[:n]]


def print_table(args):
    peers = load_json(args.table)
    benches = [b for b in (load_json(p) for p in args.bench) if b]
    print(table(peers, benches))
    return 0


def self_test():
    # Interleaving: every peer `runs` times a round, the first peer rotating; the medians.
    order = []

    def fake_timer(fn, runs):
        order.append(fn())
        return [fn.cost] * (runs - 1) + [fn.cost * 10]  # one slow outlier a round

    def peer(name, cost):
        f = lambda: name  # noqa: E731
        f.cost = cost
        return f
    fns = {"cublas": peer("cublas", 2e-4), "triton": peer("triton", 3e-4), "inductor": peer("inductor", 1e-4)}
    times, per_round = time_interleaved(fns, 3, 5, fake_timer)
    assert order == ["cublas", "triton", "inductor", "triton", "inductor", "cublas",
                     "inductor", "cublas", "triton"], order
    assert len(times["triton"]) == 15 and median(times["triton"]) == 3e-4
    assert per_round["cublas"] == [2e-4] * 3
    # Arguments.
    a = parse_args(["--shapes", "128,64,32", "--dtypes", "bf16", "--peers", "cublas,triton"])
    assert a.shapes == [(128, 64, 32)] and a.dtypes == ["bf16"] and a.peers == ["cublas", "triton"]
    for bad in ["1,2", "0,1,1", "a,b,c", "1,2,3,4"]:
        try:
            parse_shape(bad)
            raise AssertionError(f"{bad} parsed")
        except ValueError:
            pass
    # The table: cutune's fastest configuration from a bench output, peers from a peers file.
    bench = {"template": "gemm_fp16_wgmma_nt", "shape": [4096, 4096, 4096], "results": [
        {"name": "cublas_gemm_ex", "status": "ok", "median_s": 2.0e-4},
        {"name": "--config 7", "status": "ok", "median_s": 2.5e-4},
        {"name": "--config 9", "status": "ok", "median_s": 1.6e-4},
        {"name": "--config 11", "status": "invalid"}]}
    peers = {"cases": {"fp16 4096,4096,4096": {"status": "ok", "peers": {
        "cublas": {"median_s": 2.1e-4, "speed_vs_cublas": 1.0},
        "triton": {"median_s": 2.8e-4, "speed_vs_cublas": 0.75},
        "inductor": {"status": "failed: x"}}},
        "bf16 8192,8192,8192": {"status": "skipped: out of time (1 s budget)"}}}
    assert speeds(peers) == {"fp16 4096,4096,4096": {"triton": 0.75}, "bf16 8192,8192,8192": {}}
    t = table(peers, [bench])
    row = [line for line in t.splitlines() if line.startswith("| fp16 4096")]
    assert row == ["| fp16 4096,4096,4096 | 0.200 | 0.160 | 1.250 | --config 9 | 0.280 | 0.750 | - | - "
                   "| 0.210 |"], t
    assert "| bf16 8192,8192,8192 | - |" in t, t
    assert math.isclose(bench_case(bench)[2]["median_s"], 1.6e-4)
    assert best_indices(bench, 3) == [9, 7]
    # A step's file: stderr lines around the JSON object.
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        # The cases: types outer, each written as it ends, none started after the budget
        # (each fake case takes 40 s of a 50 s budget: the second starts at 40 s, the third not).
        args = parse_args(["--shapes", "64,64,64", "128,128,128", "--budget-s", "50",
                           "--json", os.path.join(d, "peers.json")])
        now, ran, cases = [0.0], [], {"cases": {}}

        def one(shape, dtype):
            ran.append((dtype, shape))
            now[0] += 40
            if len(ran) > 1:  # the earlier cases are on disk already
                with open(args.json_path) as f:
                    assert len(json.load(f)["cases"]) == len(ran) - 1
            return {"cublas": {"status": "ok", "median_s": 1e-3}}
        import contextlib
        with contextlib.redirect_stdout(io.StringIO()):
            run_cases(args, cases, one, lambda: now[0])
        assert ran == [("fp16", (64, 64, 64)), ("fp16", (128, 128, 128))], ran
        assert cases["cases"]["bf16 64,64,64"]["status"].startswith("skipped: out of time"), cases
        with open(args.json_path) as f:
            assert len(json.load(f)["cases"]) == 4
        path = os.path.join(d, "step.txt")
        with open(path, "w") as f:
            f.write("warning: {not json}\n" + json.dumps(bench, indent=1) + "\nnote: done\n")
        assert load_json(path) == bench
        with open(path, "w") as f:
            f.write('{"results": [')  # killed half way
        assert load_json(path) is None
        assert load_json(os.path.join(d, "absent.json")) is None
    print("gemm_peers.py: self-test ok")
    return 0


def main(argv):
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    if args.table:
        return print_table(args)
    if args.best:
        bench = load_json(args.bench[0]) if len(args.bench) == 1 else None
        print(" ".join(str(i) for i in best_indices(bench or {}, args.best)))
        return 0 if bench else 1
    return measure(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
