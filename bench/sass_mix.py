#!/usr/bin/env python3
"""One line per reference configuration of the main templates: what `cutune sass` reads from
the sm_90 machine code (registers, spills, main-loop size, math share, integer instructions,
where the first HMMA and BAR sit in the loop, shared and global load kinds). Then every reference
configuration of the Hopper wgmma GEMMs at 4096^3 (as `cutune space --json` lists them): its
tile and what it turns on, registers, spills, shared memory, and the main loop's instructions per
HGMMA.

usage: bench/sass_mix.py [path/to/cutune]   (default build/src/cli/cutune)
Needs nvdisasm (cmake/install_deps.sh installs it); no GPU.
"""
import json
import subprocess
import sys

from one_line_parser import OneLineParser  # bench/, the script's folder

cli = OneLineParser(description="The SASS mix of the main templates' references.")
cli.add_argument("cutune", nargs="?", default="build/src/cli/cutune", help="the cutune binary")
CUTUNE = cli.parse_args().cutune
SGEMM_64 = {"knobs": {"block_m": 64, "block_n": 64, "block_k": 16, "thread_m": 4,
                      "thread_n": 4, "warp_n": 8, "frag_m": 4, "frag_n": 4, "vec_load": 4,
                      "smem_pad": 4, "double_buffer": 1, "unroll_k": 1}}
TASKS = [
    ["gemm", "--template", "gemm_nn", "--shape", "4096,4096,4096"],
    ["gemm", "--template", "gemm_nt", "--shape", "4096,4096,4096"],
    ["gemm", "--template", "gemm_nn", "--shape", "4096,4096,4096", "--config",
     json.dumps(SGEMM_64)],
    ["gemm_fp16", "--template", "gemm_fp16_nn", "--shape", "4096,4096,4096"],
    ["gemm_fp16", "--template", "gemm_fp16_nt", "--shape", "4096,4096,4096"],
    ["gemm_bf16", "--template", "gemm_bf16_nn", "--shape", "4096,4096,4096"],
    ["conv2d_fp16", "--template", "conv2d_fp16_nhwc", "--shape", "1,64,56,56,64,3,3,1,1"],
]

for task in TASKS:
    out = subprocess.run([CUTUNE, "sass", *task, "--arch", "sm_90", "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{' '.join(task[:3])}: {out.stderr.strip()}")
        continue
    d = json.loads(out.stdout)
    m = d["main_loop"]
    kinds = " ".join(f"{k}:{v}" for k, v in sorted(m["kinds"].items())
                     if k.startswith(("LDS", "LDG", "STS")) and k != "LDGDEPBAR")
    first = m["first"]
    print(f"{d['template']:<17} {d['config_index']:>8} regs {d['registers']:>3} "
          f"spill {d['spill_store_bytes']}/{d['spill_load_bytes']} loop {m['instructions']:>4} "
          f"math {100 * m['math_share']:5.1f}% int {m['classes']['integer']:>3} "
          f"HMMA@{first.get('HMMA', '-')} BAR@{first.get('BAR', '-')} {kinds}")

WGMMA = [["--dtype", "fp16", "--family", "wgmma", "--layout", "nt"],
         ["--dtype", "fp16", "--family", "wgmma", "--layout", "nt", "--out-dtype", "fp16"]]
print()
print(f"{'wgmma GEMM 4096^3 reference':<44} {'index':>10} regs spill   smem  loop HGMMA per")
for params in WGMMA:
    base = ["gemm", "--shape", "4096,4096,4096", *params]
    out = subprocess.run([CUTUNE, "space", *base, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{' '.join(params)}: {out.stderr.strip()}")
        continue
    for ref in json.loads(out.stdout)["references"]:
        k = ref["knobs"]
        on = [name for name in ("persistent", "last_wave_split", "pingpong", "mma_pipe")
              if k.get(name)]
        if k.get("tma_store"):
            on.append(f"tma_store={k['tma_store']}")
        if k.get("tiles_per_block", 1) > 1:
            on.append(f"tiles={k['tiles_per_block']}")
        if k.get("cluster_m", 1) > 1 or k.get("cluster_n", 1) > 1:
            on.append(f"cluster={k.get('cluster_m', 1)}x{k.get('cluster_n', 1)}")
        what = (f"{'out16 ' if '--out-dtype' in params else ''}{k['block_m']}x{k['block_n']} "
                f"{'tma' if k['loads'] else 'cp.async'} epi{k['epilogue']} {' '.join(on)}")
        sass = subprocess.run([CUTUNE, "sass", *base, "--arch", "sm_90", "--config",
                               str(ref["index"]), "--json"], capture_output=True, text=True)
        if sass.returncode != 0:
            print(f"{what:<44} {ref['index']:>10} {sass.stderr.strip()}")
            continue
        d = json.loads(sass.stdout)
        m = d["main_loop"]
        hgmma = m["kinds"].get("HGMMA", 0)
        per = f"{m['instructions'] / hgmma:5.2f}" if hgmma else "    -"
        print(f"{what:<44} {ref['index']:>10} {d['registers']:>4} "
              f"{d['spill_store_bytes'] + d['spill_load_bytes']:>5} "
              f"{d['dynamic_shared_bytes'] + d['static_shared_bytes']:>6} {m['instructions']:>5} "
              f"{hgmma:>5} {per}")
