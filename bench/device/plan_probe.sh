# shellcheck shell=bash disable=SC2154  # run_step, $bin, $work, ... are device_check.sh's
# The probe plan of the device check (issue 50, item 6), sourced by device_check.sh, whose
# run_step, record, log and folders it uses:
#
#   bash PACK/device_check.sh --plan probe [--deadline 450] [--sample-log LOG]
#
# Why cutune's Hopper GEMMs trail cuBLAS, measured in one call of at most 8 minutes (the
# deadline's default for this plan is 450 s), most valuable first, each step capped by the
# smaller of its cap and what is left:
#   1. named configurations side by side with cuBLAS, one `cutune bench` per shape: fp16 4096^3
#      first (the H200 best 128x96 and its raster/pipe variants, 128x128, 128x256 with and
#      without tiles_per_block, 256x128, ping-pong, and the template's reference configurations
#      as `cutune space --json` lists them, so that new references are timed without naming
#      indices);
#   2. ncu (--clock-control none, names checked against ncu's own list first): which kernels
#      cuBLAS launches (its name, grid and block), then one profile each of cuBLAS's kernel and
#      of our three fastest from step 1: SM clock, tensor pipe, L2 and DRAM throughput, warp
#      stalls (per SASS instruction in the source page);
#   3. the peers on the same GPU, timed as bench times (bench/gemm_peers.py: torch.mm's cuBLAS,
#      an autotuned Triton kernel, torch.compile max-autotune), fp16 at 4096^3 and 8192^3, then
#      bf16 (Inductor's autotuning takes some 30-60 s a case: the last may not fit);
#   4. bf16 4096^3, fp16 and bf16 8192^3 and the fp32 SGEMM 4096^3 (8x16-a-thread tiles) benched
#      as in 1;
#   5. the search's start on a never-seen shape (bf16 4096^3, 32 trials from no records): with the
#      analytical prior, without it, and random (about 2 minutes at most);
#   6. a uniform random sample of the fp16 wgmma 4096^3 space (nt), measured by `cutune tune
#      --tuner random` for what is left of the deadline, then written as a Kernel Tuner cache
#      that `cutune tune --replay` and `cutune replay` read. At about 3 configurations a second
#      (the H200's wgmma 4096^3 rate: 60 trials in 17-22 s, compiles on 16 cores included),
#      1,000 take 5-6 minutes. Steps 1-5 expect about 7 of the first call's 7.5 minutes, so it
#      leaves the sample little or nothing; a second call,
#      `--only '^probe_(sample|prior_study)' --sample-log LOG --deadline 330`, continues the log of
#      the first (the seed is fixed: the same draws, the measured ones skipped) toward the 1,000;
#      then bench/prior_study reads it: the prior's order against random and the references first.
# summary.md ends with the table cutune / cuBLAS / Triton / Inductor per shape.
#
# $OUT: the check's four files, plus the sample (probe_sample_fp16_wgmma_nt_4096.json.gz, the
# cache; probe_sample_fp16_wgmma_nt_4096.jsonl, its log) and probe_ncu.tgz (the ncu reports):
# seven at most.

probe_sample_name=probe_sample_fp16_wgmma_nt_4096

# A configuration of the wgmma GEMM templates by its knobs: bm bn stages raster epilogue
# mma_pipe tiles_per_block pingpong. Knobs keep their meaning when a template gains knobs (a
# knob added later takes its "omitted" value) or its indices move.
probe_knobs() {
  printf '{"knobs":{"block_m":%s,"block_n":%s,"block_k":64,"stages":%s,"warpgroups":2,"swizzle":128,"copy_bytes":16,"raster_group":%s,"split_k":1,"split_k_wide":0,"epilogue":%s,"loads":1,"producer":1,"mma_pipe":%s,"tiles_per_block":%s,"pingpong":%s}}' "$@"
}

# The configurations of the gap note (../shared/notes/hopper-gemm-gap.md §5b), by name.
probe_named() {
  case $1 in
    A0) probe_knobs 128 96 6 1 0 0 1 0 ;;    # the H200 best (524785 in today's nt space)
    A1) probe_knobs 128 96 6 8 0 0 1 0 ;;    # its raster 8
    A2) probe_knobs 128 96 6 8 1 1 1 0 ;;    # and paired stores, wgmmas in flight
    B1) probe_knobs 128 128 4 8 2 0 1 0 ;;
    C0) probe_knobs 128 256 4 8 1 0 1 0 ;;
    C1) probe_knobs 128 256 4 8 1 1 1 0 ;;
    C4) probe_knobs 128 256 4 8 1 1 4 0 ;;
    C8) probe_knobs 128 256 4 8 1 1 8 0 ;;
    D1) probe_knobs 256 128 4 8 1 1 1 0 ;;
    D4) probe_knobs 256 128 4 8 1 1 4 0 ;;
    P8) probe_knobs 128 128 4 8 1 1 8 1 ;;   # ping-pong
    *) echo "plan_probe.sh: no configuration named $1" >&2; return 2 ;;
  esac
}

# The SGEMM thread tiles of cuBLAS's size (gap note §3/§4) in the fp32 template gemm_nn:
# 128x128x8 at 8x16 a thread (5059843 in today's space) and the 8x8 hand-tuned reference
# (5059343), with 128x256 at 8x16 (5059848) and 256x128 at 16x8 (5059444).
probe_sgemm() {  # block_m block_n thread_m thread_n
  printf '{"knobs":{"block_m":%s,"block_n":%s,"block_k":8,"thread_m":%s,"thread_n":%s,"warp_n":8,"frag_m":4,"frag_n":4,"vec_load":4,"smem_pad":4,"double_buffer":1,"unroll_k":1}}' "$@"
}

# The indices of a template's reference configurations at a shape, from `cutune space --json`
# (space-separated; nothing when it lists none). Its keys are sorted, and none after
# "references" holds an "index".
probe_references() {  # op template shape
  LD_LIBRARY_PATH="$(program_path)" "$bin/cutune" space "$1" --template "$2" --shape "$3" --json 2> /dev/null |
    sed -n '/^  "references":/,$p' | grep -o '"index": *[0-9]*' | grep -o '[0-9]*$' | paste -sd' ' -
}

# The configuration JSON of a name: a wgmma one (probe_named) or sgemm:BM:BN:TM:TN.
probe_config() {
  if [[ $1 == sgemm:* ]]; then
    local _ bm bn tm tn
    IFS=: read -r _ bm bn tm tn <<<"$1"
    probe_sgemm "$bm" "$bn" "$tm" "$tn"
  else
    probe_named "$1"
  fi
}

# Whether a configuration is one of the template's (all knobs known, constraints met):
# `cutune show` says so in a fraction of a second, where one bad --config would make bench
# refuse them all (a template's knobs or constraints may have changed since this was written).
probe_valid() {  # op template shape config
  local shown
  shown=$(LD_LIBRARY_PATH="$(program_path)" "$bin/cutune" show "$1" --template "$2" --shape "$3" \
    --config "$4" --json 2> /dev/null) && grep -q '"constraint_violation": null' <<<"$shown"
}

# One `cutune bench` of named configurations and references beside cuBLAS: STEP CAP OP
# TEMPLATE SHAPE NAMES...; the references come from $work/refs_TEMPLATE_SHAPE (filled in the
# background at the start). Names whose configuration the template refuses are logged and left
# out.
probe_bench() {
  local step=$1 cap=$2 op=$3 template=$4 shape=$5
  shift 5
  local configs=() names=("$@") i pids=()
  if [[ $dry_run == 0 && $device_ok == 1 ]] && { [[ -z $only ]] || [[ $step =~ $only ]]; }; then
    for i in "${!names[@]}"; do
      probe_valid "$op" "$template" "$shape" "$(probe_config "${names[$i]}")" && touch "$work/valid_${step}_$i" &
      pids+=($!)
    done
    wait "${pids[@]}"
    for i in "${!names[@]}"; do
      if [[ -e "$work/valid_${step}_$i" ]]; then
        configs+=("$(probe_config "${names[$i]}")")
      else
        log "$step: ${names[$i]} left out: $template refuses $(probe_config "${names[$i]}")"
      fi
    done
  else
    for i in "${!names[@]}"; do configs+=("$(probe_config "${names[$i]}")"); done
  fi
  [[ -n ${probe_refs_pid[${template}_$shape]:-} ]] && wait "${probe_refs_pid[${template}_$shape]}" 2> /dev/null
  local refs
  refs=$(cat "$work/refs_${template}_${shape}" 2> /dev/null)
  # shellcheck disable=SC2206
  configs+=($refs)
  run_step "$step" "$cap" configs -- "$bin/cutune" bench "$op" --shape "$shape" --template "$template" \
    --rounds 3 --seconds 1 --json --config "${configs[@]}"
}

# A step that cannot run for want of an earlier one's result (unless --only leaves it out).
probe_skip() {  # name why
  [[ -n $only ]] && ! [[ $1 =~ $only ]] && return
  record "$1" "$2" 0
}

# Writes the plan's part of summary.md: the table of bench/gemm_peers.py --table.
probe_table() {
  local benches=()
  for f in "$logs"/probe_bench_*.txt; do [[ -s $f ]] && benches+=("$f"); done
  [[ ${#benches[@]} -gt 0 || -s "$logs/probe_peers.json" ]] || return 0
  {
    echo "## cutune / cuBLAS / Triton / Inductor"
    echo
    echo "Times in ms, medians with the L2 flushed; 'x cuBLAS' is cuBLAS's time over the other's,"
    echo "both taken by one timer (cutune's by \`cutune bench\`, Triton's and Inductor's by"
    echo "gemm_peers.py beside torch.mm, whose time is the last column). C is fp32."
    echo
    python3 "$pack/python/gemm_peers.py" --table "$logs/probe_peers.json" \
      ${benches[0]:+--bench "${benches[@]}"} 2>&1 || echo "(no table: python3 failed)"
  } > "$work/plan_summary.md.tmp" && mv "$work/plan_summary.md.tmp" "$work/plan_summary.md"
  write_summary
}

# Figures of the plan's kinds of step (figures_of hands unknown kinds here): a script's
# `figures: {JSON}` line; the sample's tune figures (its rate sizes the next call) and the
# records its log holds, earlier calls' included (one a line).
plan_figures() {  # kind file
  case $1 in
    line) local f; f=$(grep '^figures: {' "$2" | tail -1 | sed 's/^figures: //'); printf '%s' "${f:-{\}}" ;;
    sample)
      local log="$out/$probe_sample_name.jsonl" n ok tune
      n=$(grep -c . "$log" 2> /dev/null)
      ok=$(grep -c '"status":"ok"' "$log" 2> /dev/null)
      tune=$(figures_of tune "$2" $((2 * 4096 * 4096 * 4096)))
      printf '%s, "log_records": %s, "log_ok": %s}' "${tune%\}}" "${n:-0}" "${ok:-0}" ;;
    *) printf '{}' ;;
  esac
}

plan_probe() {
  local s4=4096,4096,4096 s8=8192,8192,8192 ncu_dir="$work/ncu" py="$pack/python" t s
  mkdir -p "$ncu_dir"
  # Python and ncu with the machine's own libraries (run_step gives a command the pack's, which
  # are for cutune): this script's environment is still the one it was started with.
  local system=(env -u LD_LIBRARY_PATH)
  [[ -n ${LD_LIBRARY_PATH:-} ]] && system=(env "LD_LIBRARY_PATH=$LD_LIBRARY_PATH")
  # The references of each template and shape, listed on the CPU while the GPU works (not in a
  # dry run: nothing would read them).
  declare -gA probe_refs_pid=()
  local wanted=1
  [[ -n $only ]] && ! [[ probe_bench_fp16_4096 =~ $only || probe_bench_bf16_4096 =~ $only ||
    probe_bench_fp16_8192 =~ $only || probe_bench_bf16_8192 =~ $only ]] && wanted=0
  if [[ $dry_run == 0 && $device_ok == 1 && $wanted == 1 ]]; then
    for t in gemm_fp16:gemm_fp16_wgmma_nt gemm_bf16:gemm_bf16_wgmma_nt; do
      for s in $s4 $s8; do
        probe_references "${t%%:*}" "${t#*:}" "$s" > "$work/refs_${t#*:}_$s" &
        probe_refs_pid[${t#*:}_$s]=$!
      done
    done
  fi
  run_step probe_gpu_state 15 other -- nvidia-smi \
    --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,enforced.power.limit,clocks_throttle_reasons.active \
    --format=csv

  # 1. The question first: fp16 4096^3, every named configuration and the references.
  probe_bench probe_bench_fp16_4096 75 gemm_fp16 gemm_fp16_wgmma_nt $s4 A0 A1 A2 B1 C0 C1 C4 D1 D4 P8

  # 2. ncu: the metric names it knows, cuBLAS's kernel, then cuBLAS and our fastest three.
  local ncu_run=("${system[@]}" python3 "$py/ncu_probe.py")
  local one=("$bin/cutune" bench gemm_fp16 --shape "$s4" --template gemm_fp16_wgmma_nt --rounds 1 --seconds 0.3)
  run_step probe_ncu_metrics 40 line -- "${ncu_run[@]}" metrics "$ncu_dir"
  run_step probe_ncu_list 40 line -- "${ncu_run[@]}" list "$ncu_dir" --exclude '^gemm_fp16_wgmma_nt$' \
    --target-ld "$(program_path)" -- "${one[@]}"
  local cublas
  cublas=$(cat "$ncu_dir/cublas_kernel.txt" 2> /dev/null)
  if [[ -n $cublas || $dry_run == 1 || $device_ok == 0 ]]; then
    run_step probe_ncu_cublas 45 line -- "${ncu_run[@]}" profile "$ncu_dir" cublas "${cublas:-cublas}" \
      --skip 3 --target-ld "$(program_path)" -- "${one[@]}"
  else
    probe_skip probe_ncu_cublas "skipped: the listing named no cuBLAS kernel"
  fi
  local best=() i
  read -r -a best <<<"$(python3 "$py/gemm_peers.py" --best 3 --bench "$logs/probe_bench_fp16_4096.txt" 2> /dev/null)"
  for i in 1 2 3; do
    local idx=${best[$((i - 1))]:-}
    if [[ -z $idx && $dry_run == 0 && $device_ok == 1 ]]; then
      probe_skip "probe_ncu_best$i" "skipped: step 1 timed fewer configurations"; continue
    fi
    run_step "probe_ncu_best$i" 40 line -- "${ncu_run[@]}" profile "$ncu_dir" "best${i}_${idx}" \
      gemm_fp16_wgmma_nt --skip 3 --target-ld "$(program_path)" -- "${one[@]}" --config "${idx:-0}"
  done
  if [[ -n $(ls "$ncu_dir" 2> /dev/null) ]]; then
    tar czf "$out/probe_ncu.tgz" -C "$work" ncu 2> /dev/null
  fi

  # 3. The peers, on the same GPU; no case starts in the last 30 s of the step's cap.
  local cap=150 left
  left=$(( $(remaining) - 10 ))
  (( left < cap )) && cap=$left
  run_step probe_peers "$cap" line -- "${system[@]}" PYTHONUNBUFFERED=1 python3 "$py/gemm_peers.py" --shapes $s4 $s8 --dtypes fp16,bf16 --rounds 5 --runs 10 \
    --budget-s $(( cap > 40 ? cap - 30 : 10 )) --json "$logs/probe_peers.json"
  probe_table

  # 4. The other shapes and types.
  probe_bench probe_bench_bf16_4096 40 gemm_bf16 gemm_bf16_wgmma_nt $s4 A0 A2 C4 D4 P8
  probe_bench probe_bench_fp16_8192 50 gemm_fp16 gemm_fp16_wgmma_nt $s8 A0 A1 C1 C4 C8 D4 P8
  probe_bench probe_bench_bf16_8192 40 gemm_bf16 gemm_bf16_wgmma_nt $s8 A1 C4 C8 D4 P8
  probe_bench probe_bench_fp32_4096 40 gemm gemm_nn $s4 sgemm:128:128:8:8 sgemm:128:128:8:16 \
    sgemm:128:256:8:16 sgemm:256:128:16:8
  probe_table

  # 5. The search's start on a shape it has never seen (issue 50 item 5): bf16 4096^3 from no
  # records, 32 trials each, with the analytical prior, without it (today's default before the
  # prior: the references, then a random batch and the Gaussian process), and random.
  local prior_tune=("$bin/cutune" tune gemm_bf16 --shape "$s4" --template gemm_bf16_wgmma_nt
    --trials 32 --batch 16 --remeasure-top 0 --seed 5 --quiet --json)
  run_step probe_prior_on 45 tune $((2 * 4096 * 4096 * 4096)) -- "${prior_tune[@]}" --prior on \
    --log "$work/prior_on.jsonl"
  run_step probe_prior_off 45 tune $((2 * 4096 * 4096 * 4096)) -- "${prior_tune[@]}" --prior off \
    --log "$work/prior_off.jsonl"
  run_step probe_prior_random 45 tune $((2 * 4096 * 4096 * 4096)) -- "${prior_tune[@]}" --tuner random \
    --log "$work/prior_random.jsonl"

  # 6. The random sample, for what is left (30 s kept for the cache). tune stops at SIGINT after
  # logging the batch in flight (batches of 16, a few seconds): 15 s before the step's cap.
  local resume=()
  if [[ -n $sample_log ]]; then
    cp "$sample_log" "$out/$probe_sample_name.jsonl" && resume=(--resume)
  fi
  left=$(( $(remaining) - 30 ))
  (( left < 20 )) && left=20
  run_step probe_sample "$left" sample -- timeout -s INT -k 10 $(( left - 15 )) "$bin/cutune" tune gemm_fp16 \
    --shape "$s4" --template gemm_fp16_wgmma_nt --tuner random --seed 50 --trials 1000 --batch 16 \
    --remeasure-top 0 --log "$out/$probe_sample_name.jsonl" --quiet --json "${resume[@]}"
  if [[ -s "$out/$probe_sample_name.jsonl" || $dry_run == 1 || $device_ok == 0 ]]; then
    run_step probe_sample_cache 15 other -- "$bin/cutune" cache "$out/$probe_sample_name.jsonl" \
      --out "$work/$probe_sample_name.json" --force &&
      gzip -9 -c "$work/$probe_sample_name.json" > "$out/$probe_sample_name.json.gz"
  else
    probe_skip probe_sample_cache "skipped: the sample logged nothing"
  fi
  # The prior's order on the sample against random orders and the references first (CPU only).
  if [[ -s "$out/$probe_sample_name.jsonl" || $dry_run == 1 || $device_ok == 0 ]]; then
    run_step probe_prior_study 20 other -- "$bin/prior_study" --log "$out/$probe_sample_name.jsonl" \
      --first 32
  else
    probe_skip probe_prior_study "skipped: the sample logged nothing"
  fi
  probe_table
}
