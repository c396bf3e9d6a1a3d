#!/usr/bin/env bash
# Fails when any given binary has a DT_NEEDED entry on a CUDA library (the driver, NVRTC,
# cudart, cuBLAS, CUPTI, cuDNN, NVML): those are loaded at run time, so that a binary starts
# without them. Each binary must show at least libc, so that an unreadable file cannot pass.
set -uo pipefail
status=0
for binary in "$@"; do
  needed=$(readelf -d "$binary" 2>&1 | awk '/\(NEEDED\)/ {print $NF}' | tr -d '[]')
  if ! grep -q '^libc\.so' <<<"$needed"; then
    echo "$binary: no DT_NEEDED on libc (not an ELF file readelf can read?)"; status=1; continue
  fi
  cuda=$(grep -E '^lib(cuda|nvrtc|cudart|cublas|cublasLt|cupti|cudnn[a-z_]*|nvidia-ml)\.so' <<<"$needed")
  if [[ -n "$cuda" ]]; then
    echo "$binary needs $(tr '\n' ' ' <<<"$cuda")"; status=1
  else
    echo "$binary: no CUDA library among $(wc -l <<<"$needed") DT_NEEDED entries"
  fi
done
exit $status
