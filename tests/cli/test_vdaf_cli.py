"""``ldp-telemetry vdaf check-vectors``: one PASS/FAIL line per file, exit 1 on any failure."""

from __future__ import annotations

import json
import shutil

import click
from click.testing import CliRunner

from ldp_telemetry.cli import main
from tests.client_sdk.vdaf.vectors_dir import VENDORED


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_all_vendored_vectors_pass():
    files = sorted(VENDORED.glob("*.json"))
    assert files, f"no test vectors in {VENDORED}"
    result = run("vdaf", "check-vectors", str(VENDORED))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"PASS {p.stem}" for p in files]


def test_a_failing_or_unsupported_file_exits_1(tmp_path):
    shutil.copy(VENDORED / "Prio3Count_0.json", tmp_path)
    broken = json.loads((VENDORED / "Prio3Sum_0.json").read_text())
    broken["agg_result"] += 1
    (tmp_path / "Prio3Sum_0.json").write_text(json.dumps(broken))
    (tmp_path / "Mastic_0.json").write_text("{}")
    result = run("vdaf", "check-vectors", str(tmp_path))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("FAIL Mastic_0: unsupported")
    assert lines[1] == "PASS Prio3Count_0"
    assert lines[2].startswith("FAIL Prio3Sum_0: ") and "agg_result" in lines[2]


def test_an_empty_directory_fails(tmp_path):
    assert run("vdaf", "check-vectors", str(tmp_path)).exit_code == 1


def test_commands_are_documented():
    ctx = click.Context(main)
    group = main.get_command(ctx, "vdaf")
    assert group is not None and group.help
    command = group.get_command(ctx, "check-vectors")  # type: ignore[attr-defined]
    assert command.help and "PASS" in command.help
