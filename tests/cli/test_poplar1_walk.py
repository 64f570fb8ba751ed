"""``ldp-telemetry poplar1 walk`` against a real leader and helper on loopback (SQLite files), and the poplar1
campaign's report before and after the walk: ``report --db`` and ``report --url`` say the same, the JSON report
matches report.schema.json, the dashboard's panel says what the table says; every failure is one line.  Each test
runs on both aggregators' backends: SQLite files, then two databases of the session's PostgreSQL cluster."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import requests
from click.testing import CliRunner

from estimators.report import report_schema
from ldp_telemetry.cli import main
from tests.collector.conftest import postgres_cluster  # noqa: F401  (the fixture: the session's PostgreSQL cluster)
from tests.collector.distributed.test_e2e_devices import Aggregators, on_backend
from tests.collector.helpers import BACKENDS, free_port
from tests.collector.kinds.poplar1.test_processes import HEAVY, TAMPERED, upload, values

NAME = "walked"


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    with on_backend(request, tmp_path_factory.mktemp("poplar1-cli"), "p1cli") as running:
        upload(running, NAME, values(), tampered=TAMPERED)
        yield running


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def one_line_error(code: int, output: str) -> str:
    "The message of a failure that is one CLI line, no traceback"
    assert code == 1 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    return output.strip()


def walk(servers: Aggregators, name: str, batch: str, *more: str) -> tuple[int, str]:
    return cli("poplar1", "walk", name, "--batch", batch, "--url", servers.leader_url, "--token", servers.admin,
               *more)


def panel(servers: Aggregators) -> requests.Response:
    return requests.get(f"{servers.leader_url}/v1/campaigns/{NAME}/panel", timeout=60,
                        headers={"Authorization": f"Bearer {servers.admin}"})


def test_before_the_walk_the_report_and_the_panel_say_there_is_none(servers: Aggregators) -> None:
    for source in (("--db", str(servers.leader_db)), ("--url", servers.leader_url, "--token", servers.admin)):
        message = one_line_error(*cli("report", NAME, *source))
        assert f"campaign {NAME!r} has no walk in this window yet" in message
        assert f"ldp-telemetry poplar1 walk {NAME} --batch" in message
    answer = panel(servers)
    assert answer.status_code == 404 and "has no walk in this window yet" in answer.json()["detail"]


def test_walk_failures_are_one_line(servers: Aggregators) -> None:
    assert "unknown campaign 'nothing'" in one_line_error(*walk(servers, "nothing", servers.day))
    refused = one_line_error(*walk(servers, NAME, "2020-01-01"))  # a batch without reports: below min_batch
    assert "batch-too-small" in refused and "0 reports in batch 2020-01-01" in refused
    unreachable = one_line_error(*cli("poplar1", "walk", NAME, "--batch", servers.day, "--url",
                                      f"http://127.0.0.1:{free_port()}", "--token", servers.admin))
    assert "cannot reach the collector" in unreachable
    code, output = walk(servers, NAME, "yesterday")
    assert code == 2 and "--batch" in output


def test_the_walk_command_prints_the_release_and_every_report_shows_it(servers: Aggregators) -> None:
    code, summary = walk(servers, NAME, servers.day)
    assert code == 0, summary
    for value in HEAVY:
        assert value[:2] in summary  # 16 bits: the first two bytes
    assert f"rejected reports: invalid-measurement {TAMPERED}" in summary
    code, stored = walk(servers, NAME, servers.day, "--json")  # again: the stored release, never a second walk
    release = json.loads(stored)
    walks = requests.get(f"{servers.leader_url}/v1/campaigns/{NAME}/walks", timeout=60,
                         headers={"Authorization": f"Bearer {servers.admin}"}).json()
    assert code == 0 and walks["releases"] == [release]
    found = {row["value"].rstrip("\x00"): row for row in release["estimate"]["heavy_hitters"]}
    for value, count in HEAVY.items():
        assert found[value[:2]]["ci_low"] <= count <= found[value[:2]]["ci_high"]

    by_url = ("--url", servers.leader_url, "--token", servers.admin)
    code, table = cli("report", NAME, "--db", str(servers.leader_db))
    assert code == 0 and (code, table) == cli("report", NAME, *by_url)
    assert summary.splitlines()[0] == table.splitlines()[0]
    code, report = cli("report", NAME, *by_url, "--format", "json")
    jsonschema.Draft202012Validator(report_schema()).validate(json.loads(report))

    shown = panel(servers).json()
    flat = " ".join(table.split())
    assert shown["kind"] == "poplar1" and shown["header"] and all(line in table for line in shown["header"])
    rows = shown["tables"][0]["rows"]
    assert len(rows) == len(release["estimate"]["heavy_hitters"]) >= len(HEAVY)
    assert all(" ".join(cell for cell in row if cell) in flat for row in rows)
    assert all(note in table for note in shown["tables"][0]["notes"])


def test_the_commands_of_distributed_md_run_as_written(servers: Aggregators, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    "docs/distributed.md's walk and report commands, with this run's leader, key, batch and campaign"
    page = (Path(__file__).resolve().parents[2] / "docs" / "distributed.md").read_text()
    section = page[page.index("### Walking a batch, and its report"):]
    block = section[section.index("```sh\n") + 6:section.index("```", section.index("```sh\n") + 6)]
    monkeypatch.chdir(tmp_path)
    for line in block.strip().splitlines():
        line = (line.replace("top_paths", NAME).replace("2026-12-01", servers.day)
                .replace("http://127.0.0.1:8000", servers.leader_url).replace('"$ADMIN_KEY"', servers.admin))
        words = shlex.split(line)
        assert words[0] == "ldp-telemetry"
        code, output = cli(*words[1:])
        assert code == 0, (line, output)
    assert (tmp_path / f"{NAME}.html").read_text().count("<img") == 2
