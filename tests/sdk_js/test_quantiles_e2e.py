"""The quantiles kind end to end with devices of both SDKs: half the users record page-load latencies through the
JavaScript SDK's ``Client`` (Node, the kind loaded on demand from the campaign's spec), half through the Python
SDK's, into one geometric-bucket campaign on a real ``ldp-telemetry serve`` (gunicorn, loopback, a SQLite file);
``ldp-telemetry report`` gives p50 and p95 intervals (99.9 % confidence, fixed seeds) that cover the truth."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import client_sdk
from client_sdk import Client, ReportPolicy
from collector.storage import Storage
from tests.collector.helpers import ldp_command, running_server
from tests.collector.test_e2e import call
from tests.collector.test_quantiles_e2e import SPEC, _quantile
from tests.sdk_js.test_heavy_hitters_e2e import NODE_DEVICE

USERS = 2000
JS_SPEC = {**SPEC, "name": "js_page_load"}


def test_node_and_python_devices_report_latencies_whose_quantiles_cover_the_truth(sdk_js: Path,
                                                                                  tmp_path: Path) -> None:
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    rng = random.Random(3434)
    values = [min(rng.lognormvariate(5.3, 0.9), 40000.0) for _ in range(USERS)]
    values[:20] = [0.2] * 10 + [50000.0] * 10  # outside the range: clamped on both devices
    rng.shuffle(values)
    half = USERS // 2
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _):
        call(url + "/v1/campaigns", admin, "POST", JS_SPEC)
        node = subprocess.run([shutil.which("node") or "node", "--input-type=module", "-e", NODE_DEVICE], cwd=sdk_js,
                              input=json.dumps({"url": url, "key": ingest, "campaign": JS_SPEC["name"],
                                                "values": values[:half]}),
                              capture_output=True, text=True, timeout=300, check=False)
        assert node.returncode == 0, node.stderr[-3000:]
        outcome = json.loads(node.stdout)
        assert outcome == {"statuses": {"queued": half}, "sent": half, "remaining": 0, "rejected": 0}, outcome
        client = Client(url, ingest, tmp_path / "python-device", rng=client_sdk.DeterministicRandom(5),
                        policy=ReportPolicy.unlimited(), background=False, batch_size=500,
                        campaigns=[JS_SPEC["name"]])
        for value in values[half:]:
            assert client.record(JS_SPEC["name"], value)
        result = client.close(timeout=60)
        assert result.remaining == 0 and result.rejected == 0 and result.sent == USERS - half
        report = subprocess.run(ldp_command("report", JS_SPEC["name"], "--url", url, "--token", admin, "--format",
                                            "json", "--confidence", "0.999"), capture_output=True, text=True,
                                check=False)
    assert report.returncode == 0, report.stderr
    estimate = json.loads(report.stdout)
    assert estimate["kind"] == "quantiles" and estimate["n"] == USERS and estimate["unit"] == "ms"
    rows = {row["p"]: row for row in estimate["quantiles"]}
    clamped = [min(max(v, SPEC["range"][0]), SPEC["range"][1]) for v in values]
    for p in (0.5, 0.95):
        truth = _quantile(clamped, p)
        assert rows[p]["ci_low"] <= truth <= rows[p]["ci_high"], (p, truth, rows[p])
    # not vacuous: the median's interval is within a factor 2 of it (the range is 1..30000); at this n and 99.9 %
    # the CDF's lower bound never reaches 0.95, so p95's interval is bounded below only
    assert rows[0.5]["ci_high"] - rows[0.5]["ci_low"] < 2 * _quantile(clamped, 0.5), rows[0.5]
    assert rows[0.95]["ci_low"] > _quantile(clamped, 0.5), rows[0.95]
