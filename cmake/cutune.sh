#!/usr/bin/env bash
# Sets up (dependencies, build) and runs cutune with the given arguments, e.g.
#   ./cmake/cutune.sh tune gemm --shape 1024,1024,1024 --trials 1000 --log gemm.jsonl
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/cmake/build.sh" >&2
exec "${CUTUNE_BUILD_DIR:-$root/build}/src/cli/cutune" "$@"
