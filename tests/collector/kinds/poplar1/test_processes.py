"""A poplar1 walk over the leader/helper protocol with two real server processes on loopback (SQLite files, then
PostgreSQL databases): devices' reports uploaded to the leader, the walk driven by ``POST .../walk``, the helper
refusing a dishonest leader's level requests on its own records."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

import client_sdk
from client_sdk.distributed import seal_report
from client_sdk.distributed_messages import b64url
from client_sdk.vdaf.hpke import HpkeConfig
from collector.kinds.poplar1.store import Poplar1Store
from collector.storage import open_storage
from tests.collector.distributed.test_e2e_devices import PEER_TOKEN, Aggregators, aggregators
from tests.collector.helpers import BACKENDS

HEAVY = {"/home": 60, "/docs": 40}  # planted heavy hitters (their counts), over a tail of distinct strings
TAIL = 100
SPEC = {"name": "paths", "kind": "poplar1", "trust": "distributed", "epsilon": 4.0, "delta": 1e-6, "bits": 16,
        "stride": 4, "threshold": 0.1, "min_batch": 50}


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    databases = None
    if request.param == "postgresql":
        cluster = request.getfixturevalue("postgres_cluster")
        databases = (cluster.create_database("p1_leader"), cluster.create_database("p1_helper"))
    with aggregators(tmp_path_factory.mktemp("poplar1-e2e"), databases) as running:
        yield running


def upload(servers: Aggregators, name: str, values: list[str]) -> Any:
    created = servers.call("POST", "/v1/campaigns", {**SPEC, "name": name})
    spec = client_sdk.load_spec(created["spec"])
    listed = servers.call("GET", f"/v1/campaigns/{name}", key=servers.ingest)
    leader = HpkeConfig.from_dict(listed["aggregators"]["leader"]["hpke_config"])
    helper = HpkeConfig.from_dict(listed["aggregators"]["helper"]["hpke_config"])
    reports = []
    for value in values:
        report_id = str(uuid.uuid4())
        reports.append({"report_id": report_id, "campaign": name, "fingerprint": spec.fingerprint,
                        "payload": seal_report(spec, value, leader, helper, report_id=report_id, batch=servers.day)})
    answer = servers.call("POST", "/v1/reports", {"reports": reports}, key=servers.ingest)
    assert answer["accepted"] == len(values), answer
    return spec


def values() -> list[str]:
    out = [value for value, count in HEAVY.items() for _ in range(count)]
    out += [f"{i:02x}" for i in range(TAIL)]
    random.Random(36).shuffle(out)
    return out


def test_the_walk_finds_the_planted_heavy_hitters(servers: Aggregators) -> None:
    upload(servers, "paths", values())
    release = servers.call("POST", "/v1/campaigns/paths/walk", {"batch": servers.day})
    estimate = release["estimate"]
    found = {row["value"].rstrip("\x00"): row for row in estimate["heavy_hitters"]}
    for value, count in HEAVY.items():
        key = value[:2]  # 16 bits: the first two bytes
        assert key in found, (key, estimate["heavy_hitters"])
        assert found[key]["ci_low"] <= count <= found[key]["ci_high"], (found[key], count)
    assert len(release["walk"]["levels"]) == 4
    again = servers.call("POST", "/v1/campaigns/paths/walk", {"batch": servers.day})
    assert again == release  # stored: never a second walk, never fresh noise
    shown = servers.call("GET", "/v1/campaigns/paths/estimate")
    assert shown["heavy_hitters"] == estimate["heavy_hitters"]


def peer(servers: Aggregators, path: str, body: dict) -> requests.Response:
    return requests.post(servers.helper_url + path, json=body, timeout=60,
                         headers={"Authorization": f"Bearer {PEER_TOKEN}"})


def level_request(servers: Aggregators, spec: Any, level: int, prefixes: list[str],
                  reports: list[dict] | None = None) -> requests.Response:
    if reports is None:
        with open_storage(servers.leader_db) as storage:
            rows = Poplar1Store(storage).batch_reports((spec.name, spec.fingerprint, servers.day))
        reports = [{"report_id": str(uuid.UUID(bytes=r)), "public_share": b64url(p), "helper_share": h}
                   for r, p, _, h in rows]
    return peer(servers, "/v1/peer/poplar1/levels", {"campaign": spec.name, "fingerprint": spec.fingerprint,
                                                      "batch": servers.day, "level": level, "prefixes": prefixes,
                                                      "reports": reports})


def refusal(response: requests.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body.get("type", "").rsplit(":", 1)[-1], body.get("field")


def test_the_helper_refuses_a_dishonest_leaders_levels(servers: Aggregators) -> None:
    spec = upload(servers, "attacked", values())
    assert level_request(servers, spec, 3, ["0010"]).status_code == 200
    # the same level again (a report into a level twice), and a level below it (reordered)
    assert refusal(level_request(servers, spec, 3, ["0010"]))[:2] == (409, "level-not-increasing")
    assert refusal(level_request(servers, spec, 2, ["001"]))[1] in ("level-not-in-walk", "level-not-increasing")
    # a prefix not extending the previous level's: one chosen to isolate a device
    assert refusal(level_request(servers, spec, 7, ["11111111"])) == (409, "prefixes-invalid", "prefixes")


def test_the_helper_refuses_a_level_below_min_batch_and_a_repeated_report(servers: Aggregators) -> None:
    spec = upload(servers, "small", values())
    with open_storage(servers.leader_db) as storage:
        rows = Poplar1Store(storage).batch_reports((spec.name, spec.fingerprint, servers.day))
    reports = [{"report_id": str(uuid.UUID(bytes=r)), "public_share": b64url(p), "helper_share": h}
               for r, p, _, h in rows]
    few = reports[:SPEC["min_batch"] - 1]
    assert refusal(level_request(servers, spec, 3, ["0010"], few)) == (409, "batch-too-small", "reports")
    doubled = reports[:SPEC["min_batch"]] + reports[:1]
    assert refusal(level_request(servers, spec, 3, ["0010"], doubled)) == (409, "report-repeated", "reports")
