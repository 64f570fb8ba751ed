"""A poplar1 walk over the leader/helper protocol with two real server processes on loopback (SQLite files, then
PostgreSQL databases): devices' reports uploaded to the leader, the walk driven by ``POST .../walk``, the helper
refusing a dishonest leader's level requests on its own records."""

from __future__ import annotations

import math
import os
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

import client_sdk
from client_sdk.distributed import HELPER, LEADER, ctx_for, input_share_info, report_nonce, seal_report
from client_sdk.distributed_messages import b64url
from client_sdk.kinds import kind_of
from client_sdk.vdaf.hpke import HpkeConfig, seal
from collector.distributed.peer import HttpTransport, PeerClient
from collector.kinds.poplar1.leader import collect
from collector.kinds.poplar1.levels import Chunking
from collector.kinds.poplar1.store import Poplar1Store
from collector.storage import open_storage
from estimators.kinds.poplar1.prune import minimum_walk_reports
from tests.collector.distributed.test_e2e_devices import PEER_TOKEN, Aggregators, aggregators
from tests.collector.helpers import BACKENDS
from tests.sdk_js.conftest import SDK_JS, install, run_npm
from tests.sdk_js.test_distributed_e2e import js_devices_record

HEAVY = {"/home": 60, "/docs": 40}  # planted heavy hitters (their counts), over a tail of distinct strings
TAIL = 100
TAMPERED = 3  # reports whose IDPF key was altered
JS_DEVICES = 40  # of the values, those sent by the JavaScript SDK
SPEC = {"name": "paths", "kind": "poplar1", "trust": "distributed", "epsilon": 4.0, "delta": 1e-6, "bits": 16,
        "stride": 4, "threshold": 0.1, "min_batch": 50}


# the leader's chunks in these tests (100 reports at the first level's 16 prefixes): several peer requests a level
CHUNK = Chunking(evaluations=1600)


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    install()  # sdk-js built: its devices report too
    run_npm("run", "build")
    databases = None
    if request.param == "postgresql":
        cluster = request.getfixturevalue("postgres_cluster")
        databases = (cluster.create_database("p1_leader"), cluster.create_database("p1_helper"))
    with pytest.MonkeyPatch.context() as env:  # the servers copy the environment as they start
        env.setenv("LDP_POPLAR1_CHUNK_EVALUATIONS", str(CHUNK.evaluations))
        # no peer rate limit: these small chunks make a walk about a hundred peer requests (the lost-answer test sends
        # its 103 twice: 206 in about 4 s), and the module's walks share one helper, whose bucket (PEER_RATE_BURST
        # 200, 50 a second) they can drain; a 429 then failed that test, which counts every request. Rate limits
        # are test_robustness's subject, not these tests'
        env.setenv("LDP_PEER_RATE_LIMIT", "0")
        with aggregators(tmp_path_factory.mktemp("poplar1-e2e"), databases) as running:
            yield running


def tampered_payload(spec: Any, value: str, leader: HpkeConfig, helper: HpkeConfig, report_id: str,
                     batch: str) -> dict:
    "A device's report whose leader IDPF key is altered after sharding: it decodes, its sketch cannot be zero"
    kind = kind_of(spec)
    vdaf = kind.vdaf_of(spec)
    public, shares = vdaf.shard(ctx_for(spec), kind.measurement_of(spec, value), report_nonce(report_id),
                                os.urandom(vdaf.RAND_SIZE))
    public_share = vdaf.encode_public_share(public)
    encoded = bytearray(vdaf.encode_input_share(shares[0]))
    encoded[0] ^= 1  # the first byte of the leader's IDPF key
    payload = {"public_share": b64url(public_share), "batch": batch}
    for field, role, config, share in (("leader_share", LEADER, leader, bytes(encoded)),
                                       ("helper_share", HELPER, helper, vdaf.encode_input_share(shares[1]))):
        sealed = seal(config, share, input_share_info(spec, report_id, role, public_share, batch))
        payload[field] = {"config_id": config.id, "ciphertext": b64url(sealed)}
    return payload


def upload(servers: Aggregators, name: str, values: list[str], *, tampered: int = 0, js: int = 0) -> Any:
    """Devices' reports of ``values``: the last ``js`` recorded by devices of the JS SDK (one ``Client`` each, in
    Node: the listing loads the poplar1 kind, the value is sharded, sealed, queued and posted to the leader), the
    others sealed by the Python SDK's device module and uploaded, then ``tampered`` altered ones"""
    created = servers.call("POST", "/v1/campaigns", {**SPEC, "name": name})
    spec = client_sdk.load_spec(created["spec"])
    listed = servers.call("GET", f"/v1/campaigns/{name}", key=servers.ingest)
    leader = HpkeConfig.from_dict(listed["aggregators"]["leader"]["hpke_config"])
    helper = HpkeConfig.from_dict(listed["aggregators"]["helper"]["hpke_config"])
    if js:
        for outcome in js_devices_record(SDK_JS, servers, name, values[len(values) - js:]):
            assert outcome["status"] == "queued" and outcome["sent"] == 1, outcome
            assert not (outcome["remaining"] or outcome["rejected"]), outcome
            # the ledger: the whole collection's epsilon and delta, once for the day's batch
            assert outcome["spent"] == {"epsilon": SPEC["epsilon"], "reports": 1, "delta": SPEC["delta"],
                                        "lastBatch": servers.day}, outcome
    made = []
    for value in values[:len(values) - js]:
        report_id = str(uuid.uuid4())
        made.append((report_id, seal_report(spec, value, leader, helper, report_id=report_id, batch=servers.day)))
    for index in range(tampered):
        report_id = str(uuid.uuid4())
        made.append((report_id, tampered_payload(spec, values[index], leader, helper, report_id, servers.day)))
    reports = [{"report_id": report_id, "campaign": name, "fingerprint": spec.fingerprint, "payload": payload}
               for report_id, payload in made]
    answer = servers.call("POST", "/v1/reports", {"reports": reports}, key=servers.ingest)
    assert answer["accepted"] == len(reports), answer
    return spec


def values() -> list[str]:
    out = [value for value, count in HEAVY.items() for _ in range(count)]
    out += [f"{i:02x}" for i in range(TAIL)]
    random.Random(36).shuffle(out)
    return out


def test_devices_of_both_sdks_and_the_walk_finds_the_planted_heavy_hitters(servers: Aggregators) -> None:
    upload(servers, "paths", values(), tampered=TAMPERED, js=JS_DEVICES)
    release = servers.call("POST", "/v1/campaigns/paths/walk", {"batch": servers.day})
    assert release["rejections"] == {"invalid-measurement": TAMPERED}  # the sketch rejects them, by name
    assert release["walk"]["reports"] == len(values())
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


def batch_entries(servers: Aggregators, spec: Any) -> list[dict]:
    "Every report of the batch as a leader's level request carries it, in id order"
    with open_storage(servers.leader_db) as storage:
        rows = Poplar1Store(storage).batch_reports((spec.name, spec.fingerprint, servers.day))
    return [{"report_id": str(uuid.UUID(bytes=r)), "public_share": b64url(p), "helper_share": h}
            for r, p, _, h in rows]


def level_request(servers: Aggregators, spec: Any, level: int, prefixes: list[str],
                  reports: list[dict] | None = None, chunk: int = 0, chunks: int = 1) -> requests.Response:
    "One chunk of a level as a leader sends it (by default the whole batch as the level's one chunk)"
    return peer(servers, "/v1/peer/poplar1/levels", {
        "campaign": spec.name, "fingerprint": spec.fingerprint, "batch": servers.day, "level": level,
        "prefixes": prefixes, "chunk": chunk, "chunks": chunks,
        "reports": batch_entries(servers, spec) if reports is None else reports})


def refusal(response: requests.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body.get("type", "").rsplit(":", 1)[-1], body.get("field")


def test_the_helper_refuses_a_dishonest_leaders_levels(servers: Aggregators) -> None:
    spec = upload(servers, "attacked", values())
    first = level_request(servers, spec, 3, ["0010"])
    assert first.status_code == 200
    # the same request again is the leader's retry: its stored answer, nothing prepared twice
    assert level_request(servers, spec, 3, ["0010"]).json() == first.json()
    # the same level asked differently (its reports into a level twice), and a level below it (reordered)
    assert refusal(level_request(servers, spec, 3, ["0010", "0011"]))[:2] == (409, "level-not-increasing")
    assert refusal(level_request(servers, spec, 2, ["001"]))[1] in ("level-not-in-walk", "level-not-increasing")
    # a prefix not extending the previous level's: one chosen to isolate a device
    assert refusal(level_request(servers, spec, 7, ["11111111"])) == (409, "prefixes-invalid", "prefixes")


def test_the_helper_refuses_a_level_below_min_batch_and_a_repeated_report(servers: Aggregators) -> None:
    spec = upload(servers, "small", values())
    reports = batch_entries(servers, spec)
    few = reports[:SPEC["min_batch"] - 1]
    assert refusal(level_request(servers, spec, 3, ["0010"], few)) == (409, "batch-too-small", "reports")
    doubled = reports[:SPEC["min_batch"]] + reports[:1]
    assert refusal(level_request(servers, spec, 3, ["0010"], doubled)) == (409, "report-repeated", "reports")


def test_a_batch_too_small_for_its_threshold_is_refused_before_the_helper_is_asked(servers: Aggregators) -> None:
    """A walk whose keep count sits so little above the noise that the noise's own candidates would multiply level
    by level (600 reports at 5%, epsilon 1: more than ten minutes, hundreds of chunks) is refused before its first
    level: 409 naming the reports, the reports it needs; nothing stored, the helper never asked"""
    needed = minimum_walk_reports(SPEC["epsilon"], SPEC["delta"], 4, SPEC["threshold"], SPEC["stride"])
    few = values()[:needed - 1]
    assert len(few) >= SPEC["min_batch"]  # above min_batch: only the walk's own minimum refuses it
    spec = upload(servers, "thin", few)
    answer = requests.post(f"{servers.leader_url}/v1/campaigns/thin/walk", json={"batch": servers.day}, timeout=60,
                           headers={"Authorization": f"Bearer {servers.admin}"})
    assert refusal(answer) == (409, "batch-too-small", "reports"), answer.text
    assert f"at least {needed}" in answer.json()["detail"]
    assert servers.call("GET", "/v1/campaigns/thin/walks")["releases"] in ([], {})
    # the helper has prepared no level of the batch: its first level is still open to the leader
    assert level_request(servers, spec, 3, ["0010"]).status_code == 200


def test_a_batch_padded_with_rejected_reports_stops_after_its_first_level(servers: Aggregators) -> None:
    """Reports the aggregators reject count in the batch's size, not in the walk's: a batch above the walk's
    minimum only with them walks its first level, then stops and says why (no heavy hitter released)"""
    needed = minimum_walk_reports(SPEC["epsilon"], SPEC["delta"], 4, SPEC["threshold"], SPEC["stride"])
    good = values()[:needed - 1]
    upload(servers, "padded", good, tampered=10)
    release = servers.call("POST", "/v1/campaigns/padded/walk", {"batch": servers.day})
    assert release["rejections"] == {"invalid-measurement": 10}
    stopped = {"reason": "too_few_reports", "accepted": len(good), "needed": needed}
    assert release["walk"]["stopped"] == stopped and len(release["walk"]["levels"]) == 1
    assert release["estimate"]["stopped"] == stopped and release["estimate"]["heavy_hitters"] == []


class LosingFirstAnswers(HttpTransport):
    "The helper reached over HTTP, its first answer to each level request lost on the way back (a reset)"

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url)
        self.lost: dict[tuple[str, int], tuple[int, Any]] = {}
        self.retried: list[bool] = []  # per retry: the helper answered it exactly as the lost answer

    def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        status, answer = super().request(method, path, body, headers)
        if path.startswith("/v1/peer/poplar1/levels"):
            step = (path, body["level"], body.get("chunk"))
            if step not in self.lost:
                self.lost[step] = (status, answer)
                raise OSError("connection reset after the helper answered")
            self.retried.append((status, answer) == self.lost[step])
        return status, answer


def test_a_walk_whose_every_level_request_is_retried_completes(servers: Aggregators) -> None:
    """The leader's walk against the real helper, each request of every level (three per chunk, then the finish)
    answered and the answer lost: the retry gets the stored answer, the walk goes on and finds the heavy hitters"""
    spec = upload(servers, "retried", values())
    transport = LosingFirstAnswers(servers.helper_url)
    with open_storage(servers.leader_db) as storage:
        store = Poplar1Store(storage)
        release = collect(storage, store, PeerClient(transport, PEER_TOKEN, sleep=lambda seconds: None),
                          storage.get_campaign(spec.name), servers.day, CHUNK)
    levels = release["walk"]["levels"]
    # every report passes every level (no tampered one here): a level's chunks follow from its candidates
    chunks = [math.ceil(len(values()) / CHUNK.reports(len(level["prefixes"]))) for level in levels]
    requests_sent = sum(3 * count + 1 for count in chunks)
    assert len(levels) == 4 and min(chunks) > 1 and len(transport.lost) == requests_sent
    assert all(status == 200 for status, _ in transport.lost.values())
    assert transport.retried == [True] * requests_sent
    found = {row["value"].rstrip("\x00") for row in release["estimate"]["heavy_hitters"]}
    assert {value[:2] for value in HEAVY} <= found
