#!/usr/bin/env bash
# Sets up (dependencies, build) and runs every test. Tests labelled `gpu` skip visibly where
# no GPU is present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/cmake/build.sh"
build="${CUTUNE_BUILD_DIR:-$root/build}"
ctest --test-dir "$build" -j "${CUTUNE_JOBS:-$(nproc)}" --output-on-failure "$@"
