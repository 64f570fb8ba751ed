#!/usr/bin/env bash
# Creates benchmarks/.venv-peers with the peer libraries and ldp-telemetry, for benchmarks/peers.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv-peers"
"$here/.venv-peers/bin/pip" install -q -r "$here/requirements-peers.txt"
"$here/.venv-peers/bin/pip" install -q -e "$here/.."
echo "ready: $here/.venv-peers/bin/python $here/peers.py"
