"""Issue 20's done-when, end to end: devices record before any spec reached them (collector down, or up but not yet
asked), are closed, restarted or SIGKILLed, and every value reaches a real ``ldp-telemetry serve`` on loopback and
is counted by the estimate.  A device that ships its spec queues from the first call with no network at all."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import client_sdk
from client_sdk import Client, RecordStatus, ReportPolicy
from collector.storage import Storage
from tests.collector.helpers import CATEGORICAL, free_port, running_server, stop

VALUES = ["chrome", "safari", "chrome", "edge", "firefox", "chrome", "safari", "chrome", "chrome", "edge"]
KILLED_DEVICE = """
import json, sys, time
from client_sdk import Client, ReportPolicy
url, key, state_dir, values = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
client = Client(url, key, state_dir, policy=ReportPolicy.unlimited(), flush_interval=3600)
statuses = [client.record("browser", value).status.value for value in values]
print(json.dumps(statuses), flush=True)
time.sleep(600)  # killed here: close() never runs
"""


def device(url: str, key: str, state_dir: Path, **options) -> Client:
    return Client(url, key, state_dir, policy=ReportPolicy.unlimited(), **options)


def estimate(url: str, admin: str) -> dict:
    request = urllib.request.Request(url + "/v1/campaigns/browser/estimate",
                                     headers={"Authorization": f"Bearer {admin}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_values_recorded_before_any_spec_all_reach_the_collector(tmp_path):
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        storage.create_campaign(CATEGORICAL, "2024-01-01")
    port = free_port()
    url = f"http://127.0.0.1:{port}"  # nothing listens there yet

    # Collector down: a device records, is closed; another is SIGKILLed right after its records returned
    closed = device(url, ingest, tmp_path / "closed", timeout=2)
    assert [closed.record("browser", v).status for v in VALUES] == [RecordStatus.HELD] * len(VALUES)
    closed.close(timeout=1)
    assert closed.status().held == len(VALUES)
    killed = subprocess.Popen([sys.executable, "-c", KILLED_DEVICE, url, ingest, str(tmp_path / "killed"),
                               json.dumps(VALUES)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert json.loads(killed.stdout.readline()) == ["held"] * len(VALUES)
    finally:
        stop(killed, signal.SIGKILL)
        killed.stdout.close()
    assert killed.returncode == -signal.SIGKILL

    # Specs shipped with the app: queued from the first call, no network at all; one app ships a spec the collector
    # never had (its reports are rejected by name once delivered, as the collector rejects any unknown fingerprint)
    shipped = device(url, ingest, tmp_path / "shipped", specs=[CATEGORICAL], background=False)
    assert [shipped.record("browser", v).status for v in VALUES] == [RecordStatus.QUEUED] * len(VALUES)
    shipped.close(timeout=1)
    stale_spec = {**CATEGORICAL, "epsilon": 3.0}
    stale = device(url, ingest, tmp_path / "stale", specs=[stale_spec], background=False)
    assert stale.record("browser", "edge").status is RecordStatus.QUEUED
    stale.close(timeout=1)

    with running_server(db_path, tmp_path / "server.log", port=port) as _:
        # restarted devices (new Client, same state directory) deliver everything
        for name in ("closed", "killed", "shipped"):
            restarted = device(url, ingest, tmp_path / name, background=False)
            result = restarted.close(timeout=60)
            assert (result.remaining, result.sent, result.rejected) == (0, len(VALUES), 0), name
            assert restarted.status().held == 0
        # up, but the spec not asked for yet: held, then delivered by close()
        fresh = device(url, ingest, tmp_path / "fresh", background=False)
        assert fresh.record("browser", "firefox").status is RecordStatus.HELD
        assert fresh.close(timeout=60).sent == 1
        # the stale device learns the collector's spec: its queued report is rejected, its next one is not
        restarted = device(url, ingest, tmp_path / "stale", specs=[stale_spec], background=False)
        assert restarted.record("browser", "edge").status is RecordStatus.QUEUED
        result = restarted.close(timeout=60)
        assert (result.sent, result.rejected, result.remaining) == (1, 1, 0)
        served = client_sdk.load_spec(CATEGORICAL)
        assert estimate(url, admin)["n"] == 3 * len(VALUES) + 2
        assert estimate(url, admin)["fingerprint"] == served.fingerprint
