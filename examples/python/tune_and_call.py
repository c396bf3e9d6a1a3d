"""Tune a GEMM and a convolution from Python, export them, and call them from PyTorch.

    pip install .            # from a clone: the cutune command and package
    python examples/python/tune_and_call.py --trials 200

On a machine without a GPU, `--device emulator` tunes in the CPU emulator (correctness only)
and stops after the export: calling the kernels needs a GPU and PyTorch.
"""

import argparse
import os
import time

import cutune


def progress(p):
    best = f"{p['best_s'] * 1e6:.1f} us" if p["best_s"] != float("inf") else "-"
    eta = f"{p['eta_s']:.0f}s" if p["eta_s"] is not None else "?"
    print(f"  [{p['done']:4d}/{p['trials']}] valid {p['valid']} | best {best} | ETA {eta}")


def timed(fn, rounds=50):
    import torch
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--device", default="gpu", choices=["gpu", "emulator"])
    parser.add_argument("--out", default="cutune_example")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    # The tasks: a GEMM in fp16 and ResNet-18's C7 convolution in NHWC fp16.
    gemm_shape = (2048, 2048, 2048) if args.device == "gpu" else (67, 45, 33)
    conv_shape = (1, 128, 28, 28, 256, 3, 3, 2, 1, 1)
    log = os.path.join(args.out, "tuning.jsonl")
    print("tuning gemm", gemm_shape)
    cutune.tune("gemm", gemm_shape, dtype="fp16", layout="nt", trials=args.trials,
                device=args.device, log=log, callback=progress, resume=os.path.exists(log))
    if args.device == "gpu":
        print("tuning conv2d", conv_shape)
        cutune.tune("conv2d", conv_shape, dtype="fp16", layout="nhwc", trials=args.trials,
                    log=log, resume=True, callback=progress)
    exported = os.path.join(args.out, "kernels")
    print(cutune.export(log, exported)["written"])
    if args.device != "gpu":
        return

    import torch
    import torch.nn.functional as F

    kernels = cutune.load(exported)
    gemm = next(k for k in kernels if k.name.startswith("gemm"))
    m, n, k = gemm_shape
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)  # nt: B stored [N, K]
    c = torch.empty(m, n, device="cuda", dtype=torch.float32)
    gemm(a, b, out=c)
    expected = a.float() @ b.float().t()
    print(f"gemm: max error {(c - expected).abs().max().item():.3g}, "
          f"cutune {timed(lambda: gemm(a, b, out=c)) * 1e6:.1f} us, "
          f"torch.matmul {timed(lambda: torch.matmul(a, b.t())) * 1e6:.1f} us")

    op = cutune.torch.register(gemm, "example_gemm")
    compiled = torch.compile(lambda x, y: op(x, y) * 2)
    print("inside torch.compile:", torch.allclose(compiled(a, b), 2 * c))

    conv = next(k for k in kernels if k.name.startswith("conv2d"))
    batch, cin, h, w, cout, r, s, stride, pad, _ = conv_shape
    x = torch.randn(batch, h, w, cin, device="cuda", dtype=torch.float16)      # NHWC
    weight = torch.randn(r, s, cin, cout, device="cuda", dtype=torch.float16)  # RSCK
    y = conv(x, weight)
    reference = F.conv2d(x.permute(0, 3, 1, 2).float(), weight.permute(3, 2, 0, 1).float(),
                         stride=stride, padding=pad)
    print(f"conv2d: max error {(y.float().reshape(reference.permute(0, 2, 3, 1).shape) - reference.permute(0, 2, 3, 1)).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
