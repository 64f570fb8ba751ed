"""Leader and helper in one process (two Flask apps over two database files): the whole protocol for every Prio3
type, malicious devices, replays, retried jobs, a helper that is down, min_batch and collect-once."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from collector import create_app
from collector.distributed.aggregation import signed
from collector.distributed.leader import PendingWork
from collector.distributed.peer import PeerClient

from ..helpers import bearer, on_both_backends
from .kit import (
    DOMAIN,
    PEER_TOKEN,
    Pair,
    encoded_report,
    end_day,
    exact_sum,
    honest_reports,
    opened,
    query,
    spec_json,
    truth,
    values_for,
)

pytestmark = on_both_backends  # each test on SQLite files and on PostgreSQL databases

K_SIGMAS = 5  # the release is within 5 standard errors of the noise of the truth (two-sided, p < 6e-7)


def today() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).date().isoformat()


@pytest.fixture
def pair(tmp_path):
    return Pair(tmp_path)


@pytest.mark.parametrize("kind", ["count", "sum", "histogram", "sumvec", "multihot"])
def test_upload_aggregate_collect(pair, kind):
    spec, block = pair.create(spec_json(kind))
    values = values_for(kind, 24)
    answer = pair.upload(honest_reports(spec, block, values))
    assert answer == {"accepted": 24, "duplicate": 0, "rejected": 0, "errors": []}
    summary = pair.aggregate()
    assert summary.aggregated == 24 and summary.rejected == 0 and summary.pending_jobs == 0
    leader_count, helper_count, exact = exact_sum(pair.leader_db, pair.helper_db, spec, today())
    assert leader_count == helper_count == 24
    assert exact == truth(kind, values)
    # the shares are not kept once aggregated; the ids are
    assert query(pair.leader_db, "SELECT count(*), sum(length(leader_share) + length(public_share)) "
                 "FROM dist_reports") == [(24, 0)]

    end_day()
    response = pair.collect(spec.name, today())
    assert response.status_code == 200, response.json
    release = response.json
    assert release["report_count"] == 24 and release["prio3"] == kind and release["coin_subset"] is None
    assert release["fingerprint"] == spec.fingerprint and release["batch"] == today()
    assert release["noise"]["mode"] == "gaussian" and release["rejected"] == {}
    sd = math.sqrt(release["noise"]["variance"])
    for got, want in zip(release["release"], truth(kind, values)):
        assert abs(got - want) <= K_SIGMAS * sd
    assert pair.leader.get(f"/v1/campaigns/{spec.name}/releases", headers=pair.admin).json["releases"] == [release]


def test_the_same_spec_and_fingerprint_on_both_aggregators(pair):
    spec, block = pair.create(spec_json("histogram"))
    helper_listing = pair.helper_app.test_client()
    with opened(pair.helper_db) as store:
        known = store.campaign(spec.name, spec.fingerprint)
        assert known is not None and known.role == "helper"
    with opened(pair.leader_db) as store:
        assert store.campaign(spec.name, spec.fingerprint).verify_key == known.verify_key  # type: ignore[union-attr]
    configs = helper_listing.get("/v1/hpke_config").json["configs"]
    assert block["helper"]["hpke_config"] == configs[0]
    assert block["leader"]["hpke_config"] == pair.leader.get("/v1/hpke_config").json["configs"][0]
    # creating it again is harmless: same version, same verify key
    again = pair.leader.post("/v1/campaigns", json=spec_json("histogram"), headers=pair.admin)
    assert again.status_code == 200 and again.json["fingerprint"] == spec.fingerprint


def test_signed_mapping_is_exact():
    p = 2**64 - 2**32 + 1
    assert signed(0, p) == 0 and signed(p - 1, p) == -1 and signed((p - 1) // 2, p) == (p - 1) // 2
    assert signed((p + 1) // 2, p) == -((p - 1) // 2)
    assert [signed((v + n) % p, p) for v, n in ((3, -7), (0, -1), (10**12, 5))] == [-4, -1, 10**12 + 5]


def malicious_histogram(spec, block):
    return [encoded_report(spec, block, [1, 1, 0, 0]),   # two ones
            encoded_report(spec, block, [2, 0, 0, 0]),   # a 2
            encoded_report(spec, block, [0, 0, 0, 0])]   # no one at all


def test_malicious_devices_are_rejected_with_reasons(pair):
    from client_sdk.vdaf.hpke import HpkeKeyPair, b64url

    spec, block = pair.create(spec_json("histogram"))
    values = values_for("histogram", 12)
    honest = honest_reports(spec, block, values)
    bad = malicious_histogram(spec, block)
    leader_id = block["leader"]["hpke_config"]["id"]
    helper_id = block["helper"]["hpke_config"]["id"]
    wrong_leader = encoded_report(spec, block, [0, 1, 0, 0],
                                  leader_config=HpkeKeyPair.generate(leader_id).config)   # sealed to another key
    wrong_helper = encoded_report(spec, block, [0, 1, 0, 0],
                                  helper_config=HpkeKeyPair.generate(helper_id).config)
    garbage = honest_reports(spec, block, ["a"])[0]
    garbage["payload"]["leader_share"]["ciphertext"] = b64url(bytes(80))
    moved = honest_reports(spec, block, ["a"])[0]
    moved["report_id"] = str(uuid.uuid4())  # a share moved to another report id does not open
    answer = pair.upload(honest + bad + [wrong_leader, wrong_helper, garbage, moved])
    assert answer["accepted"] == 12 + 3 + 1 and answer["rejected"] == 3
    fields = {e["report_id"]: (e["field"], e["reason"]) for e in answer["errors"]}
    assert fields[wrong_leader["report_id"]][0].endswith("payload.leader_share.ciphertext")
    assert "cannot be opened" in fields[wrong_leader["report_id"]][1]
    assert fields[garbage["report_id"]][0].endswith("payload.leader_share.ciphertext")
    assert moved["report_id"] in fields
    with opened(pair.leader_db) as store:
        assert store.existing_report_ids([uuid.UUID(r["report_id"]).bytes for r in (wrong_leader, garbage, moved)]) \
            == set()  # nothing of a rejected upload is stored

    summary = pair.aggregate()
    assert summary.aggregated == 12 and summary.rejected == 4
    count_l, count_h, exact = exact_sum(pair.leader_db, pair.helper_db, spec, today())
    assert count_l == count_h == 12 and exact == truth("histogram", values)
    end_day()
    release = pair.collect(spec.name, today()).json
    assert release["report_count"] == 12
    assert release["rejected"] == {"hpke-decrypt-error": 4, "invalid-measurement": 3}


@pytest.mark.parametrize("mutate, field", [
    (lambda p: "text", "payload"),
    (lambda p: {**p, "extra": 1}, "payload.extra"),
    (lambda p: {k: v for k, v in p.items() if k != "helper_share"}, "payload.helper_share"),
    (lambda p: {**p, "public_share": p["public_share"] + "="}, "payload.public_share"),
    (lambda p: {**p, "batch": "2026-13-01"}, "payload.batch"),
    (lambda p: {**p, "leader_share": {**p["leader_share"], "config_id": "1"}}, "payload.leader_share.config_id"),
    (lambda p: {**p, "helper_share": {**p["helper_share"], "ciphertext": "+/"}}, "payload.helper_share.ciphertext"),
])
def test_the_leader_names_the_field_of_a_malformed_payload_as_the_sdk_does(pair, mutate, field):
    "The leader parses an upload with the shared codec: the same field as parse_payload, nothing stored"
    from client_sdk.distributed_messages import parse_payload
    from client_sdk.errors import ShareRejected

    spec, block = pair.create(spec_json("histogram"))
    report = honest_reports(spec, block, ["a"])[0]
    report["payload"] = mutate(report["payload"])
    with pytest.raises(ShareRejected) as info:
        parse_payload(report["payload"])
    answer = pair.upload([report])
    assert answer["accepted"] == 0 and answer["rejected"] == 1
    assert answer["errors"][0]["field"] == f"reports[0].{field}" == f"reports[0].{info.value.field}"
    with opened(pair.leader_db) as store:
        assert store.existing_report_ids([uuid.UUID(report["report_id"]).bytes]) == set()


def test_garbage_shares_sealed_to_the_right_keys_are_rejected(pair):
    "Random bytes of the right or a wrong length, properly sealed: rejected at upload or at verification"
    import os

    from client_sdk import distributed
    from client_sdk.distributed_messages import from_b64url as b64d
    from client_sdk.vdaf.hpke import b64url, seal

    from .kit import configs

    spec, block = pair.create(spec_json("histogram"))
    leader_config, helper_config = configs(block)
    vdaf = distributed.vdaf_for(spec)
    leader_size = vdaf.field.ENCODED_SIZE * (vdaf.flp.MEAS_LEN + vdaf.flp.PROOF_LEN) + vdaf.xof.SEED_SIZE
    honest = honest_reports(spec, block, values_for("histogram", 10))
    garbage = []
    for sizes in ({"leader_share": leader_size, "helper_share": 2 * vdaf.xof.SEED_SIZE},
                  {"leader_share": 5}, {"helper_share": 7}, {"helper_share": 2 * vdaf.xof.SEED_SIZE}):
        report = honest_reports(spec, block, ["a"])[0]
        public_share = b64d(report["payload"]["public_share"], "public_share")
        for key, size in sizes.items():
            role, config = (0x02, leader_config) if key == "leader_share" else (0x03, helper_config)
            info = distributed.input_share_info(spec, report["report_id"], role, public_share)
            report["payload"][key]["ciphertext"] = b64url(seal(config, os.urandom(size), info))
        garbage.append(report)
    answer = pair.upload(honest + garbage)
    assert answer["accepted"] + answer["rejected"] == 14 and answer["rejected"] >= 1
    summary = pair.aggregate()
    assert (summary.aggregated, summary.rejected) == (10, answer["accepted"] - 10)
    count_l, count_h, exact = exact_sum(pair.leader_db, pair.helper_db, spec, today())
    assert count_l == count_h == 10 and exact == truth("histogram", values_for("histogram", 10))


@pytest.mark.parametrize(("kind", "measurement"), [
    ("sum", [2, 1, 1, 1, 1, 1, 1]),  # 101 with max_measurement 100: a bit that is not a bit
    ("count", [2]),
    ("multihot", [1, 1, 1, 0, 1, 1]),  # weight 3 > max_weight 2 (its weight bits say 2)
    ("sumvec", [1, 0, 0, 2, 0, 0, 1, 1, 1]),
])
def test_out_of_range_measurements_are_rejected(pair, kind, measurement):
    spec, block = pair.create(spec_json(kind))
    values = values_for(kind, 10)
    bad = encoded_report(spec, block, measurement)
    assert pair.upload(honest_reports(spec, block, values) + [bad])["accepted"] == 11
    summary = pair.aggregate()
    assert (summary.aggregated, summary.rejected) == (10, 1)
    assert exact_sum(pair.leader_db, pair.helper_db, spec, today())[2] == truth(kind, values)


def test_replays_are_rejected(pair):
    spec, block = pair.create(spec_json("histogram"))
    reports = honest_reports(spec, block, values_for("histogram", 10))
    assert pair.upload(reports)["accepted"] == 10
    again = pair.upload(reports[:3] + reports[:1])
    assert (again["accepted"], again["duplicate"]) == (0, 4)
    pair.aggregate()
    # a leader that sends a report again in a new job: the helper rejects it as a replay
    job = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": today(),
           "reports": [{"report_id": reports[0]["report_id"], "public_share": reports[0]["payload"]["public_share"],
                        "helper_share": reports[0]["payload"]["helper_share"], "leader_verifier_share": ""}]}
    answer = PeerClient(pair.transport, PEER_TOKEN).aggregation_job(str(uuid.uuid4()), job)
    assert answer["reports"][0]["result"] == "reject" and answer["reports"][0]["error"] == "report-replayed"
    assert exact_sum(pair.leader_db, pair.helper_db, spec, today())[:2] == (10, 10)


def test_a_job_retried_after_the_helper_committed_counts_once(pair, monkeypatch):
    from collector.distributed.leader import jobs as leader

    spec, block = pair.create(spec_json("histogram"))
    values = values_for("histogram", 15)
    pair.upload(honest_reports(spec, block, values))

    def lost_answer(*args, **kwargs):  # the helper commits, then the answer is lost on the way back
        raise leader.PeerUnavailable("connection reset after the helper committed")

    real_finish = leader._finish
    monkeypatch.setattr(leader, "_finish", lost_answer)
    with pytest.raises(PendingWork):
        pair.aggregate()
    assert exact_sum(pair.leader_db, pair.helper_db, spec, today())[:2] == (0, 15)  # the helper has it, we do not
    monkeypatch.setattr(leader, "_finish", real_finish)
    job_paths = [p for p in pair.transport.calls if "aggregation_jobs" in p]
    summary = pair.aggregate()
    assert summary.aggregated == 15 and summary.jobs_done == 1
    assert [p for p in pair.transport.calls if "aggregation_jobs" in p] == job_paths * 2  # the same job id again
    count_l, count_h, exact = exact_sum(pair.leader_db, pair.helper_db, spec, today())
    assert count_l == count_h == 15 and exact == truth("histogram", values)
    # the same job id with another body is refused
    assert query(pair.helper_db, "SELECT count(*) FROM dist_helper_seen") == [(15,)]


def test_helper_down_leaves_jobs_pending_and_nothing_is_lost(pair):
    spec, block = pair.create(spec_json("histogram"))
    values = values_for("histogram", 12)
    pair.upload(honest_reports(spec, block, values))
    pair.transport.down = True
    with pytest.raises(PendingWork) as failed:
        pair.aggregate()
    assert failed.value.summary.pending_jobs == 1
    end_day()
    response = pair.collect(spec.name, today())
    assert response.status_code == 503 and response.json["type"].endswith("helper-unavailable")
    assert "Retry-After" in response.headers
    assert query(pair.leader_db, "SELECT attempts FROM dist_jobs")[0][0] >= 2
    late = honest_reports(spec, block, ["a"])  # the day has ended: a new report enters the next day's batch
    assert pair.upload(late)["accepted"] == 1
    pair.transport.down = False
    response = pair.collect(spec.name, today())
    assert response.status_code == 200 and response.json["report_count"] == 12
    assert exact_sum(pair.leader_db, pair.helper_db, spec, today())[2] == truth("histogram", values)


def test_backoff_grows_and_is_capped():
    from collector.distributed.peer import Backoff

    backoff = Backoff(base=0.5, cap=8.0)
    ceilings = [min(8.0, 0.5 * 2**k) for k in range(8)]
    for attempt, ceiling in enumerate(ceilings):
        delay = backoff.delay(attempt)
        assert ceiling / 2 <= delay <= ceiling


def test_peer_client_retries_with_backoff_then_gives_up(pair):
    from collector.distributed.peer import PeerUnavailable

    slept: list[float] = []
    pair.transport.down = True
    client = PeerClient(pair.transport, PEER_TOKEN, retries=3, sleep=slept.append)
    with pytest.raises(PeerUnavailable):
        client.hpke_configs()
    assert len(slept) == 3 and len(pair.transport.calls) == 4


def test_min_batch_and_collect_once(pair):
    spec, block = pair.create(spec_json("histogram", min_batch=10))
    pair.upload(honest_reports(spec, block, values_for("histogram", 9)))
    early = pair.collect(spec.name, today())  # the day has not ended: devices still report into its batch
    assert early.status_code == 409 and early.json["type"].endswith("batch-open") and early.json["field"] == "batch"
    pair.upload(honest_reports(spec, block, values_for("histogram", 1)))  # the batch still takes reports
    small_spec, small_block = pair.create(spec_json("count", min_batch=10))
    pair.upload(honest_reports(small_spec, small_block, values_for("count", 9)))
    end_day()
    small = pair.collect(small_spec.name, today())
    assert small.status_code == 409 and small.json["type"].endswith("batch-too-small")
    first = pair.collect(spec.name, today())
    assert first.status_code == 200 and first.json["report_count"] == 10
    second = pair.collect(spec.name, today())  # a retry after a lost answer: the same release, no new noise
    assert second.status_code == 409 and second.json["type"].endswith("batch-collected")
    assert second.json["release"] == first.json
    late = pair.upload(honest_reports(spec, block, ["a"]))  # into the next day's batch
    assert late["accepted"] == 1 and late["rejected"] == 0
    # the helper will not release the batch twice either, even asked directly
    body = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": today(), "report_count": 10,
            "checksum": "0" * 64}
    from collector.distributed.peer import PeerRefused

    with pytest.raises(PeerRefused) as refused:
        PeerClient(pair.transport, PEER_TOKEN).aggregate_share(body)
    assert refused.value.slug == "batch-collected"


def test_helper_refuses_a_small_batch_or_a_wrong_checksum(pair):
    from collector.distributed.peer import PeerRefused

    spec, block = pair.create(spec_json("histogram", min_batch=10))
    pair.upload(honest_reports(spec, block, values_for("histogram", 10)))
    pair.aggregate()
    client = PeerClient(pair.transport, PEER_TOKEN)
    body = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": end_day(), "report_count": 10,
            "checksum": "0" * 64}
    with pytest.raises(PeerRefused) as refused:
        client.aggregate_share(body)
    assert refused.value.slug == "batch-mismatch"


def test_peer_endpoints_need_the_peer_token(pair):
    helper = pair.helper_app.test_client()
    assert helper.put("/v1/peer/campaigns/x", json={}).status_code == 401
    assert helper.put("/v1/peer/campaigns/x", json={}, headers=bearer("wrong")).status_code == 401
    assert helper.get("/v1/hpke_config").status_code == 200
    assert pair.leader.put("/v1/peer/campaigns/x", json={}, headers=bearer(PEER_TOKEN)).status_code in (404, 405)


def test_standalone_refuses_a_distributed_campaign(tmp_path):
    app = create_app({"DATABASE": str(tmp_path / "c.db"), "RATE_LIMIT": 0})
    from collector.storage import open_storage

    with open_storage(tmp_path / "c.db") as storage:
        admin = bearer(storage.create_key("admin", "2024-01-01")[0])
    response = app.test_client().post("/v1/campaigns", json=spec_json("histogram"), headers=admin)
    assert response.status_code == 409 and response.json["type"].endswith("distributed-needs-leader")


def test_estimate_before_and_after_collection(pair):
    spec, block = pair.create(spec_json("histogram"))
    before = pair.leader.get(f"/v1/campaigns/{spec.name}/estimate", headers=pair.admin)
    assert before.status_code == 409 and before.json["type"].endswith("no-release")
    pair.upload(honest_reports(spec, block, values_for("histogram", 12)))
    end_day()
    release = pair.collect(spec.name, today()).json
    after = pair.leader.get(f"/v1/campaigns/{spec.name}/estimate", headers=pair.admin)
    assert after.status_code == 200
    body = after.json
    assert body.get("release", release["release"]) == release["release"] or "values" in body
    assert len(DOMAIN) == len(release["release"])


COINS = {"noise": "coins", "coins": 8, "epsilon": 2.0, "honest_fraction": 0.5, "min_batch": 10}


def test_coin_flip_noise(pair):
    "coins: each aggregator adds its own centred Binomial; the devices' coin bits are verified (a non-bit is "
    "refused) and do not enter the release"
    from estimators.distributed import Shift, calibrate

    spec, block = pair.create(spec_json("histogram", **COINS))
    noise = calibrate("coins", epsilon=2.0, delta=1e-6, sensitivity=Shift(2, 1))
    values = values_for("histogram", 13)
    bad_coin = [0, 1, 0, 0] + [0] * 32
    bad_coin[4 + 5] = 2  # a coin "bit" equal to 2
    assert pair.upload(honest_reports(spec, block, values) + [encoded_report(spec, block, bad_coin)])["accepted"] \
        == len(values) + 1
    summary = pair.aggregate()
    assert (summary.aggregated, summary.rejected) == (len(values), 1)
    leader_count, helper_count, exact = exact_sum(pair.leader_db, pair.helper_db, spec, today())
    assert leader_count == helper_count == len(values) and exact == truth("histogram", values)

    end_day()
    release = pair.collect(spec.name, today()).json
    assert release["coin_subset"] is None and release["noise"]["mode"] == "coins"
    assert release["noise"]["coins"] == noise.coins and release["noise"]["relation"] == "replace-one"
    assert release["rejected"] == {"invalid-measurement": 1}
    drawn = [got - want for got, want in zip(release["release"], truth("histogram", values))]
    # two centred Binomials of N coins each: within [-N, N] and k sd of 0
    assert all(abs(d) <= noise.coins for d in drawn)
    assert all(abs(d) <= K_SIGMAS * math.sqrt(noise.variance()) for d in drawn)


def test_collect_checks_its_body(pair):
    spec, _ = pair.create(spec_json("histogram"))
    for body, field in (({"batch": "30-11-2026"}, "batch"), ({"batch": today(), "extra": 1}, "body"),
                        ({"batch": today(), "version": 0}, "version"), ([], "body")):
        response = pair.leader.post(f"/v1/campaigns/{spec.name}/collect", json=body, headers=pair.admin)
        assert response.status_code == 400 and response.json["field"] == field, (body, response.json)
    missing = pair.leader.post(f"/v1/campaigns/{spec.name}/collect", json={"batch": today(), "version": 2},
                               headers=pair.admin)
    assert missing.status_code == 404 and missing.json["field"] == "version"
    assert pair.leader.post(f"/v1/campaigns/{spec.name}/collect", json={"batch": today()},
                            headers=pair.ingest).status_code == 403


class ScriptedTransport:
    "Answers the scripted (status, body) pairs in turn, the last one from then on"

    def __init__(self, *answers: tuple[int, Any]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        self.calls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def rate_limited(retry_after: Any) -> tuple[int, dict]:
    return 429, {"type": "urn:ldp:error:rate-limited", "detail": "slow down", "field": "Authorization",
                 "retry_after": retry_after}


def test_after_a_429_the_client_waits_the_retry_after_the_helper_names():
    "At least the helper's retry_after (its bucket's refill), up to the backoff's cap; the backoff when smaller"
    slept: list[float] = []
    transport = ScriptedTransport(rate_limited(3), (200, {"configs": [{"id": 1}]}))
    client = PeerClient(transport, PEER_TOKEN, retries=2, sleep=slept.append)
    assert client.hpke_configs() == [{"id": 1}]
    assert slept == [3.0] and transport.calls == 2
    slept.clear()
    PeerClient(ScriptedTransport(rate_limited(600), (200, {"configs": [{}]})), PEER_TOKEN,
               sleep=slept.append).hpke_configs()
    assert slept == [5.0]  # the default backoff's cap: a huge hint does not stall the driver
    slept.clear()
    client = PeerClient(ScriptedTransport(rate_limited(0.001), (200, {"configs": [{}]})), PEER_TOKEN,
                        sleep=slept.append)
    client.hpke_configs()
    assert 0.1 <= slept[0] <= 0.2  # the backoff's first wait is longer than the hint


@pytest.mark.parametrize("hint", ["soon", True, -1, float("nan"), float("inf"), None, [3]])
def test_a_malformed_retry_after_gets_the_backoff(hint):
    slept: list[float] = []
    PeerClient(ScriptedTransport(rate_limited(hint), (200, {"configs": [{}]})), PEER_TOKEN,
               sleep=slept.append).hpke_configs()
    assert len(slept) == 1 and 0.1 <= slept[0] <= 0.2


def test_a_503s_retry_after_gets_the_backoff_and_the_hint_does_not_carry_over():
    "A 503's Retry-After (5-60 s) is coarse: the backoff; a 429 then a 503 waits the hint once, then backs off"
    slept: list[float] = []
    unavailable = (503, {"type": "urn:ldp:error:unavailable", "detail": "database", "retry_after": 10})
    PeerClient(ScriptedTransport(unavailable, (200, {"configs": [{}]})), PEER_TOKEN,
               sleep=slept.append).hpke_configs()
    assert len(slept) == 1 and 0.1 <= slept[0] <= 0.2
    slept.clear()
    PeerClient(ScriptedTransport(rate_limited(2), unavailable, (200, {"configs": [{}]})), PEER_TOKEN,
               sleep=slept.append).hpke_configs()
    assert slept[0] == 2.0 and 0.2 <= slept[1] <= 0.4


def test_the_real_helpers_429_sets_the_wait(tmp_path):
    "The helper's own rate limit (one token, then empty): the client's wait is the retry_after the helper sent"
    from collector.distributed.peer import FlaskTransport, PeerUnavailable

    helper = create_app({"DATABASE": str(tmp_path / "helper.db"), "ROLE": "helper", "PEER_TOKEN": PEER_TOKEN,
                         "RATE_LIMIT": 0, "PEER_RATE_LIMIT": 0.001, "PEER_RATE_BURST": 1}).test_client()
    headers = {"Authorization": f"Bearer {PEER_TOKEN}"}
    assert helper.post("/v1/peer/aggregate_shares", json={}, headers=headers).status_code == 400  # the token
    answer = helper.post("/v1/peer/aggregate_shares", json={}, headers=headers)
    assert answer.status_code == 429
    slept: list[float] = []
    with pytest.raises(PeerUnavailable, match="429"):  # no time passes in the fake sleep: still empty
        PeerClient(FlaskTransport(helper), PEER_TOKEN, retries=1, sleep=slept.append).aggregate_share({})
    assert slept == [5.0]  # 1000 s to refill at 0.001/s: the cap
    assert answer.json["retry_after"] >= 5
