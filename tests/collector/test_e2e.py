"""End to end: the real server (``ldp-telemetry serve``, gunicorn, a SQLite file) fed by the SDK over loopback.

Each estimate must cover the truth with its own interval (99.9 % confidence, fixed seeds), and afterwards no table
and no log line may hold an IP address or a user agent.
"""

from __future__ import annotations

import json
import random
import socket
import urllib.request
from pathlib import Path

import pytest

import client_sdk
from client_sdk import Client, ReportPolicy
from collector.storage import Storage

from .helpers import CATEGORICAL, NUMERIC, running_server

BROWSER_WEIGHTS = {"chrome": 0.6, "firefox": 0.25, "safari": 0.1, "edge": 0.05}
CATEGORICAL_USERS = 3000
NUMERIC_USERS = 2000


def call(url: str, key: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json", "User-Agent": "e2e-test-agent/9.9"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("e2e")
    db_path = directory / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    log_path = directory / "server.log"
    with running_server(db_path, log_path, workers=2) as (url, _):
        for spec in (CATEGORICAL, NUMERIC):
            call(url + "/v1/campaigns", admin, "POST", spec)
        yield {"url": url, "admin": admin, "ingest": ingest, "db": db_path, "log": log_path, "dir": directory}


def send(server: dict, campaign: str, values: list, seed: int, state: str) -> None:
    client = Client(server["url"], server["ingest"], server["dir"] / state, rng=client_sdk.DeterministicRandom(seed),
                    policy=ReportPolicy.unlimited(), background=False, batch_size=500, campaigns=[campaign])
    for value in values:
        assert client.record(campaign, value)
    result = client.close(timeout=60)
    assert result.remaining == 0 and result.rejected == 0 and result.sent == len(values)


def test_categorical_estimate_covers_the_truth(server):
    rng = random.Random(11)
    values = rng.choices(list(BROWSER_WEIGHTS), weights=list(BROWSER_WEIGHTS.values()), k=CATEGORICAL_USERS)
    half = len(values) // 2
    send(server, "browser", values[:half], seed=1, state="device-a")  # two devices, two state files
    send(server, "browser", values[half:], seed=2, state="device-b")
    estimate = call(server["url"] + "/v1/campaigns/browser/estimate?confidence=0.999", server["admin"])
    assert estimate["n"] == CATEGORICAL_USERS
    for row in estimate["values"]:
        truth = values.count(row["value"]) / len(values)
        assert row["ci_low"] <= truth <= row["ci_high"], row


def test_numeric_estimate_covers_the_truth(server):
    rng = random.Random(12)
    values = [min(1000.0, rng.expovariate(1 / 200)) for _ in range(NUMERIC_USERS)]
    send(server, "load_ms", values, seed=3, state="device-c")
    estimate = call(server["url"] + "/v1/campaigns/load_ms/estimate?confidence=0.999", server["admin"])
    truth = sum(values) / len(values)
    assert estimate["n"] == NUMERIC_USERS
    assert estimate["ci_low"] <= truth <= estimate["ci_high"], (truth, estimate)


def test_no_address_or_user_agent_is_stored_or_logged(server):
    port = int(server["url"].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # gunicorn logs bad requests
        sock.sendall(b"NOT A REQUEST\r\n\r\n")
        sock.recv(1024)
    call(server["url"] + "/v1/campaigns", server["ingest"])
    with Storage(server["db"]) as storage:
        columns = {table: [c.name for c in storage.db[table].columns] for table in storage.db.table_names()}
        assert columns["reports"] == ["day", "report_id", "version_id", "payload"]
        assert columns["report_versions"] == ["id", "campaign", "version"]
        dump = json.dumps({table: storage.table_rows(table) for table in columns}, default=str)
    lines = Path(server["log"]).read_text().splitlines()
    # the server's own bound address is logged, by design (the client shares it on loopback): once by gunicorn,
    # once in the dashboard's address that serve prints
    assert sum("Listening at: http://127.0.0.1:" in line for line in lines) == 1
    assert sum(line.startswith("dashboard: http://127.0.0.1:") for line in lines) == 1
    log = "\n".join(line for line in lines if "Listening at: " not in line and not line.startswith("dashboard: "))
    for needle in ("127.0.0.1", "e2e-test-agent", "Python-urllib", "User-Agent"):
        assert needle not in dump, needle
        assert needle not in log, needle
