"""Helpers of the distributed-campaign tests: two aggregators in one process, specs, honest and malicious reports."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import client_sdk
from client_sdk import distributed
from collector import create_app
from collector.distributed.aggregation import CampaignVdaf
from collector.distributed.leader import run_pending
from collector.distributed.peer import FlaskTransport, PeerClient
from collector.distributed.store import DistStore
from collector.storage import open_storage

from ..helpers import bearer

PEER_TOKEN = "peer-token-for-tests-0123456789"
HELPER_URL = "https://helper.test"  # the leader reaches the helper app through a test transport, not this URL
DOMAIN = ["a", "b", "c", "d"]
SPECS: dict[str, dict] = {
    "count": {"name": "crashed", "trust": "distributed", "prio3": "count"},
    "sum": {"name": "load", "trust": "distributed", "prio3": "sum", "max_measurement": 100},
    "histogram": {"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": DOMAIN},
    "sumvec": {"name": "vec", "trust": "distributed", "prio3": "sumvec", "length": 3, "max_measurement": 7},
    "multihot": {"name": "tags", "trust": "distributed", "prio3": "multihot", "domain": DOMAIN, "max_weight": 2},
}
DP = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "min_batch": 10}
# (leader, helper) databases of this test when not SQLite files in its tmp_path (conftest: PostgreSQL URLs)
DATABASES: tuple[str, str] | None = None


def databases(tmp: Path) -> tuple[Path | str, Path | str]:
    "The leader's and the helper's database of this test"
    return DATABASES if DATABASES is not None else (tmp / "leader.db", tmp / "helper.db")


def forget_cached_keys() -> None:
    "Drop the per-database caches of HPKE keys and campaign verify keys (a test database was emptied)"
    from collector.distributed import hpke_keys
    from collector.distributed.leader import campaigns

    hpke_keys._CACHE.clear()
    campaigns._VDAF_CACHE.clear()


def spec_json(kind: str, **overrides: Any) -> dict:
    return {**SPECS[kind], **DP, **overrides}


def values_for(kind: str, n: int) -> list[Any]:
    "n honest values, deterministic"
    out: list[Any] = []
    for i in range(n):
        out.append({"count": i % 3 == 0, "sum": (7 * i) % 101, "histogram": DOMAIN[i % 4],
                    "sumvec": [i % 8, (3 * i) % 8, 7], "multihot": [DOMAIN[i % 4], DOMAIN[(i + 1) % 4]]}[kind])
    return out


def truth(kind: str, values: list[Any]) -> list[int]:
    "The exact sum of the measurements, as a release lists it"
    if kind == "count":
        return [sum(int(v) for v in values)]
    if kind == "sum":
        return [sum(values)]
    if kind == "histogram":
        return [sum(v == d for v in values) for d in DOMAIN]
    if kind == "sumvec":
        return [sum(v[i] for v in values) for i in range(3)]
    return [sum(d in v for v in values) for d in DOMAIN]


class SwitchTransport:
    "A transport to the helper's test client that a test can take down (every request then fails as a network error)"

    def __init__(self, client: Any) -> None:
        self.inner = FlaskTransport(client)
        self.down = False
        self.calls: list[str] = []

    def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        self.calls.append(path)
        if self.down:
            raise OSError("connection refused (test: helper down)")
        return self.inner.request(method, path, body, headers)


class Pair:
    "A leader and a helper app over their own database files; the leader reaches the helper through ``transport``"

    def __init__(self, tmp: Path) -> None:
        self.leader_db, self.helper_db = databases(tmp)
        common = {"RATE_LIMIT": 0, "PEER_TOKEN": PEER_TOKEN, "MAX_BODY_BYTES": 16 * 1024 * 1024}
        self.helper_app = create_app({**common, "DATABASE": str(self.helper_db), "ROLE": "helper"})
        self.leader_app = create_app({**common, "DATABASE": str(self.leader_db), "ROLE": "leader",
                                      "HELPER_URL": HELPER_URL, "AGGREGATE_INTERVAL": 0})  # the tests drive the jobs
        self.transport = SwitchTransport(self.helper_app.test_client())
        self.leader_app.extensions["ldp_peer_transport"] = self.transport
        self.leader = self.leader_app.test_client()
        with open_storage(self.leader_db) as storage:
            self.admin = bearer(storage.create_key("admin", "2024-01-01")[0])
            self.ingest = bearer(storage.create_key("ingest", "2024-01-01")[0])

    def create(self, spec: dict) -> tuple[client_sdk.Spec, dict]:
        """Create the campaign on the leader; (spec, the listing's aggregators block, checked as a device checks it:
        the helper's URL and its HPKE config as the helper itself publishes it)"""
        response = self.leader.post("/v1/campaigns", json=spec, headers=self.admin)
        assert response.status_code == 201, response.json
        listed = self.leader.get(f"/v1/campaigns/{spec['name']}", headers=self.ingest).json
        own = self.helper_app.test_client().get("/v1/hpke_config").json
        return client_sdk.load_spec(response.json["spec"]), checked_block(listed["aggregators"], HELPER_URL, own)

    def upload(self, reports: list[dict]) -> dict:
        response = self.leader.post("/v1/reports", json={"reports": reports}, headers=self.ingest)
        assert response.status_code == 200, response.json
        return response.json

    def aggregate(self) -> Any:
        with open_storage(self.leader_db) as storage:
            return run_pending(storage, DistStore(storage), PeerClient(self.transport, PEER_TOKEN, retries=0))

    def collect(self, name: str, batch: str) -> Any:
        "Collect ``batch``; the day has to end first (:func:`end_day`), unless the test means to collect it early"
        return self.leader.post(f"/v1/campaigns/{name}/collect", json={"batch": batch}, headers=self.admin)


def end_day() -> str:
    """Let the collector's current UTC day end (its clock moves to a minute past that day's collection grace,
    ``COLLECT_GRACE``, in the next day: ``collector.auth.CLOCK_OFFSET``; the tests' conftest puts it back): that
    day's batch can be collected, new reports enter the next one.  The day that ended."""
    from collector import auth

    ended = auth.utc_today()
    auth.CLOCK_OFFSET += past_grace(ended) - auth.clock_now()
    return ended


def past_grace(day: str) -> float:
    "A minute past the collection grace of ``day`` (POSIX seconds): its batch can be collected then"
    from client_sdk.clock import day_start
    from collector.config import DEFAULTS

    return day_start(day) + 86400 + DEFAULTS["COLLECT_GRACE"] + 60


def checked_block(block: dict, helper_url: str, helper_answer: dict) -> dict:
    "The listing's aggregators block once the device's check passed (its helper URL and key are the helper's own)"
    trusted = distributed.configured_aggregators({"helper": helper_url}, "https://leader.test")
    distributed.aggregator_configs(block, trusted, distributed.parse_hpke_configs(helper_answer))
    return block


def configs(block: dict) -> tuple[Any, Any]:
    from client_sdk.vdaf.hpke import HpkeConfig

    return (HpkeConfig.from_dict(block["leader"]["hpke_config"]), HpkeConfig.from_dict(block["helper"]["hpke_config"]))


def honest_reports(spec: client_sdk.Spec, block: dict, values: list[Any], batch: str | None = None) -> list[dict]:
    "Reports sealed as a device does, for ``batch`` (default: the collector's day in this process)"
    from collector import auth

    leader, helper = configs(block)
    batch = batch or auth.utc_today()
    out = []
    for value in values:
        report_id = str(uuid.uuid4())
        payload = distributed.seal_report(spec, value, leader, helper, report_id=report_id, batch=batch)
        out.append({"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                    "payload": payload})
    return out


def encoded_report(spec: client_sdk.Spec, block: dict, measurement: list[int], *, leader_config: Any = None,
                   helper_config: Any = None) -> dict:
    """A report of an already-encoded, possibly invalid, measurement (a malicious device), with a valid proof
    of that encoding; each share sealed to the given config (default: the aggregators' own)"""
    from client_sdk.vdaf.hpke import b64url, seal

    leader, helper = configs(block)
    leader, helper = leader_config or leader, helper_config or helper
    report_id = str(uuid.uuid4())
    vdaf = distributed.vdaf_for(spec)
    nonce = uuid.UUID(report_id).bytes
    public, shares = vdaf._shard_encoded(distributed.ctx_for(spec), measurement, nonce, os.urandom(vdaf.RAND_SIZE))
    public_share = vdaf.encode_public_share(public)
    payload: dict[str, Any] = {"public_share": b64url(public_share)}
    for key, role, config, share in (("leader_share", 0x02, leader, shares[0]),
                                     ("helper_share", 0x03, helper, shares[1])):
        info = distributed.input_share_info(spec, report_id, role, public_share)
        payload[key] = {"config_id": config.id, "ciphertext": b64url(seal(config, vdaf.encode_input_share(share),
                                                                           info))}
    return {"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint, "payload": payload}


def exact_sum(leader_db: Path | str, helper_db: Path | str, spec: client_sdk.Spec,
              batch: str) -> tuple[int, int, list[int]]:
    """(leader's count, helper's count, the noise-free sum of both aggregate shares): what the release is made of"""
    shares, counts = [], []
    for path in (leader_db, helper_db):
        with open_storage(path) as storage:
            store = DistStore(storage)
            verify_key = store.campaign(spec.name, spec.fingerprint).verify_key  # type: ignore[union-attr]
            vdaf = CampaignVdaf(spec, verify_key)
            count, share = store.agg_share((spec.name, spec.fingerprint, batch))
            counts.append(count)
            shares.append(vdaf.decode(share))
    return counts[0], counts[1], vdaf.unshard(shares)


def query(db: Path | str, sql: str, params: tuple = ()) -> list[tuple]:
    "The rows of a query on a leader's or helper's database, SQLite or PostgreSQL (``?`` placeholders)"
    with open_storage(db) as storage:
        return [tuple(row) for row in storage._all(sql, params)]


@contextmanager
def opened(path: Path | str) -> Iterator[DistStore]:
    with open_storage(path) as storage:
        yield DistStore(storage)
