#!/usr/bin/env bash
# Installs what is missing and builds cutune into build/ (Release with debug info, Ninja).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/cmake/install_deps.sh"
build="${CUTUNE_BUILD_DIR:-$root/build}"
# ccache (found by CMakeLists.txt) keys objects by paths relative to the checkout and not by
# the build folder, so that a clone in another folder reuses what this machine compiled before
# (the debug information then names the first folder's build directory).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
jobs="${CUTUNE_JOBS:-$(nproc)}"
if [[ ! -f "$build/build.ninja" ]]; then
  python=()
  if [[ -x "$root/.venv/bin/python" ]]; then python=(-DPython_EXECUTABLE="$root/.venv/bin/python"); fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python[@]}" >/dev/null
fi
cmake --build "$build" -j "$jobs"
