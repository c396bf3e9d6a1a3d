#!/usr/bin/env bash
# Kernel Tuner's strategies against cutune's tuners on the replayed caches (bench/README.md,
# "3. Search against Kernel Tuner"). Creates bench/peer_compare/.venv with kernel_tuner 1.5.0 on
# first use; not a dependency of cutune. Arguments go to peer_compare.py (--help).
# The raw runs (results*/kt_runs.jsonl, results*/cutune_runs.jsonl) are not in git; this script
# regenerates them (`run.sh kt ...`, `run.sh cutune ...`), and `run.sh report` writes the
# summaries from them (without them it says so in one line and exits 2).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import kernel_tuner' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'kernel_tuner==1.5.0'
fi
exec "$venv/bin/python" "$here/peer_compare.py" "$@"
