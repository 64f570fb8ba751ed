"""The collector's CLI commands, and the OpenAPI document against the routes and docs/api.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from collector.storage import Storage, hash_key
from ldp_telemetry.cli import main

from .helpers import CATEGORICAL, bearer, make_reports

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [["serve"], ["keys"], ["keys", "create"], ["keys", "list"], ["keys", "revoke"], ["campaign"],
            ["campaign", "create"], ["campaign", "list"], ["campaign", "show"], ["campaign", "close"], ["aggregates"],
            ["aggregates", "rebuild"], ["poplar1"], ["poplar1", "walk"]]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_and_option_has_help(command):
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output
    import click

    group = main
    ctx = click.Context(main)
    cmd = group
    for name in command:
        cmd = cmd.get_command(ctx, name)  # type: ignore[union-attr]
    assert cmd.help
    for param in cmd.params:
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(command)} {param.opts}"


def test_keys_campaign_and_rebuild_commands(tmp_path):
    db = str(tmp_path / "c.db")
    created = run("keys", "create", "--role", "admin", "--db", db, "--label", "ops")
    assert created.exit_code == 0
    key = created.stdout.strip().splitlines()[0]
    with Storage(db) as storage:
        stored = storage.table_rows("api_keys")
    assert stored[0]["key_hash"] == hash_key(key) and key not in json.dumps(stored)
    listing = run("keys", "list", "--db", db)
    assert stored[0]["key_id"] in listing.output and key not in listing.output
    assert run("keys", "create", "--role", "root", "--db", db).exit_code == 2

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(CATEGORICAL))
    made = run("campaign", "create", "--db", db, str(spec_file))
    assert made.exit_code == 0 and json.loads(made.stdout)["version"] == 1
    assert run("campaign", "create", "--db", db, "-", input='{"name": "x"}').exit_code == 1
    assert run("campaign", "create", "--db", db, "-", input="{oops").exit_code == 1
    assert "browser\t1\toue" in run("campaign", "list", "--db", db).output
    shown = run("campaign", "show", "browser", "--db", db)
    assert json.loads(shown.output)["reports"] == 0
    assert run("campaign", "show", "missing", "--db", db).exit_code == 1
    assert run("aggregates", "rebuild", "--db", db).exit_code == 0
    assert run("aggregates", "rebuild", "--db", db, "--campaign", "missing").exit_code == 1
    assert run("keys", "revoke", stored[0]["key_id"], "--db", db).exit_code == 0
    assert run("keys", "revoke", "nothing", "--db", db).exit_code == 1


def test_rebuild_command_reproduces_the_incremental_aggregates(http, keys, campaign, db_path):
    reports = make_reports(campaign, ["chrome", "edge", "safari"] * 40)
    http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"]))
    with Storage(db_path) as storage:
        version = storage.get_campaign("browser")
        before = storage.aggregates_by_day(version)
    assert run("aggregates", "rebuild", "--db", str(db_path), "--campaign", "browser").exit_code == 0
    with Storage(db_path) as storage:
        assert storage.aggregates_by_day(version) == before


def test_openapi_documents_every_route_and_docs_describe_every_operation(app, http):
    assert_openapi_documents_the_routes(app, http.get("/openapi.json").json)


def assert_openapi_documents_the_routes(app, document: dict) -> None:
    "The OpenAPI document names every route of ``app``, and docs/api.md describes every operation in it"
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        routes |= {(path, m.lower()) for m in rule.methods - {"HEAD", "OPTIONS"}}
    assert routes == documented
    api_md = (ROOT / "docs" / "api.md").read_text()
    for path, method in documented:
        assert f"`{method.upper()} {path}`" in api_md, f"docs/api.md does not describe {method.upper()} {path}"


def test_openapi_lists_the_storage_faults(http):
    "Every operation that touches the database may answer 503 or 507 (problem+json with Retry-After)"
    paths = http.get("/openapi.json").json["paths"]
    for path in ("/v1/reports", "/v1/campaigns"):
        for operation in paths[path].values():
            assert {"503", "507"} <= set(operation["responses"]), (path, sorted(operation["responses"]))
