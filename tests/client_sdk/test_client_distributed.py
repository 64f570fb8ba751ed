"""client_sdk.Client with a distributed campaign against an in-memory fake leader: record shards and seals with the
listed HPKE configs, then queues and delivers like a local report (same ledger, policy, statuses); the payloads
open at both aggregators and verify with Prio3."""

from __future__ import annotations

import json
import random
import uuid

import pytest

import client_sdk
from client_sdk import Client, InvalidValue, InvalidValueType, RecordStatus, ReportPolicy, UnsupportedSpec
from client_sdk.distributed import HELPER, LEADER, ctx_for, open_input_share, parse_payload, vdaf_for
from client_sdk.transport import MockTransport, Request, Response
from client_sdk.vdaf.hpke import HpkeKeyPair

VERIFY_KEY = bytes(32)
SPECS = {
    "apps": {"prio3": "histogram", "domain": ["mail", "maps", "chat"], "noise": "gaussian"},
    "spend": {"prio3": "sum", "max_measurement": 50, "noise": "laplace"},
    "opted": {"prio3": "count", "noise": "laplace"},
    "tabs": {"prio3": "sumvec", "length": 3, "max_measurement": 9, "noise": "gaussian"},
    "langs": {"prio3": "multihot", "domain": ["en", "fr", "de", "es"], "max_weight": 2, "noise": "gaussian"},
    "coins": {"prio3": "histogram", "domain": ["a", "b"], "noise": "coins", "coins": 2},
}
CASES = [("apps", ["maps", "chat", "maps"], [0, 2, 1]), ("spend", [50, 0, 7], 57), ("opted", [True, False, True], 2),
         ("tabs", [[1, 2, 3], [9, 9, 9], [0, 0, 1]], [10, 11, 13]), ("langs", [["en", "fr"], [], ["fr"]], [1, 2, 0, 0])]


def make_spec(name):
    return client_sdk.load_spec({"name": name, "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
                                 **SPECS[name]})


class FakeLeader:
    "Lists the distributed campaigns with their aggregators block and stores report batches"

    def __init__(self) -> None:
        self.leader, self.helper = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
        self.aggregators: object = {
            "leader": {"hpke_config": self.leader.config.to_dict()},
            "helper": {"url": "http://helper.test", "hpke_config": self.helper.config.to_dict()}}
        self.posts: list[list[dict]] = []
        self.spec_status = 200

    def item(self, name):
        spec = make_spec(name)
        item = {"name": name, "version": 1, "fingerprint": spec.fingerprint, "spec": spec.to_dict()}
        if self.aggregators is not None:
            item["aggregators"] = self.aggregators
        return item

    def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            if self.spec_status != 200:
                return Response.from_json(self.spec_status, {"detail": "down"})
            if request.url.endswith("/v1/campaigns"):
                return Response.from_json(200, {"campaigns": [self.item(name) for name in SPECS]})
            return Response.from_json(200, self.item(request.url.rsplit("/", 1)[1]))
        reports = request.json()["reports"]
        self.posts.append(reports)
        return Response.from_json(200, {"accepted": len(reports), "duplicate": 0, "rejected": 0, "errors": []})

    def sent(self):
        return [report for batch in self.posts for report in batch]

    def aggregate(self, spec, reports):
        "What the two aggregators compute: open both shares, verify, sum the output shares, unshard"
        vdaf, ctx = vdaf_for(spec), ctx_for(spec)
        agg = [vdaf.agg_init(), vdaf.agg_init()]
        for report in reports:
            assert report["fingerprint"] == spec.fingerprint and report["campaign"] == spec.name
            parsed = parse_payload(report["payload"])
            shares = [open_input_share(spec, self.leader, LEADER, report["report_id"], parsed.public_share,
                                       parsed.leader_ciphertext, parsed.batch),
                      open_input_share(spec, self.helper, HELPER, report["report_id"], parsed.public_share,
                                       parsed.helper_ciphertext, parsed.batch)]
            nonce = uuid.UUID(report["report_id"]).bytes
            public = vdaf.decode_public_share(parsed.public_share)
            initial = [vdaf.verify_init(VERIFY_KEY, ctx, i, nonce, public, share) for i, share in enumerate(shares)]
            message = vdaf.verifier_shares_to_message(ctx, [verifier for _, verifier in initial])
            for i, (state, _) in enumerate(initial):
                agg[i] = vdaf.agg_update(agg[i], vdaf.verify_next(ctx, state, message))
        return vdaf.unshard(agg, len(reports))


@pytest.fixture
def fake():
    return FakeLeader()


class Days:
    "A clock one UTC day further at each ``next()``: a distributed campaign takes one report per batch (day)"

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def next(self) -> None:
        self.now += 86_400


def record_daily(client, days: Days, name, values):
    "One record per day (each in its own batch)"
    recorded = []
    for value in values:
        recorded.append(client.record(name, value))
        days.next()
    return recorded


def make_client(tmp_path, fake, **kwargs):
    options = {"transport": MockTransport(fake), "background": False, "policy": ReportPolicy.unlimited(),
               "campaigns": list(SPECS), "sleep": lambda s: None, "jitter": random.Random(1)}
    options.update(kwargs)
    return Client("http://leader.test", "ldp_key", tmp_path / "state", **options)


@pytest.mark.parametrize("name, values, expected", CASES, ids=[case[0] for case in CASES])
def test_recorded_values_are_sealed_delivered_and_verify(tmp_path, fake, name, values, expected):
    days = Days()
    client = make_client(tmp_path, fake, clock=days)
    recorded = record_daily(client, days, name, values)
    assert all(r.status is RecordStatus.QUEUED for r in recorded)
    assert client.flush().sent == len(values)
    sent = fake.sent()
    assert [r["report_id"] for r in sent] == [r.report_id for r in recorded]
    assert all(set(r) == {"report_id", "campaign", "fingerprint", "payload"} for r in sent)
    assert all(set(r["payload"]) == {"public_share", "leader_share", "helper_share", "batch"} for r in sent)
    assert [r["payload"]["batch"] for r in sent] == ["2023-11-14", "2023-11-15", "2023-11-16"]
    assert fake.aggregate(make_spec(name), sent) == expected
    client.close()


def test_coin_campaign_reports_verify(tmp_path, fake):
    days = Days()
    client = make_client(tmp_path, fake, clock=days)
    record_daily(client, days, "coins", ("a", "b", "b"))
    client.flush()
    total = fake.aggregate(make_spec("coins"), fake.sent())
    assert total[:2] == [1, 2] and len(total) == 2 + 2 * 2
    client.close()


def test_same_ledger_and_report_policy_as_local_campaigns(tmp_path, fake):
    client = make_client(tmp_path, fake, policy=ReportPolicy())  # one report per UTC day
    assert client.record("apps", "mail").status is RecordStatus.QUEUED
    assert client.record("apps", "chat").status is RecordStatus.REFUSED_BY_POLICY
    spent = client.spent("apps")
    assert (spent.reports, spent.epsilon) == (1, 1.0)
    assert client.pending() == 1
    client.set_upload_enabled(False)
    assert client.record("spend", 3).status is RecordStatus.UPLOAD_DISABLED
    assert client.pending() == 0
    client.close()


@pytest.mark.parametrize("name, value, error", [
    ("apps", "news", InvalidValue), ("apps", None, InvalidValue), ("spend", 51, InvalidValue),
    ("spend", -1, InvalidValue), ("spend", "3", InvalidValueType), ("spend", float("nan"), InvalidValue),
    ("opted", "yes", InvalidValueType), ("tabs", [1, 2], InvalidValue), ("tabs", [1, 2, 10], InvalidValue),
    ("tabs", 4, InvalidValueType), ("langs", ["en", "fr", "de"], InvalidValue), ("langs", ["xx"], InvalidValue),
    ("langs", "en", InvalidValueType),
])
def test_values_outside_the_spec_raise_before_anything_is_spent(tmp_path, fake, name, value, error):
    client = make_client(tmp_path, fake)
    with pytest.raises(error):
        client.record(name, value)
    assert client.pending() == 0 and client.spent(name).reports == 0
    client.close()


def test_the_aggregators_block_is_cached_with_the_spec(tmp_path, fake):
    make_client(tmp_path, fake).close()
    fake.spec_status = 503  # the leader is down: the state file has the spec and the HPKE configs
    client = make_client(tmp_path, fake)
    assert client.record("apps", "mail").status is RecordStatus.QUEUED
    fake.spec_status = 200
    client.flush()
    assert fake.aggregate(make_spec("apps"), fake.sent()) == [1, 0, 0]
    client.close()


def test_values_held_before_the_spec_are_sealed_when_it_arrives(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[])
    assert client.record("spend", 9).status is RecordStatus.HELD
    assert client.flush().sent == 1
    assert fake.aggregate(make_spec("spend"), fake.sent()) == 9
    client.close()


def test_an_explicit_spec_fetch_keeps_the_aggregators(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[])
    assert client.spec("opted").trust == "distributed"
    assert client.record("opted", True).status is RecordStatus.QUEUED
    client.flush()
    assert fake.aggregate(make_spec("opted"), fake.sent()) == 1
    client.close()


def test_a_pinned_helper_config_must_match(tmp_path, fake):
    pinned = make_client(tmp_path / "a", fake, helper_hpke_config=fake.helper.config.to_dict())
    assert pinned.record("apps", "mail").status is RecordStatus.QUEUED
    pinned.close()
    other = make_client(tmp_path / "b", fake, helper_hpke_config=HpkeKeyPair.generate(2).config)
    with pytest.raises(UnsupportedSpec, match="pinned"):
        other.record("apps", "mail")
    assert other.pending() == 0 and other.spent("apps").reports == 0
    other.close()
    with pytest.raises(ValueError, match="public_key"):
        make_client(tmp_path / "c", fake, helper_hpke_config={**fake.helper.config.to_dict(), "public_key": "AA"})


@pytest.mark.parametrize("aggregators, field", [
    (None, "aggregators"),
    ({"leader": {}}, "aggregators.leader.hpke_config"),
    ("x", "aggregators"),
    (lambda f: {"leader": {"hpke_config": f.leader.config.to_dict()}}, "aggregators.helper.hpke_config"),
    (lambda f: {"leader": {"hpke_config": {**f.leader.config.to_dict(), "aead_id": 3}},
                "helper": {"hpke_config": f.helper.config.to_dict()}}, "aggregators.leader.hpke_config"),
    (lambda f: {"leader": {"hpke_config": f.leader.config.to_dict()},
                "helper": {"hpke_config": {**f.leader.config.to_dict(), "id": 2}}}, "aggregators"),
])
def test_an_unusable_aggregators_block_is_an_unsupported_spec(tmp_path, fake, aggregators, field):
    fake.aggregators = aggregators(fake) if callable(aggregators) else aggregators
    client = make_client(tmp_path, fake)
    with pytest.raises(UnsupportedSpec, match=f"{field}: "):
        client.record("apps", "mail")
    assert client.pending() == 0 and client.spent("apps").reports == 0
    client.close()


def test_a_distributed_report_never_stores_the_value(tmp_path, fake):
    client = make_client(tmp_path, fake)
    client.record("apps", "maps")
    client.close()
    raw = (tmp_path / "state" / "ldp-telemetry.sqlite3").read_bytes()
    cached_specs = [json.dumps({**fake.item(name)["spec"], "aggregators": fake.aggregators}) for name in SPECS]
    assert b"maps" in b"".join(s.encode() for s in cached_specs)  # the domain is in the cached spec...
    for spec_text in cached_specs:
        raw = raw.replace(spec_text.encode(), b"")
    assert b"maps" not in raw  # ...and nowhere else: the report carries only shares


def test_without_the_distributed_extra_record_names_it(tmp_path, fake, monkeypatch):
    import sys

    client = make_client(tmp_path, fake)
    monkeypatch.delitem(sys.modules, "client_sdk.vdaf.hpke")
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.hpke", None)  # as if not installed
    with pytest.raises(UnsupportedSpec, match=r"ldp-telemetry-sdk\[distributed\]"):
        client.record("apps", "mail")
    assert client.pending() == 0 and client.spent("apps").reports == 0
    client.close()


def test_one_report_per_batch_and_delta_in_the_ledger(tmp_path, fake):
    "Whatever the policy allows, a distributed campaign takes one report per batch, and batches only move forward"
    days = Days()
    client = make_client(tmp_path, fake, clock=days, policy=ReportPolicy(max_reports=5))
    assert client.record("apps", "mail").status is RecordStatus.QUEUED
    assert client.record("apps", "maps").status is RecordStatus.REFUSED_BY_POLICY  # the same batch
    days.next()
    assert client.record("apps", "maps").status is RecordStatus.QUEUED
    days.now -= 2 * 86_400  # the clock set back two days: an earlier batch
    assert client.record("apps", "chat").status is RecordStatus.REFUSED_BY_POLICY
    spent = client.spent("apps")
    assert (spent.reports, spent.epsilon, spent.delta, spent.last_batch) == (2, 2.0, 2e-6, "2023-11-15")
    client.close()


def test_a_state_file_of_version_3_gains_the_ledgers_delta_and_batch(tmp_path):
    "Migration: the ledger's rows stay, delta starts at 0 and last_batch unset"
    import sqlite3

    from client_sdk.state_file import SCHEMA, SCHEMA_VERSION, STATE_FILE_NAME, StateFile

    (tmp_path / "state").mkdir(mode=0o700)
    path = tmp_path / "state" / STATE_FILE_NAME
    conn = sqlite3.connect(path)
    old_ledger = ("CREATE TABLE IF NOT EXISTS ledger (campaign TEXT PRIMARY KEY, epsilon REAL NOT NULL, "
                  "reports INTEGER NOT NULL) WITHOUT ROWID")
    for statement in SCHEMA:
        conn.execute(old_ledger if statement.startswith("CREATE TABLE IF NOT EXISTS ledger ") else statement)
    conn.execute("INSERT INTO ledger VALUES ('apps', 3.0, 3)")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    path.chmod(0o600)
    state = StateFile(tmp_path / "state")
    from client_sdk.ledger import PrivacyLedger

    ledger = PrivacyLedger(state)
    spent = ledger.spent("apps")
    assert (spent.epsilon, spent.reports, spent.delta, spent.last_batch) == (3.0, 3, 0.0, None)
    ledger.charge("apps", 1.0, ReportPolicy(), 0.0, delta=1e-6, batch="1970-01-01")
    assert ledger.spent("apps").delta == 1e-6 and ledger.refusal("apps", 1.0, ReportPolicy.unlimited(), 0.0,
                                                                  "1970-01-01") is not None
    assert state.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    state.close()
