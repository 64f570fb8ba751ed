"""Campaign lifetimes (closing, expiry) and key lifetimes (expiry, last-use day), through the API and the SDK."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import sqlite3
import subprocess

import client_sdk
from client_sdk import Client, RecordStatus, ReportPolicy
from client_sdk.runtime.transport import WSGITransport
from collector.storage import LATEST_SCHEMA_VERSION, Storage

from .helpers import CATEGORICAL, bearer, make_reports, table_counts

TODAY = dt.datetime.now(dt.timezone.utc).date()
YESTERDAY = (TODAY - dt.timedelta(days=1)).isoformat()


def test_closing_rejects_new_reports_by_name_and_keeps_estimates(http, keys, campaign, db_path):
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    first = http.post("/v1/reports", json={"reports": make_reports(campaign, ["chrome", "safari"] * 100)},
                      headers=ingest)
    assert first.json["accepted"] == 200
    assert http.get("/v1/campaigns/browser", headers=ingest).json["closed"] is False
    assert http.post("/v1/campaigns/browser/close", headers=ingest).status_code == 403
    closed = http.post("/v1/campaigns/browser/close", headers=admin)
    assert closed.status_code == 200 and closed.json["closed"] is True
    assert closed.json["closed_day"] == TODAY.isoformat()
    listed = http.get("/v1/campaigns", headers=ingest).json["campaigns"]
    assert [(c["name"], c["closed"]) for c in listed] == [("browser", True)]

    late = http.post("/v1/reports", json={"reports": make_reports(campaign, ["edge"] * 3, seed=2)}, headers=ingest)
    assert late.status_code == 200 and late.json["accepted"] == 0 and late.json["rejected"] == 3
    error = late.json["errors"][0]
    assert error["field"] == "reports[0].campaign" and "closed" in error["reason"]
    assert table_counts(db_path)["reports"] == 200
    estimate = http.get("/v1/campaigns/browser/estimate", headers=admin)
    assert estimate.status_code == 200 and estimate.json["n"] == 200
    # closing twice keeps the first day; a closed campaign takes no new version; unknown names are 404
    assert http.post("/v1/campaigns/browser/close", headers=admin).json["closed_day"] == TODAY.isoformat()
    again = http.post("/v1/campaigns", json={**CATEGORICAL, "epsilon": 2.0}, headers=admin)
    assert again.status_code == 409 and again.json["field"] == "name"
    assert http.post("/v1/campaigns/nothing/close", headers=admin).status_code == 404


def test_an_expired_spec_is_rejected_by_name_and_an_open_one_accepted(http, keys):
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    expired = http.post("/v1/campaigns", json={**CATEGORICAL, "name": "old", "expires": YESTERDAY}, headers=admin)
    current = http.post("/v1/campaigns", json={**CATEGORICAL, "name": "now", "expires": TODAY.isoformat()},
                        headers=admin)
    assert expired.status_code == current.status_code == 201
    assert expired.json["expired"] is True and current.json["expired"] is False
    old, now = (client_sdk.load_spec(r.json["spec"]) for r in (expired, current))
    answer = http.post("/v1/reports", json={"reports": make_reports(old, ["edge"]) + make_reports(now, ["edge"])},
                       headers=ingest).json
    assert answer["accepted"] == 1 and answer["rejected"] == 1
    assert answer["errors"][0]["field"] == "reports[0].campaign" and "expired" in answer["errors"][0]["reason"]
    bad = http.post("/v1/campaigns", json={**CATEGORICAL, "expires": "tomorrow"}, headers=admin)
    assert bad.status_code == 400 and bad.json["field"] == "expires"


def test_expires_is_part_of_the_fingerprint():
    plain = client_sdk.load_spec(CATEGORICAL)
    dated = client_sdk.load_spec({**CATEGORICAL, "expires": "2030-01-01"})
    assert plain.fingerprint != dated.fingerprint
    assert client_sdk.load_spec(dated.to_dict()).expires == "2030-01-01"
    assert dated.expired_on("2030-01-02") and not dated.expired_on("2030-01-01")


def _client(app, key, tmp_path):
    return Client("http://collector", key, tmp_path / "device", transport=WSGITransport(app), background=False,
                  policy=ReportPolicy.unlimited(), rng=client_sdk.DeterministicRandom(3), sleep=lambda s: None,
                  jitter=random.Random(1), spec_ttl=0)


def test_the_sdk_stops_recording_closed_and_expired_campaigns(app, http, keys, campaign, tmp_path):
    admin = bearer(keys["admin"])
    http.post("/v1/campaigns", json={**CATEGORICAL, "name": "old", "expires": YESTERDAY}, headers=admin)
    client = _client(app, keys["ingest"], tmp_path)
    assert client.prepare(["browser", "old"], wait=True)
    assert client.record("browser", "edge").status is RecordStatus.QUEUED
    assert client.record("old", "edge").status is RecordStatus.CAMPAIGN_CLOSED  # known from the spec itself
    http.post("/v1/campaigns/browser/close", headers=admin)
    client.prepare(wait=True)
    assert client.record("browser", "edge").status is RecordStatus.CAMPAIGN_CLOSED
    assert client.pending() == 1
    client.close(timeout=1)


def test_key_expiry_and_last_use_day(http, db_path, app):
    with Storage(db_path) as storage:
        expired, _ = storage.create_key("ingest", "2024-01-01", expires_day=YESTERDAY)
        valid, record = storage.create_key("ingest", "2024-01-01", expires_day=TODAY.isoformat())
    answer = http.get("/v1/campaigns", headers=bearer(expired))
    assert answer.status_code == 401 and "expired" in answer.json["detail"]
    with Storage(db_path) as storage:
        assert {k.key_id: k.last_used_day for k in storage.list_keys()}[record.key_id] is None
    for _ in range(2):
        assert http.get("/v1/campaigns", headers=bearer(valid)).status_code == 200
    with Storage(db_path) as storage:
        keys = {k.key_id: k for k in storage.list_keys()}
    assert keys[record.key_id].last_used_day == TODAY.isoformat()
    assert keys[record.key_id].expires_day == TODAY.isoformat()


def test_last_use_is_written_once_a_day(db_path):
    with Storage(db_path) as storage:
        storage.migrate()
        key, _ = storage.create_key("ingest", "2024-01-01")
        statements: list[str] = []
        storage.conn.set_trace_callback(statements.append)
        for day in ("2024-01-02", "2024-01-02", "2024-01-02"):
            found = storage.find_key(key)
            assert found is not None
            if found.last_used_day != day:
                storage.mark_key_used(found, day)
        assert sum(s.startswith("UPDATE api_keys") for s in statements) == 1
        assert storage.find_key(key).last_used_day == "2024-01-02"
        row = storage.conn.execute("SELECT last_used_day FROM api_keys").fetchone()[0]
        assert len(row) == 10  # a day, never a time


def test_a_version_2_database_gains_the_lifetime_columns(tmp_path):
    path = tmp_path / "v2.db"
    with Storage(path) as storage:
        storage.migrate()
        storage.create_campaign(CATEGORICAL, "2024-01-01")
        storage.create_key("admin", "2024-01-01")
    conn = sqlite3.connect(path)  # rewrite it as schema version 2 left it: no lifetime columns
    conn.executescript("ALTER TABLE campaigns DROP COLUMN closed_day; ALTER TABLE api_keys DROP COLUMN expires_day;"
                       "ALTER TABLE api_keys DROP COLUMN last_used_day; PRAGMA user_version = 2;")
    conn.close()
    with Storage(path) as storage:
        storage.migrate()
        assert storage.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_SCHEMA_VERSION
        assert storage.close_campaign("browser", "2024-02-01") == "2024-02-01"
        assert storage.closed_campaigns() == {"browser": "2024-02-01"}
        assert [k.expires_day for k in storage.list_keys()] == [None]


def test_cli_key_expiry_listing_and_local_close(tmp_path):
    from click.testing import CliRunner

    from ldp_telemetry.cli import main

    db = str(tmp_path / "c.db")
    runner = CliRunner()
    made = runner.invoke(main, ["keys", "create", "--db", db, "--role", "ingest", "--expires", "2099-12-31"])
    assert made.exit_code == 0, made.output
    assert runner.invoke(main, ["keys", "create", "--db", db, "--role", "ingest", "--expires", "2001-01-01"]
                         ).exit_code == 1  # already past
    assert runner.invoke(main, ["keys", "create", "--db", db, "--role", "ingest", "--expires", "soon"]).exit_code == 2
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).output)
    assert [(k["role"], k["expires_day"], k["last_used_day"]) for k in listed] == [("ingest", "2099-12-31", None)]
    assert "expires 2099-12-31\tlast used never" in runner.invoke(main, ["keys", "list", "--db", db]).output
    spec = json.dumps({**CATEGORICAL, "expires": "2099-12-31"})
    assert runner.invoke(main, ["campaign", "create", "--db", db, "-"], input=spec).exit_code == 0
    assert runner.invoke(main, ["campaign", "close", "--db", db, "browser"]).exit_code == 0
    campaigns = json.loads(runner.invoke(main, ["campaign", "list", "--db", db, "--json"]).output)
    assert [(c["name"], c["closed"], c["expires"]) for c in campaigns] == [("browser", True, "2099-12-31")]
    assert runner.invoke(main, ["campaign", "list", "--db", db]).output.rstrip().endswith("\tclosed")
    assert runner.invoke(main, ["campaign", "close", "--db", db, "nothing"]).exit_code == 1
    both = runner.invoke(main, ["campaign", "list", "--db", db, "--url", "http://127.0.0.1:1", "--token", "x"])
    assert both.exit_code == 2 and "either --db" in both.output
    assert runner.invoke(main, ["campaign", "list", "--url", "http://127.0.0.1:1"], env={"LDP_TOKEN": ""}
                         ).exit_code == 2


def test_cli_manages_campaigns_through_a_running_collector(tmp_path):
    from .helpers import create_key, ldp_command, running_server

    db = tmp_path / "collector.db"
    admin, ingest = create_key(db, "admin"), create_key(db, "ingest")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(CATEGORICAL))

    def cli(*args: str, token: str = admin) -> subprocess.CompletedProcess:
        return subprocess.run(ldp_command(*args), capture_output=True, text=True, timeout=60,
                              env={**os.environ, "LDP_URL": url, "LDP_TOKEN": token, "LDP_DATABASE": ""})

    with running_server(db, tmp_path / "server.log") as (url, _):
        created = cli("campaign", "create", str(spec))
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["version"] == 1 and json.loads(created.stdout)["closed"] is False
        assert "identical version" in cli("campaign", "create", str(spec)).stderr
        assert cli("campaign", "list").stdout.startswith("browser\t1\toue\t")
        assert json.loads(cli("campaign", "show", "browser").stdout)["fingerprint"]
        refused = cli("campaign", "close", "browser", token=ingest)
        assert refused.returncode == 1 and "HTTP 403" in refused.stderr
        closed = cli("campaign", "close", "browser")
        assert closed.returncode == 0 and "closed since" in closed.stdout
        listed = json.loads(cli("campaign", "list", "--json").stdout)
        assert [(c["name"], c["closed"]) for c in listed] == [("browser", True)]
        missing = cli("campaign", "show", "nothing")
        assert missing.returncode == 1 and "HTTP 404" in missing.stderr
    unreachable = cli("campaign", "list")
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr


def _json_schema(node):
    "OpenAPI 3.0's nullable as JSON Schema's type list (the only 3.0 keyword the document uses that differs)"
    if isinstance(node, dict):
        out = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
        if node.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    return node


def test_openapi_names_its_schemas_and_real_answers_match_them(http, keys, campaign):
    import jsonschema

    from .helpers import NUMERIC

    document = http.get("/openapi.json").json
    schemas = document["components"]["schemas"]
    assert {"Spec", "Campaign", "CampaignList", "ReportBatch", "IngestResult", "Estimate", "EstimateDays",
            "Problem"} <= set(schemas)
    operations = [op for item in document["paths"].values() for op in item.values()]
    inline = [op["operationId"] for op in operations for answer in op["responses"].values()
              if "content" in answer and answer["content"].get("application/json", {}).get("schema", {}).get(
                  "type") == "object" and op["operationId"] not in ("livez", "readyz", "openapi")]
    assert inline == []

    def check(name, body):
        schema = {**_json_schema(document), "$ref": f"#/components/schemas/{name}"}
        jsonschema.Draft202012Validator(schema).validate(body)

    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    http.post("/v1/reports", json={"reports": make_reports(campaign, ["chrome"] * 50)}, headers=ingest)
    numeric = client_sdk.load_spec(http.post("/v1/campaigns", json=NUMERIC, headers=admin).json["spec"])
    http.post("/v1/reports", json={"reports": make_reports(numeric, [100.0] * 50)}, headers=ingest)
    for name in ("browser", "load_ms"):
        check("Estimate", http.get(f"/v1/campaigns/{name}/estimate", headers=admin).json)
        check("EstimateDays", http.get(f"/v1/campaigns/{name}/estimate?granularity=day", headers=admin).json)
    check("CampaignList", http.get("/v1/campaigns", headers=ingest).json)
    check("Campaign", http.post("/v1/campaigns/browser/close", headers=admin).json)
    check("Problem", http.get("/v1/campaigns/nothing", headers=ingest).json)
    bad = {"kind": "frequency", "campaign": "browser", "n": 1, "confidence": 0.95}
    assert not jsonschema.Draft202012Validator({**_json_schema(document), "$ref": "#/components/schemas/Estimate"}
                                               ).is_valid(bad)  # values is required
