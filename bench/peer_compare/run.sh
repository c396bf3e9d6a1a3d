#!/usr/bin/env bash
# Kernel Tuner's strategies against cutune's tuners on the replayed caches (bench/README.md §7).
# Creates bench/peer_compare/.venv with kernel_tuner 1.5.0 on first use; not a dependency of
# cutune. Arguments go to peer_compare.py (--help).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import kernel_tuner' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'kernel_tuner==1.5.0'
fi
exec "$venv/bin/python" "$here/peer_compare.py" "$@"
