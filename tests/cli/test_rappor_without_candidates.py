"""A Bloom-filter RAPPOR campaign without candidates, from the command line as a user runs it: ``campaign create``
says on one line that its reports will need candidates to be estimated, and ``report`` answers one clear line and
exit code 1 (the HTTP API's 409 ``candidates-required``), never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SPEC = {"name": "pages", "mechanism": "rappor", "rappor": {"k": 32, "h": 2, "m": 4}}
CLI = ("-c", "from ldp_telemetry.cli import main; main()")


def ldp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_create_warns_and_report_says_one_line_without_a_traceback(tmp_path: Path):
    (tmp_path / "pages.json").write_text(json.dumps(SPEC))
    created = ldp(tmp_path, "campaign", "create", "pages.json", "--db", "collector.db")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["name"] == "pages"
    (note,) = created.stderr.splitlines()
    assert note.startswith("warning: campaign 'pages' has no candidates")
    for output_format in ("table", "json"):
        done = ldp(tmp_path, "report", "pages", "--db", "collector.db", "--format", output_format)
        assert done.returncode == 1 and done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert line.startswith("Error: campaign 'pages' has no candidates") and "'candidates'" in line, line
    (tmp_path / "with.json").write_text(json.dumps({**SPEC, "candidates": ["/", "/about"]}))
    again = ldp(tmp_path, "campaign", "create", "with.json", "--db", "collector.db")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert json.loads(again.stdout)["version"] == 2
