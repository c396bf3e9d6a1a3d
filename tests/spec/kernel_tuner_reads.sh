#!/usr/bin/env bash
# What cutune writes, read by Kernel Tuner itself: installs Kernel Tuner from PyPI into a
# virtual environment in the build folder (once) and runs kernel_tuner_reads.py with it.
# Exits 77 (skipped, with the reason) where Kernel Tuner cannot be installed.
# usage: kernel_tuner_reads.sh CUTUNE_BINARY BUILD_FOLDER
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$2"
venv="$2/kernel-tuner-venv"
log="$2/kernel-tuner-pip.log"
if ! "$venv/bin/python" -c "import kernel_tuner" >/dev/null 2>&1; then
  if ! python3 -m venv "$venv" >"$log" 2>&1 ||
     ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
         "kernel_tuner==1.5.0" >>"$log" 2>&1; then
    echo "SKIPPED: cannot install Kernel Tuner 1.5.0 from PyPI into $venv ($(tail -n 1 "$log"))"
    exit 77
  fi
fi
exec "$venv/bin/python" "$here/kernel_tuner_reads.py" "$1"
