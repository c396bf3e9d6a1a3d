#!/usr/bin/env python3
"""One line per reference configuration of the main templates: what `cutune sass` reads from
the sm_90 machine code (registers, spills, main-loop size, math share, integer instructions,
where the first HMMA and BAR sit in the loop, shared and global load kinds).

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
