#!/usr/bin/env bash
# The device check: on a machine with one NVIDIA GPU, runs the gpu tests, tunes four GEMMs
# (300 trials each), benchmarks each against cuBLAS SGEMM (TF32 off) in the same harness, runs a
# short ResNet-18 suite (3 layers x 100 trials, cuDNN as reference and baseline) and benchmarks
# its first layer against cuDNN, and writes summary.json and summary.md under $OUT (default
# ./device_check_out). Budget: 8 min on an H200. CONV_ONLY=1 skips the GEMM part.
#
#   bench/device_check.sh [PACK_DIR]     PACK_DIR from bench/pack_device_build.sh (device_pack)
#
# Without a pack it builds with cmake/ninja (needs the host's dependencies, which a bare GPU
# machine lacks; the pack is the way there).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pack=${1:-$root/device_pack}
out=${OUT:-$root/device_check_out}
mkdir -p "$out"
start=$(date +%s)
log() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$out/device_check.log"; }

if [[ -f "$pack/env.sh" ]]; then
  source "$pack/env.sh"
  bin="$pack/bin"
else
  log "no pack at $pack: building"
  cmake -S "$root" -B "$root/build-device" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    ninja -C "$root/build-device" cutune cutune_test_worker test_gpu_measure test_worker_protocol test_gpu_conv test_conv_baseline export_example >/dev/null || { log "build failed"; exit 1; }
  bin="$out/bin"; mkdir -p "$bin"
  cp "$root"/build-device/src/cli/cutune "$root"/build-device/tests/gpu/{cutune_test_worker,test_gpu_measure,test_worker_protocol,test_gpu_conv} "$root"/build-device/bench/export_example "$bin/"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$out/nvidia_smi.csv" 2>&1 || true

# The gpu tests find their worker and the export example through these.
export CUTUNE_TEST_WORKER="$bin/cutune_test_worker" CUTUNE_EXPORT_EXAMPLE="$bin/export_example"
tests_json="[]"
for t in test_worker_protocol test_gpu_measure test_gpu_conv; do
  [[ -x "$bin/$t" ]] || continue
  log "running $t"
  timeout 240 "$bin/$t" -r compact > "$out/$t.txt" 2>&1
  rc=$?
  tests_json=$(python3 -c "import json,sys; a=json.loads(sys.argv[1]); a.append({'test':sys.argv[2],'rc':int(sys.argv[3])}); print(json.dumps(a))" "$tests_json" "$t" "$rc" 2>/dev/null || echo "$tests_json")
  log "$t exit $rc ($(tail -1 "$out/$t.txt"))"
done

shapes=("1024,1024,1024" "4096,4096,4096" "2048,2048,64" "127,4096,255")
[[ "${CONV_ONLY:-0}" == 1 ]] && shapes=()
results=()
for shape in "${shapes[@]}"; do
  name=gemm_${shape//,/x}
  log "tuning $name (300 trials)"
  timeout 100 "$bin/cutune" tune gemm --shape "$shape" --trials 300 --log "$out/$name.log" --quiet \
    > "$out/$name.tune.txt" 2>&1 || log "tune $name failed: $(tail -1 "$out/$name.tune.txt")"
  log "benchmarking $name against cuBLAS"
  timeout 60 "$bin/cutune" bench gemm --shape "$shape" --log "$out/$name.log" --json \
    > "$out/$name.bench.json" 2> "$out/$name.bench.err" || log "bench $name failed: $(tail -1 "$out/$name.bench.err")"
  results+=("$out/$name.bench.json")
done

if [[ -f "$out/gemm_1024x1024x1024.log" ]]; then
  log "exporting and running the exported kernels through the loader"
  "$bin/cutune" export "$out"/gemm_1024x1024x1024.log --out "$out/export" > "$out/export.txt" 2>&1 &&
    "$bin/export_example" "$out/export" >> "$out/export.txt" 2>&1
  log "export round trip exit $?"
fi

# A short ResNet-18 run: three layers (a 3x3, a strided 3x3 and a 1x1), transfer on, cuDNN
# (FMA math) as the reference of every candidate and as the baseline in the same harness.
log "tune-suite resnet18 C2,C7,C8 (100 trials each)"
timeout 200 "$bin/cutune" tune-suite resnet18 --layers C2,C7,C8 --trials 100 --log "$out/resnet18.log" \
  --quiet --json > "$out/resnet18.suite.json" 2> "$out/resnet18.suite.err" ||
  log "tune-suite failed: $(tail -1 "$out/resnet18.suite.err")"
log "benchmarking C2 against cuDNN"
timeout 60 "$bin/cutune" bench conv2d --shape 1,64,56,56,64,3,3,1,1,1 --log "$out/resnet18.log" --json \
  > "$out/conv_C2.bench.json" 2> "$out/conv_C2.bench.err" || log "bench C2 failed: $(tail -1 "$out/conv_C2.bench.err")"
results+=("$out/conv_C2.bench.json")
"$bin/cutune" export "$out/resnet18.log" --out "$out/export_conv" > "$out/export_conv.txt" 2>&1
log "conv export exit $?"

python3 - "$out" "$tests_json" "$(( $(date +%s) - start ))" "${results[@]}" <<'PY' || log "summary failed"
import json, os, sys
out, tests, seconds, files = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rows = []
for f in files:
    try:
        rows.append(json.load(open(f)))
    except Exception as e:
        rows.append({"file": os.path.basename(f), "error": str(e)})
suite = None
try:
    suite = json.load(open(os.path.join(out, "resnet18.suite.json")))
except Exception as e:
    suite = {"error": str(e)}
summary = {"seconds": seconds, "tests": tests, "bench": rows, "resnet18": suite}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
md = ["# cutune device check", "", f"{seconds} s in all.", "", "| test | exit |", "|---|---|"]
md += [f"| {t['test']} | {t['rc']} |" for t in tests]
md += ["", "| op | shape | library us | cutune us | cutune TFLOP/s | % fp32 peak | cutune/library speed |", "|---|---|---|---|---|---|---|"]
for r in rows:
    if "results" not in r:
        md.append(f"| {r.get('file')} | error: {r.get('error')} | | | | | |"); continue
    res = r["results"]; cb = res[0]; tu = res[1] if len(res) > 1 else {}
    f = lambda x, k, s=1e6: f"{x[k]*s:.1f}" if k in x else "-"
    md.append(f"| {r.get('op', 'gemm')} | {'x'.join(map(str, r['shape']))} | {f(cb,'median_s')} | {f(tu,'median_s')} | {f(tu,'tflops',1)} | {f(tu,'percent_of_fp32_peak',1)} | {r.get('ratio_to_baseline', r.get('ratio_to_cublas', float('nan'))):.3f} |")
if suite and "layers" in suite:
    md += ["", f"ResNet-18 (batch {suite['batch_size']}, {suite['trials']} trials/layer, {suite['seconds']:.0f} s): geometric-mean speedup over cuDNN {suite['geomean_speedup']}", "",
           "| layer | shape | reference | cuDNN us | tuned us | speedup |", "|---|---|---|---|---|---|"]
    for l in suite["layers"]:
        us = lambda v: f"{v*1e6:.1f}" if v else "-"
        md.append(f"| {l['name']} | {l['description']} | {l['reference']} | {us(l['cudnn_s'])} | {us(l['tuned_s'])} | {l['speedup'] if l['speedup'] else '-'} |")
elif suite:
    md += ["", f"ResNet-18 suite: {suite.get('error')}"]
open(os.path.join(out, "summary.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
log "done"
