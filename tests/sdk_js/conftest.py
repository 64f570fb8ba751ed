"""The JavaScript SDK (sdk-js/) is tested from pytest: its Node test suite, the statistical conformance of its
reports with the Python estimators, and a real browser against a real collector."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SDK_JS = Path(__file__).resolve().parents[2] / "sdk-js"


def run_npm(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    "npm in sdk-js/; fails the test with npm's output (never skips: the README's test command installs Node)"
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed: apt-get install nodejs npm (the README's test command does)")
    done = subprocess.run([npm, *args], cwd=SDK_JS, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "NO_UPDATE_NOTIFIER": "1", "npm_config_fund": "false",
                               "npm_config_audit": "false"})
    if done.returncode != 0:
        pytest.fail(f"npm {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}",
                    pytrace=False)
    return done


def install() -> None:
    "``npm ci`` unless node_modules already holds exactly package-lock.json (npm's own record of the install)"
    installed = SDK_JS / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < (SDK_JS / "package-lock.json").stat().st_mtime:
        run_npm("ci")


@pytest.fixture(scope="session")
def sdk_js() -> Path:
    "sdk-js/ installed and built (dist/)"
    install()
    run_npm("run", "build")
    return SDK_JS
