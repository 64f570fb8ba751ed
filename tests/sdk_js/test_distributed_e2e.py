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

import pytest

from tests.collector.distributed.test_e2e_devices import Aggregators, aggregators, histogram_spec


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    with aggregators(tmp_path_factory.mktemp("distributed-js")) as running:
        yield running


def js_devices_record(sdk_js: Path, servers: Aggregators, campaign: str, values: list[Any]) -> list[dict]:
    "One sdk-js Client per value (in one Node process): record, flush to the leader; each device's outcome"
    body = {"url": servers.leader_url, "key": servers.ingest, "helper": servers.helper_url, "campaign": campaign,
            "values": values}
    done = subprocess.run([shutil.which("node") or "node", "scripts/distributed-devices.mjs"], cwd=sdk_js,
                          input=json.dumps(body), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize(("kind", "extra", "values", "expected"), [
    ("count", {}, [True, False, True, True], [3]),
    ("sum", {"max_measurement": 100}, [0, 100, 7, 55], [162]),
    ("histogram", {"domain": ["a", "b", "c"]}, ["a", "c", "c", "b"], [1, 1, 2]),
    ("sumvec", {"length": 3, "max_measurement": 9}, [[1, 2, 3], [9, 0, 9], [0, 0, 0], [4, 4, 4]], [14, 6, 16]),
    ("multihot", {"domain": ["en", "fr", "de"], "max_weight": 2}, [["en"], ["fr", "de"], [], ["en", "de"]], [2, 1, 2]),
])
def test_node_devices_record_every_prio3_type_and_the_release_counts_them(
        sdk_js: Path, servers: Aggregators, kind: str, extra: dict, values: list, expected: list) -> None:
    name = f"js_{kind}"
    spec = {"name": name, "trust": "distributed", "prio3": kind, "epsilon": 1.0, "delta": 1e-6,
            "noise": "gaussian", "min_batch": 2, **extra}
    servers.create(spec)
    outcomes = js_devices_record(sdk_js, servers, name, values)
    for outcome in outcomes:
        assert outcome["status"] == "queued" and outcome["sent"] == 1 and not outcome["remaining"], outcome
        assert outcome["spent"] == {"epsilon": 1.0, "reports": 1, "delta": 1e-6, "lastBatch": servers.day}, outcome
    pending = servers.call("GET", f"/v1/campaigns/{name}")
    assert pending is not None
