"""End to end: a leader and a helper as two real server processes on loopback with real databases, devices sealing
their reports with the SDK, one release per batch, and the estimate and reports of ``estimators.distributed``.

* 2,000 devices, each a ``client_sdk.Client`` with its own state directory, record one value of a Histogram(16)
  campaign (the SDK shards and seals it with the HPKE configs of the campaign listing, queues it, charges its ledger)
  and flush it to the leader; after collection every bucket's released fraction is within
  its stated interval of the truth (asked at confidence 1 - 1e-4/16, so that all 16 hold at once except with
  probability 1e-4), and ``ldp-telemetry report`` shows the same estimate from the database and from --url.
* The noise of repeated releases (several small Histogram(256) campaigns on the same servers: every bucket of every
  release is one draw) has the variance of the formula, within k standard errors of a sample variance.  Their
  reports are sealed by the SDK's device module directly (``client_sdk.distributed.seal_report``) and uploaded in
  batches, which keeps the test short.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

import client_sdk
from client_sdk.clock import utc_day
from estimators.distributed import estimate_release
from tests.tolerances import k_sigma, second_moment_bounds

from ..helpers import BACKENDS, create_key, free_port, ldp_command, running_server
from .kit import checked_block, past_grace

PEER_TOKEN = "e2e-peer-token"
DEVICES = 2_000
DOMAIN = [f"app{i:02d}" for i in range(16)]
NOISE_CAMPAIGNS, NOISE_BUCKETS, NOISE_REPORTS = 6, 256, 3
FAMILY_ALPHA = 1e-4
DEVICE_THREADS = 8  # devices reporting at the same time


@dataclass
class Aggregators:
    leader_url: str
    helper_url: str
    leader_db: Path | str
    admin: str
    ingest: str
    restart_leader: Callable[[float], None]  # both again, with LDP_CLOCK_OFFSET of that many seconds
    offset: float = 0.0  # how far (seconds) the leader's clock has moved on

    @property
    def day(self) -> str:
        "The leader's current day: its open batch"
        return utc_day(time.time() + self.offset)

    def end_day(self) -> str:
        """Let the aggregators' day end (they restart in the next day, past the day's collection grace: each checks
        the batch's end on its own clock): that batch may be collected now; the day that ended"""
        ended = self.day
        self.offset = past_grace(ended) - time.time()
        self.restart_leader(self.offset)
        return ended

    def call(self, method: str, path: str, body: Any = None, key: str | None = None, **params: Any) -> Any:
        response = requests.request(method, self.leader_url + path, json=body, params=params, timeout=120,
                                    headers={"Authorization": f"Bearer {key or self.admin}"})
        assert response.ok, (response.status_code, response.text)
        return response.json()

    def create(self, spec: dict) -> tuple[client_sdk.Spec, dict]:
        created = self.call("POST", "/v1/campaigns", spec)
        listed = self.call("GET", f"/v1/campaigns/{spec['name']}", key=self.ingest)
        own = requests.get(self.helper_url + "/v1/hpke_config", timeout=60).json()  # from the helper, as a device
        return client_sdk.load_spec(created["spec"]), checked_block(listed["aggregators"], self.helper_url, own)

    def devices_record(self, campaign: str, values: list[Any], state_root: Path) -> None:
        "One device per value: its own Client and state, one record, one flush to the leader"

        def device(index: int) -> None:
            client = client_sdk.Client(self.leader_url, self.ingest, state_root / f"device-{index}",
                                       background=False, campaigns=[campaign],
                                       aggregators={"helper": self.helper_url})
            try:
                status = client.record(campaign, values[index])
                result = client.flush(timeout=60)
            finally:
                client.close(timeout=0)
            assert status, (index, status)
            assert result.sent == 1 and not (result.remaining or result.rejected or result.dropped), result

        with ThreadPoolExecutor(DEVICE_THREADS) as pool:
            list(pool.map(device, range(len(values))))

    def upload(self, spec: client_sdk.Spec, aggregators: dict, values: list[Any], batch: int = 500) -> int:
        "Each value sealed on its device by the SDK's distributed module, then uploaded in batches"
        from client_sdk.distributed import seal_report
        from client_sdk.vdaf.hpke import HpkeConfig

        leader = HpkeConfig.from_dict(aggregators["leader"]["hpke_config"])
        helper = HpkeConfig.from_dict(aggregators["helper"]["hpke_config"])
        reports = []
        for value in values:
            report_id = str(uuid.uuid4())
            reports.append({"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                            "payload": seal_report(spec, value, leader, helper, report_id=report_id,
                                                   batch=self.day)})
        accepted = 0
        for start in range(0, len(reports), batch):
            accepted += self.call("POST", "/v1/reports", {"reports": reports[start:start + batch]},
                                  key=self.ingest)["accepted"]
        return accepted


@contextmanager
def aggregators(tmp: Path, databases: tuple[Any, Any] | None = None,
                extra: tuple[str, ...] = ()) -> Iterator[Aggregators]:
    """A helper and a leader (one worker each, the leader's driver off: collection runs the pending jobs; ``extra``
    serve options for both) on their databases (default: SQLite files in ``tmp``); the leader can be restarted days
    later (``end_day``)"""
    helper_port, leader_port = free_port(), free_port()
    leader_db, helper_db = databases or (tmp / "leader.db", tmp / "helper.db")
    admin, ingest = create_key(leader_db, "admin"), create_key(leader_db, "ingest")
    common = ("--rate-limit", "0", "--peer-token", PEER_TOKEN, *extra)
    with ExitStack() as stack:
        leader: list[ExitStack] = []
        helper_url = f"http://127.0.0.1:{helper_port}"

        def start_leader(offset: float) -> str:
            "The helper and the leader, (re)started with their clocks ``offset`` seconds ahead; the leader's URL"
            if leader:
                leader.pop().close()
            inner = ExitStack()
            with pytest.MonkeyPatch.context() as env:  # the server copies the environment as it starts
                env.setenv("LDP_CLOCK_OFFSET", repr(offset))
                inner.enter_context(running_server(helper_db, tmp / "helper.log", helper_port, 1,
                                                   (*common, "--role", "helper")))
                url, _ = inner.enter_context(running_server(
                    leader_db, tmp / "leader.log", leader_port, 1,
                    (*common, "--role", "leader", "--helper-url", helper_url, "--aggregate-interval", "0")))
            leader.append(inner)
            return url

        stack.callback(lambda: leader and leader.pop().close())
        leader_url = start_leader(0)
        yield Aggregators(leader_url, helper_url, leader_db, admin, ingest, start_leader)


def histogram_spec(name: str, domain: list[str], **extra: Any) -> dict:
    return {"name": name, "trust": "distributed", "prio3": "histogram", "domain": domain, "epsilon": 1.0,
            "delta": 1e-6, "noise": "gaussian", **extra}


@contextmanager
def on_backend(request: pytest.FixtureRequest, tmp: Path, prefix: str) -> Iterator[Aggregators]:
    """The aggregators of a fixture parametrised with BACKENDS: on SQLite files in ``tmp``, or on two new databases
    (``prefix``_leader, ``prefix``_helper) of the session's PostgreSQL cluster"""
    databases = None
    if request.param == "postgresql":
        cluster = request.getfixturevalue("postgres_cluster")
        databases = (cluster.create_database(f"{prefix}_leader"), cluster.create_database(f"{prefix}_helper"))
    with aggregators(tmp, databases) as running:
        yield running


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    "The aggregators on SQLite files, then on two new databases of the session's PostgreSQL cluster"
    with on_backend(request, tmp_path_factory.mktemp("distributed-e2e"), "e2e") as running:
        yield running


def test_two_thousand_devices_and_the_released_histogram_is_within_its_interval(servers: Aggregators,
                                                                                 tmp_path: Path):
    generator = np.random.default_rng(2026)
    weights = 0.75 ** np.arange(len(DOMAIN))
    values = [DOMAIN[i] for i in generator.choice(len(DOMAIN), size=DEVICES, p=weights / weights.sum())]
    truth = {value: values.count(value) / DEVICES for value in DOMAIN}
    spec, _ = servers.create(histogram_spec("apps", DOMAIN, min_batch=100))
    servers.devices_record("apps", values, tmp_path)

    batch = servers.end_day()
    release = servers.call("POST", "/v1/campaigns/apps/collect", {"batch": batch})
    assert release["report_count"] == DEVICES and not release["rejected"] and len(release["release"]) == len(DOMAIN)
    confidence = 1 - FAMILY_ALPHA / len(DOMAIN)
    estimate = servers.call("GET", "/v1/campaigns/apps/estimate", confidence=confidence)
    assert estimate == json.loads(json.dumps(estimate_release(spec, release, confidence)))
    for row in estimate["values"]:
        assert row["ci_low"] <= truth[row["value"]] <= row["ci_high"], row
    models = estimate["trust_models"]
    assert models["central"]["std_error"] < models["distributed"]["std_error"] < models["local"]["std_error"] / 10

    # the report, from the leader's database and over HTTP: the same numbers, the three trust models
    reports = {}
    for source in (["--db", str(servers.leader_db)], ["--url", servers.leader_url, "--token", servers.admin]):
        done = subprocess.run(ldp_command("report", "apps", *source, "--format", "json"), capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        reports[source[0]] = json.loads(done.stdout)
    assert reports["--db"] == reports["--url"]
    report = reports["--db"]
    assert report["trust"] == "distributed" and report["n"] == DEVICES and report["batches"] == [batch]
    expected = estimate_release(spec, release)
    assert [row["estimate"] for row in report["values"]] == pytest.approx([r["estimate"] for r in expected["values"]])


def test_the_noise_of_repeated_releases_has_the_variance_of_the_formula(servers: Aggregators):
    "Every bucket of every release minus its true count is one draw of the release's noise"
    generator = np.random.default_rng(7)
    domain = [f"b{i}" for i in range(NOISE_BUCKETS)]
    draws = []
    uploaded = []
    for index in range(NOISE_CAMPAIGNS):
        spec, block = servers.create(histogram_spec(f"noise-{index}", domain, min_batch=2))
        values = [domain[i] for i in generator.integers(0, NOISE_BUCKETS, size=NOISE_REPORTS)]
        assert servers.upload(spec, block, values) == NOISE_REPORTS
        uploaded.append((spec, values))
    batch = servers.end_day()
    for spec, values in uploaded:
        release = servers.call("POST", f"/v1/campaigns/{spec.name}/collect", {"batch": batch})
        counts = np.array([values.count(value) for value in domain])
        draws.append(np.array(release["release"]) - counts)
    noise_mode = estimate_release(spec, release)["noise"]
    from estimators.distributed import Shift, calibrate

    noise = calibrate("gaussian", epsilon=1.0, delta=1e-6, sensitivity=Shift(2, 1))  # replace-one: two buckets
    assert noise_mode["variance"] == pytest.approx(noise.variance())
    samples = np.concatenate(draws).astype(float)
    variance = noise.variance()
    offsets, pmf = noise.noise_pmf()
    assert abs(samples.mean()) < k_sigma(2) * math.sqrt(variance / samples.size)
    low, high = second_moment_bounds(offsets, pmf, samples.size, comparisons=2)
    assert low <= float((samples**2).mean()) <= high, (samples.var(), variance, low, high)
