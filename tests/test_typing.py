"""The library packages type-check with mypy at its default settings (the project's conventions: typed and linted)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ["client_sdk", "estimators", "collector", "ldp_telemetry"]


def test_mypy_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *PACKAGES], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
