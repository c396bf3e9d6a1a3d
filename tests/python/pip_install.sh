#!/usr/bin/env bash
# `pip install .` from the checkout into a fresh virtual environment, then what a new user
# runs first (import cutune, list the operators, the installed command), then tests/python
# against the installed package and command. Usage:
#   pip_install.sh PYTHON VENV_DIR
# ccache reuses the CMake build's objects (pyproject.toml's build-dir sits one folder below
# the checkout, as build/ does), so this costs a link, not a rebuild.
set -euo pipefail
python="$1"
venv="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$venv"
"$python" -m venv "$venv"
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
# The compiler CMake's own build used (`c++`), so that ccache's keys match it.
export CXX="${CXX:-c++}"
unset CUTUNE_BINARY
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root"
cd "$venv"  # not the checkout, so that `import cutune` is the installed package
"$venv/bin/python" -c '
import cutune
names = [o["computation"] for o in cutune.ops()]
assert "gemm" in names and "conv2d" in names, names
assert cutune._command.binary().startswith(__import__("sys").prefix), cutune._command.binary()
print("import cutune: ops", names)
'
"$venv/bin/cutune" --version
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'pytest>=7'
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$root/tests/python"
