"""``npm test`` in sdk-js/: the Node test runner's unit and conformance tests (conformance/*.json), the bundle
size budget, the hash implementations against node:crypto."""

from __future__ import annotations

import re

from .conftest import install, run_npm


def test_npm_test_passes() -> None:
    install()
    done = run_npm("test")
    summary = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", done.stdout, re.MULTILINE))
    assert summary.get("fail") == "0" and int(summary.get("pass", 0)) >= 20, done.stdout[-3000:]
