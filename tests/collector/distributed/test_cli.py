"""The leader's commands: serve --role checks, campaign create / aggregate / campaign collect on a leader
database (--db) against a real helper process."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ldp_telemetry.cli import main

from ..helpers import running_server
from .kit import PEER_TOKEN, end_day, honest_reports, spec_json, values_for
from .test_processes import Aggregators, call, today


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", [["run-jobs"], ["campaign", "collect"], ["campaign", "create"], ["serve"]])
def test_every_option_has_help(command):
    import click

    cmd = main
    for name in command:
        cmd = cmd.get_command(click.Context(main), name)  # type: ignore[union-attr,assignment]
    assert cmd.help
    assert all(p.help for p in cmd.params if isinstance(p, click.Option))


def test_serve_refuses_an_incomplete_role(tmp_path):
    import sys

    loaded_before = "gunicorn.arbiter" in sys.modules
    db = str(tmp_path / "c.db")
    no_token = run("serve", "--db", db, "--role", "helper")
    assert no_token.exit_code == 1 and "--peer-token" in no_token.output
    no_helper = run("serve", "--db", db, "--role", "leader", "--peer-token", "t")
    assert no_helper.exit_code == 1 and "--helper-url" in no_helper.output
    # refused before gunicorn is imported: in this process it would switch later apps' metrics to gunicorn's
    # shared directory (collector.metrics.default_directory)
    assert loaded_before or "gunicorn.arbiter" not in sys.modules


def test_leader_commands_on_a_database(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec_json("histogram")))
    leader = ("--db", str(servers.leader_db), "--helper-url", servers.helper_url, "--peer-token", PEER_TOKEN)
    down = run("campaign", "create", *leader, str(spec_file))
    assert down.exit_code == 1 and "helper" in down.output
    with servers.helper(monkeypatch):
        created = run("campaign", "create", *leader, str(spec_file))
        assert created.exit_code == 0, created.output
        item = json.loads(created.stdout)
        assert item["aggregators"]["helper"]["url"] == servers.helper_url
        with running_server(servers.leader_db, tmp_path / "leader.log", port=servers.leader_port, workers=1,
                            extra=("--rate-limit", "0", "--role", "leader", "--peer-token", PEER_TOKEN,
                                   "--helper-url", servers.helper_url, "--aggregate-interval", "0")):
            spec, block = servers.create(spec_json("histogram"))  # the same spec: 200, the same version
            reports = honest_reports(spec, block, values_for("histogram", 12))
            status, body = call("POST", servers.leader_url + "/v1/reports", servers.ingest, {"reports": reports})
            assert status == 200 and body["accepted"] == 12
        ran = run("run-jobs", *leader)
        assert ran.exit_code == 0 and json.loads(ran.stdout)["aggregated"] == 12
        early = run("campaign", "collect", "apps", "--batch", today(), *leader)
        assert early.exit_code == 1 and "batch-open" in early.output  # the day has not ended
        end_day()  # this process's clock (the leader's commands), and the helper's: it checks the batch's end too
        servers.end_day()
        collected = run("campaign", "collect", "apps", "--batch", today(), *leader)
        assert collected.exit_code == 0, collected.output
        assert json.loads(collected.stdout)["report_count"] == 12
        again = run("campaign", "collect", "apps", "--batch", today(), *leader)
        assert again.exit_code == 1 and "batch-collected" in again.output


def test_aggregate_with_the_helper_down_exits_1_and_keeps_the_jobs(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    leader = ("--db", str(servers.leader_db), "--helper-url", servers.helper_url, "--peer-token", PEER_TOKEN)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0):
        spec, block = servers.create(spec_json("histogram"))
        assert servers.upload(honest_reports(spec, block, values_for("histogram", 5)))["accepted"] == 5
    ran = run("run-jobs", *leader)
    assert ran.exit_code == 1 and "pending" in ran.output
    with servers.helper(monkeypatch):
        assert json.loads(run("run-jobs", *leader).stdout)["aggregated"] == 5
