#!/usr/bin/env bash
# Creates benchmarks/.venv-shuffle-peer with the reference shuffle bound, for benchmarks/shuffle_amplification.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv-shuffle-peer"
echo '*' > "$here/.venv-shuffle-peer/.gitignore"  # the environment is never committed
"$here/.venv-shuffle-peer/bin/pip" install -q -r "$here/requirements-shuffle-peer.txt"
"$here/.venv-shuffle-peer/bin/pip" install -q --no-deps ldp-hierarchical-mechanism==0.1.3
echo "ready: python $here/shuffle_amplification.py (it finds $here/.venv-shuffle-peer/bin/python)"
