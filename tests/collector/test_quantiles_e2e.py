"""End to end, the quantiles kind: devices of the Python SDK report latencies through the real server
(``ldp-telemetry serve``, gunicorn, a SQLite file) over loopback; ``ldp-telemetry report`` renders the estimate and
its p50 and p95 intervals cover the simulated truth (99.9 % confidence, fixed seeds)."""

from __future__ import annotations

import json
import random
import subprocess

import jsonschema
import pytest

import client_sdk
from client_sdk import Client, ReportPolicy
from collector.storage import Storage
from estimators.report import report_schema

from .helpers import ldp_command, running_server
from .test_e2e import call

SPEC = {"name": "page_load", "kind": "quantiles", "epsilon": 2.0, "range": [1, 30000], "bucketing": "geometric",
        "growth": 1.25, "unit": "ms"}
USERS = 2000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("quantiles-e2e")
    db_path = directory / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    with running_server(db_path, directory / "server.log", workers=2) as (url, _):
        call(url + "/v1/campaigns", admin, "POST", SPEC)
        yield {"url": url, "admin": admin, "ingest": ingest, "db": db_path, "dir": directory}


def _send(server: dict, values: list[float], seed: int, state: str) -> None:
    client = Client(server["url"], server["ingest"], server["dir"] / state, rng=client_sdk.DeterministicRandom(seed),
                    policy=ReportPolicy.unlimited(), background=False, batch_size=500, campaigns=[SPEC["name"]])
    for value in values:
        assert client.record(SPEC["name"], value)
    result = client.close(timeout=60)
    assert result.remaining == 0 and result.rejected == 0 and result.sent == len(values)


def _quantile(values: list[float], p: float) -> float:
    "The smallest value with at least a share p of the values at or below it (the CDF's inverse)"
    ordered = sorted(values)
    return ordered[max(int(-(-p * len(ordered) // 1)) - 1, 0)]


def test_sdk_devices_through_serve_then_report_cover_the_truth(server):
    rng = random.Random(34)
    values = [min(rng.lognormvariate(5.3, 0.9), 40000.0) for _ in range(USERS)]  # a few clamped at the top
    _send(server, values[:USERS // 2], seed=1, state="device-a")
    _send(server, values[USERS // 2:], seed=2, state="device-b")
    done = subprocess.run(ldp_command("report", SPEC["name"], "--db", str(server["db"]), "--format", "json",
                                      "--confidence", "0.999"), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "quantiles" and report["n"] == USERS and report["unit"] == "ms"
    jsonschema.Draft202012Validator(report_schema()).validate(report)  # the published schema's local members
    rows = {row["p"]: row for row in report["quantiles"]}
    for p in (0.5, 0.95):
        truth = _quantile(values, p)
        assert rows[p]["ci_low"] <= truth <= rows[p]["ci_high"], (p, truth, rows[p])
    table = subprocess.run(ldp_command("report", SPEC["name"], "--db", str(server["db"])), capture_output=True,
                           text=True, check=False)
    assert table.returncode == 0, table.stderr
    assert "quantiles estimate, local DP" in table.stdout and "p95" in table.stdout
    html = subprocess.run(ldp_command("report", SPEC["name"], "--url", server["url"], "--token", server["admin"],
                                      "--format", "html"), capture_output=True, text=True, check=False)
    assert html.returncode == 0, html.stderr
    assert 'id="cdf"' in html.stdout and 'id="histogram"' in html.stdout
