"""Running a measurement in another checkout: the benchmark scripts' shared helper.

A script that compares checkouts (``--root A --root B``) runs its measuring code in a fresh interpreter per
checkout, with ``PYTHONPATH`` at that checkout, so its ``client_sdk``, ``collector``, ``estimators`` and ``demo``
are the ones measured; the child prints one JSON line last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def run_json(root: Path, code: str, *args: object, what: str = "run") -> dict:
    "Run ``python -c code args`` against the checkout ``root``; the JSON object of its last output line"
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                          env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                          cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"{what} failed in {root}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])
