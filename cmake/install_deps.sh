#!/usr/bin/env bash
# Installs the Debian packages cutune builds against, skipping any already present.
# Non-interactive; safe to run repeatedly. The CUDA toolkit is expected at /usr/local/cuda.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libxgboost-dev libfmt-dev nlohmann-json3-dev libcli11-dev catch2
  libboost-context-dev zlib1g-dev
  gnuplot-nox  # the plots of `cutune report`
  chromium     # tests/report renders the report page headless (~350 MB, 14 s to install here)
  libopenmpi-dev openmpi-bin
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
