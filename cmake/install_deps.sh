#!/usr/bin/env bash
# Installs the Debian packages cutune builds against, skipping any already present.
# Non-interactive; safe to run repeatedly. The CUDA toolkit is expected at /usr/local/cuda.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  ccache       # rebuilds of other checkouts (worktrees, CI's clone) reuse objects; optional
  libxgboost-dev libfmt-dev nlohmann-json3-dev libcli11-dev catch2
  libboost-context-dev zlib1g-dev
  libeigen3-dev  # the Gaussian process of the first trials (cost_model/gaussian_process.cc)
  rapidjson-dev  # Kernel Tuner's caches, read event by event (src/replay/kt_cache.cc)
  gnuplot-nox  # the plots of `cutune report`
  chromium     # tests/report renders the report page headless (~350 MB, 14 s to install here)
  libopenmpi-dev openmpi-bin
  python3-pip  # installs nvdisasm's wheel below when the toolkit lacks it
  python3-venv python3-dev  # the Python package's environment and headers (.venv below)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all packages present"
fi

if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install_deps: the CUDA toolkit was not found at /usr/local/cuda" >&2
  exit 1
fi

# nvdisasm (for `cutune sass` and tests/sass): the toolkit's, or NVIDIA's wheel for CUDA 13
# (nvidia-cuda-nvdisasm puts it in site-packages/nvidia/cu13/bin, where cutune looks).
nvdisasm_present() {
  command -v nvdisasm >/dev/null 2>&1 && return 0
  [[ -x /usr/local/cuda/bin/nvdisasm ]] && return 0
  local site
  while read -r site; do
    [[ -x "$site/nvidia/cu13/bin/nvdisasm" ]] && return 0
  done < <(python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  return 1
}
if nvdisasm_present; then
  echo "install_deps: nvdisasm present"
else
  echo "install_deps: installing nvdisasm from the nvidia-cuda-nvdisasm wheel (pip --user)"
  # Debian's Python is "externally managed"; a --user install of one binary wheel is safe.
  # Optional: without it `cutune sass` says where it looked and the SASS tests skip visibly.
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --user --quiet --disable-pip-version-check \
    'nvidia-cuda-nvdisasm>=13,<14' ||
    echo "install_deps: warning: pip could not install nvidia-cuda-nvdisasm" >&2
  nvdisasm_present ||
    echo "install_deps: warning: no nvdisasm; cutune sass and tests/sass will say so" >&2
fi

# The Python package (src/python): a virtual environment in .venv with nanobind (its native
# loader), scikit-build-core (`pip install .`), pytest and pandas (tests/python), from PyPI.
# Optional: without it the package's native loader is not built and its tests skip visibly.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import nanobind, pytest, scikit_build_core, pandas' 2>/dev/null; then
  echo "install_deps: Python environment present (.venv)"
else
  echo "install_deps: making the Python environment .venv (nanobind, scikit-build-core, pytest, pandas)"
  { python3 -m venv "$venv" &&
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      'nanobind>=2,<4' 'scikit-build-core>=0.10,<2' 'pytest>=7' pandas; } ||
    echo "install_deps: warning: no Python environment; the Python package's tests will skip" >&2
fi
