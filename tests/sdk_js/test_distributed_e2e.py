"""Distributed campaigns recorded by the JavaScript SDK, end to end: a leader and a helper as two real
``ldp-telemetry serve --role`` processes on loopback with real databases, devices of sdk-js (Node) that fetch the
helper's HPKE config from the helper, shard with the TypeScript Prio3 and seal with WebCrypto HPKE, and the
release that counts their reports."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from estimators.distributed import estimate_release
from tests.collector.distributed.test_e2e_devices import Aggregators, aggregators, histogram_spec


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Aggregators]:
    with aggregators(tmp_path) as running:
        yield running


def js_devices_record(sdk_js: Path, servers: Aggregators, campaign: str, values: list[Any]) -> list[dict]:
    "One sdk-js Client per value (in one Node process): record, flush to the leader; each device's outcome"
    body = {"url": servers.leader_url, "key": servers.ingest, "helper": servers.helper_url, "campaign": campaign,
            "values": values}
    done = subprocess.run([shutil.which("node") or "node", "scripts/distributed-devices.mjs"], cwd=sdk_js,
                          input=json.dumps(body), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


TYPES = [  # (prio3 type, its parameters, the devices' values)
    ("count", {}, [True, False, True, True]),
    ("sum", {"max_measurement": 100}, [0, 100, 7, 55]),
    ("histogram", {"domain": ["a", "b", "c"]}, ["a", "c", "c", "b"]),
    ("sumvec", {"length": 3, "max_measurement": 9}, [[1, 2, 3], [9, 0, 9], [0, 0, 0], [4, 4, 4]]),
    ("multihot", {"domain": ["en", "fr", "de"], "max_weight": 2}, [["en"], ["fr", "de"], [], ["en", "de"]]),
    ("histogram", {"domain": ["x", "y"], "noise": "coins", "coins": 2}, ["x", "y", "y", "y"]),
]


def test_node_devices_record_every_prio3_type_and_each_release_counts_their_reports(
        sdk_js: Path, servers: Aggregators) -> None:
    names = []
    for index, (kind, extra, values) in enumerate(TYPES):
        name = f"js_{kind}_{index}"
        servers.create({"name": name, "trust": "distributed", "prio3": kind, "epsilon": 1.0, "delta": 1e-6,
                        "noise": "gaussian", "min_batch": 2, **extra})
        for outcome in js_devices_record(sdk_js, servers, name, values):
            assert outcome["status"] == "queued" and outcome["sent"] == 1, outcome
            assert not (outcome["remaining"] or outcome["rejected"]), outcome
            # the ledger: epsilon and delta, and the batch (one report per batch)
            assert outcome["spent"] == {"epsilon": 1.0, "reports": 1, "delta": 1e-6, "lastBatch": servers.day}
        names.append((name, len(values)))
    batch = servers.end_day()
    for name, reports in names:
        release = servers.call("POST", f"/v1/campaigns/{name}/collect", {"batch": batch})
        assert release["report_count"] == reports and not release["rejected"], release


MIXED_DEVICES = 2_000  # half Python (client_sdk), half JavaScript (sdk-js in Node)
DOMAIN = [f"app{i:02d}" for i in range(16)]
FAMILY_ALPHA = 1e-4  # every bucket's interval holds at once except with this probability (Bonferroni)


def test_python_and_javascript_devices_in_one_release_every_bucket_within_its_interval(
        sdk_js: Path, servers: Aggregators, tmp_path: Path) -> None:
    generator = np.random.default_rng(2025)
    weights = 0.75 ** np.arange(len(DOMAIN))
    values = [DOMAIN[i] for i in generator.choice(len(DOMAIN), size=MIXED_DEVICES, p=weights / weights.sum())]
    truth = {value: values.count(value) / MIXED_DEVICES for value in DOMAIN}
    spec, _ = servers.create(histogram_spec("mixed", DOMAIN, min_batch=100))
    half = MIXED_DEVICES // 2
    servers.devices_record("mixed", values[:half], tmp_path / "python-devices")
    outcomes = js_devices_record(sdk_js, servers, "mixed", values[half:])
    assert all(o["status"] == "queued" and o["sent"] == 1 and not o["remaining"] for o in outcomes), outcomes[:3]

    batch = servers.end_day()
    release = servers.call("POST", "/v1/campaigns/mixed/collect", {"batch": batch})
    assert release["report_count"] == MIXED_DEVICES and not release["rejected"], release["rejected"]
    # the release's own intervals, each at confidence 1 - alpha/16: all 16 hold at once with probability >= 1 - alpha
    confidence = 1 - FAMILY_ALPHA / len(DOMAIN)
    estimate = servers.call("GET", "/v1/campaigns/mixed/estimate", confidence=confidence)
    assert estimate == json.loads(json.dumps(estimate_release(spec, release, confidence)))
    for row in estimate["values"]:
        assert row["ci_low"] <= truth[row["value"]] <= row["ci_high"], row


def test_malicious_reports_made_with_the_javascript_sharder_are_rejected_by_name(
        sdk_js: Path, servers: Aggregators) -> None:
    "A device playing the attacker with sdk-js's own sharder and HPKE: the aggregators reject each report by name"
    domain = ["a", "b", "c", "d"]
    servers.create(histogram_spec("js_tampered", domain, min_batch=2))
    honest = js_devices_record(sdk_js, servers, "js_tampered", ["a", "b", "b", "d"])
    assert all(o["status"] == "queued" and o["sent"] == 1 for o in honest), honest
    listed = servers.call("GET", "/v1/campaigns/js_tampered", key=servers.ingest)
    body = {"spec": {**listed["spec"], "aggregators": listed["aggregators"]}, "batch": servers.day,
            "measurements": [[1, 1, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0]]}  # two ones, a 2, no one at all
    done = subprocess.run([shutil.which("node") or "node", "scripts/malicious-reports.mjs"], cwd=sdk_js,
                          input=json.dumps(body), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    made = json.loads(done.stdout)
    reports = [*made["invalid"], made["flipped"], made["moved"]]
    answer = servers.call("POST", "/v1/reports", {"reports": reports}, key=servers.ingest)
    # each invalid report opens and decodes (its shares are well formed): only the proof's verification catches it
    assert answer["accepted"] == 4 and answer["rejected"] == 1, answer
    [error] = answer["errors"]
    assert error["report_id"] == made["moved"]["report_id"]
    assert error["field"].endswith("payload.leader_share.ciphertext"), error  # sealed for another report id

    batch = servers.end_day()
    release = servers.call("POST", "/v1/campaigns/js_tampered/collect", {"batch": batch})
    assert release["report_count"] == len(honest), release
    assert release["rejected"] == {"invalid-measurement": 4, "hpke-decrypt-error": 1}, release["rejected"]
