"""client_sdk.Client with a distributed campaign against an in-memory fake leader and helper: record shards and seals
with the listed HPKE configs once the helper's own answer (or a pin) vouches for them, then queues and delivers like
a local report (same ledger, policy, statuses); the payloads open at both aggregators and verify with Prio3.  A
listing that names another helper URL or key is refused (``aggregator_mismatch``) with nothing charged or queued."""

from __future__ import annotations

import json
import uuid

import pytest

import client_sdk
from client_sdk import Client, InvalidValue, InvalidValueType, RecordStatus, ReportPolicy, UnsupportedSpec
from client_sdk.distributed import HELPER, LEADER, ctx_for, open_input_share, parse_payload, vdaf_for
from client_sdk.runtime.transport import MockTransport, Request, Response
from client_sdk.vdaf.hpke import HpkeKeyPair

from . import fakes

VERIFY_KEY = bytes(32)
SPECS = {
    "apps": {"prio3": "histogram", "domain": ["mail", "maps", "chat"], "noise": "gaussian"},
    "spend": {"prio3": "sum", "max_measurement": 50, "noise": "laplace"},
    "opted": {"prio3": "count", "noise": "laplace"},
    "tabs": {"prio3": "sumvec", "length": 3, "max_measurement": 9, "noise": "gaussian"},
    "langs": {"prio3": "multihot", "domain": ["en", "fr", "de", "es"], "max_weight": 2, "noise": "gaussian"},
    "coins": {"prio3": "histogram", "domain": ["a", "b"], "noise": "coins", "coins": 2},
    "minutely": {"prio3": "count", "noise": "laplace", "window": "1m"},
}
CASES = [("apps", ["maps", "chat", "maps"], [0, 2, 1]), ("spend", [50, 0, 7], 57), ("opted", [True, False, True], 2),
         ("tabs", [[1, 2, 3], [9, 9, 9], [0, 0, 1]], [10, 11, 13]), ("langs", [["en", "fr"], [], ["fr"]], [1, 2, 0, 0])]


def make_spec(name):
    return client_sdk.load_spec({"name": name, "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
                                 **SPECS[name]})


LEADER_URL, HELPER_URL = "https://leader.test", "https://helper.test"


class FakeLeader:
    """Lists the distributed campaigns with their aggregators block and stores report batches; also answers as the
    helper (``GET https://helper.test/v1/hpke_config``, its own config)"""

    def __init__(self) -> None:
        self.leader, self.helper = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
        self.aggregators: object = {
            "leader": {"hpke_config": self.leader.config.to_dict()},
            "helper": {"url": HELPER_URL, "hpke_config": self.helper.config.to_dict()}}
        self.posts: list[list[dict]] = []
        self.spec_status = 200
        self.helper_status = 200
        self.helper_requests: list[Request] = []

    def item(self, name):
        spec = make_spec(name)
        item = {"name": name, "version": 1, "fingerprint": spec.fingerprint, "spec": spec.to_dict()}
        if self.aggregators is not None:
            item["aggregators"] = self.aggregators
        return item

    def __call__(self, request: Request) -> Response:
        if request.url.startswith(HELPER_URL):
            self.helper_requests.append(request)
            assert request.url == HELPER_URL + "/v1/hpke_config" and request.method == "GET"
            if self.helper_status != 200:
                return Response.from_json(self.helper_status, {"detail": "down"})
            return Response.from_json(200, {"configs": [self.helper.config.to_dict()]})
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
    "Overrides conftest's fake collector: this module's devices talk to a leader and its helper"
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
    "fakes.make_client for the distributed campaigns: the leader's URL, the helper's, the OS's randomness"
    options = {"campaigns": list(SPECS), "aggregators": {"helper": HELPER_URL}, "rng": None, **kwargs}
    return fakes.make_client(tmp_path, fake, url=LEADER_URL, **options)


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
    fake.spec_status = fake.helper_status = 503  # both down: the state file has the spec and the HPKE configs
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
    pin = fake.helper.config.to_dict()
    for index, options in enumerate([{"aggregators": {"helper": {"url": HELPER_URL, "hpke_config": pin}}},
                                     {"aggregators": {"helper": {"hpke_config": pin}}},
                                     {"aggregators": None, "helper_hpke_config": pin}]):  # the older argument
        pinned = make_client(tmp_path / f"a{index}", fake, **options)
        assert pinned.record("apps", "mail").status is RecordStatus.QUEUED
        pinned.close()
    assert not fake.helper_requests  # a pin needs nothing from the helper
    other = make_client(tmp_path / "b", fake, aggregators={"helper": {"hpke_config": HpkeKeyPair.generate(2).config}})
    assert other.record("apps", "mail").status is RecordStatus.AGGREGATOR_MISMATCH
    assert other.pending() == 0 and other.spent("apps").reports == 0
    other.close()
    with pytest.raises(ValueError, match="public_key"):
        make_client(tmp_path / "c", fake, aggregators={"helper": {"hpke_config": {**pin, "public_key": "AA"}}})


@pytest.mark.parametrize("aggregators, match", [
    ({"helper": "http://helper.test"}, "aggregators.helper.url: must be https"),
    ({"helper": "http://10.0.0.7:8080"}, "aggregators.helper.url: must be https"),
    ({"helper": "ftp://helper.test"}, "aggregators.helper.url"),
    ({"helper": "https://helper.test/?x=1"}, "aggregators.helper.url"),
    ({"leader": {"url": LEADER_URL}}, "aggregators: must be"),
    ({"helper": {}}, "aggregators.helper"),
    ({"helper": HELPER_URL, "leader": {"url": "https://other.test"}}, "aggregators.leader.url"),
    ({"helper": HELPER_URL, "extra": 1}, "aggregators"),
    ("https://helper.test", "aggregators"),
])
def test_the_configured_aggregators_are_checked(tmp_path, fake, aggregators, match):
    with pytest.raises(ValueError, match=match.replace(".", r"\.")):
        make_client(tmp_path, fake, aggregators=aggregators)


def test_plain_http_only_to_loopback(tmp_path, fake):
    for url in ("http://127.0.0.1:8001", "http://127.9.9.9", "http://[::1]:9", "http://localhost:8002/"):
        make_client(tmp_path / url.replace("/", "_"), fake, aggregators={"helper": url}, campaigns=[]).close()
    with pytest.raises(ValueError, match=r"^url: must be https"):  # the leader, when aggregators are configured
        Client("http://leader.test", "k", tmp_path / "x", transport=MockTransport(fake), background=False,
               aggregators={"helper": HELPER_URL})


def test_without_configured_aggregators_nothing_is_sealed(tmp_path, fake):
    client = make_client(tmp_path, fake, aggregators=None)
    assert client.record("apps", "mail").status is RecordStatus.AGGREGATORS_NOT_CONFIGURED
    assert client.record("spend", 3).status is RecordStatus.AGGREGATORS_NOT_CONFIGURED
    assert client.pending() == 0 and client.spent("apps").reports == 0
    assert client.status().recorded["aggregators_not_configured"] == 2
    client.close()


def _rewritten(fake, helper=None, url=None):
    block = fake.aggregators
    return {"leader": block["leader"], "helper": {"url": url or HELPER_URL,
                                                  "hpke_config": (helper or fake.helper.config).to_dict()}}


@pytest.mark.parametrize("rewrite", ["helper key", "helper url", "both keys the leader's", "helper key, other id"])
def test_a_listing_that_names_another_helper_is_refused(tmp_path, fake, rewrite):
    "The attack of a leader that lists a key of its own as the helper's: refused before anything is charged"
    attacker = HpkeKeyPair.generate(fake.helper.config.id if rewrite == "helper key" else 77)
    fake.aggregators = {"helper key": lambda: _rewritten(fake, helper=attacker.config),
                        "helper key, other id": lambda: _rewritten(fake, helper=attacker.config),
                        "helper url": lambda: _rewritten(fake, url="https://evil.test"),
                        "both keys the leader's": lambda: _rewritten(fake, helper=fake.leader.config)}[rewrite]()
    client = make_client(tmp_path, fake)
    assert client.record("apps", "mail").status is RecordStatus.AGGREGATOR_MISMATCH
    assert client.pending() == 0 and client.spent("apps").reports == 0
    assert client.flush().sent == 0 and not fake.sent()
    assert client.status().recorded == {"aggregator_mismatch": 1}
    client.close()


def test_the_helper_configs_come_from_the_helper_without_the_api_key(tmp_path, fake):
    client = make_client(tmp_path, fake)
    assert client.record("apps", "mail").status is RecordStatus.QUEUED
    assert [r.url for r in fake.helper_requests] == [HELPER_URL + "/v1/hpke_config"]
    assert "Authorization" not in fake.helper_requests[0].headers  # the leader's key is not the helper's to see
    client.close()


def test_values_wait_in_memory_until_the_helper_answers(tmp_path, fake):
    fake.helper_status = 503
    client = make_client(tmp_path, fake)
    assert client.record("apps", "maps").status is RecordStatus.HELD
    assert client.pending() == 0 and client.spent("apps").reports == 0
    fake.helper_status = 200
    assert client.flush().sent == 1
    assert fake.aggregate(make_spec("apps"), fake.sent()) == [0, 1, 0]
    client.close()


@pytest.mark.parametrize("aggregators, field", [
    (None, "aggregators"),
    ({"leader": {}}, "aggregators.leader.hpke_config"),
    ("x", "aggregators"),
    (lambda f: {"leader": {"hpke_config": f.leader.config.to_dict()}}, "aggregators.helper.hpke_config"),
    (lambda f: {"leader": {"hpke_config": {**f.leader.config.to_dict(), "aead_id": 3}},
                "helper": {"hpke_config": f.helper.config.to_dict()}}, "aggregators.leader.hpke_config"),
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
    cached_specs.append(json.dumps({"url": HELPER_URL, "configs": [fake.helper.config.to_dict()]}))
    assert b"maps" in b"".join(s.encode() for s in cached_specs)  # the domain is in the cached spec...
    for spec_text in cached_specs:
        raw = raw.replace(spec_text.encode(), b"")
    assert b"maps" not in raw  # ...and nowhere else: the report carries only shares


def test_without_the_distributed_extra_record_names_it(tmp_path, fake, monkeypatch):
    import sys

    client = make_client(tmp_path, fake)
    monkeypatch.delitem(sys.modules, "client_sdk.vdaf.hpke")
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.hpke", None)  # as if not installed
    with pytest.raises(UnsupportedSpec, match=r"pip install './sdk\[distributed\]'"):
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


@pytest.mark.parametrize("version", [3, 4])
def test_a_state_file_of_an_earlier_version_gains_the_ledgers_delta_and_batch(tmp_path, version):
    """Migration from version 3 (no held table, the old ledger) and 4 (held values, the old ledger): the ledger's
    rows stay, delta starts at 0 and last_batch unset; a version-3 file gains the held table too"""
    import sqlite3

    from client_sdk.runtime.state_file import SCHEMA, SCHEMA_VERSION, STATE_FILE_NAME, StateFile

    (tmp_path / "state").mkdir(mode=0o700)
    path = tmp_path / "state" / STATE_FILE_NAME
    conn = sqlite3.connect(path)
    old_ledger = ("CREATE TABLE IF NOT EXISTS ledger (campaign TEXT PRIMARY KEY, epsilon REAL NOT NULL, "
                  "reports INTEGER NOT NULL) WITHOUT ROWID")
    for statement in SCHEMA:
        if version < 4 and " held" in statement:  # version 4 added the held values
            continue
        conn.execute(old_ledger if statement.startswith("CREATE TABLE IF NOT EXISTS ledger ") else statement)
    conn.execute("INSERT INTO ledger VALUES ('apps', 3.0, 3)")
    if version == 4:
        conn.execute("INSERT INTO held (campaign, value, recorded) VALUES ('later', '1', 0)")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    path.chmod(0o600)
    state = StateFile(tmp_path / "state")
    from client_sdk.runtime.ledger import PrivacyLedger

    ledger = PrivacyLedger(state)
    spent = ledger.spent("apps")
    assert (spent.epsilon, spent.reports, spent.delta, spent.last_batch) == (3.0, 3, 0.0, None)
    ledger.charge("apps", 1.0, ReportPolicy(), 0.0, delta=1e-6, batch="1970-01-01")
    assert ledger.spent("apps").delta == 1e-6 and ledger.refusal("apps", 1.0, ReportPolicy.unlimited(), 0.0,
                                                                  "1970-01-01") is not None
    assert state.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    held = state.conn.execute("SELECT campaign, value FROM held").fetchall()
    assert held == ([("later", "1")] if version == 4 else [])  # a version-4 file keeps its held values
    state.close()


def test_a_campaign_of_one_minute_batches_takes_one_report_a_minute(tmp_path, fake):
    """The batch follows the spec's window: with the default policy (its period: the campaign's), a device reports
    once per 1-minute batch, not once per day; each report names its minute and is sealed for it"""
    days = Days()  # 1_700_000_000 is 22:13:20 UTC
    client = make_client(tmp_path, fake, clock=days, policy=ReportPolicy())
    assert client.record("minutely", True).status is RecordStatus.QUEUED
    days.now += 39  # 22:13:59: the same batch
    assert client.record("minutely", False).status is RecordStatus.REFUSED_BY_POLICY
    days.now += 1  # 22:14:00: the next one
    assert client.record("minutely", False).status is RecordStatus.QUEUED
    spent = client.spent("minutely")
    assert (spent.reports, spent.last_batch) == (2, "2023-11-14T22:14Z")
    assert client.flush(timeout=30).sent == 2
    reports = fake.sent()
    assert [parse_payload(r["payload"]).batch for r in reports] == ["2023-11-14T22:13Z", "2023-11-14T22:14Z"]
    assert fake.aggregate(make_spec("minutely"), reports) == 1  # each opens for the minute it names
    daily = make_client(tmp_path / "daily", fake, clock=days, policy=ReportPolicy(period_seconds=86_400))
    assert daily.record("minutely", True).status is RecordStatus.QUEUED
    days.now += 60
    assert daily.record("minutely", True).status is RecordStatus.REFUSED_BY_POLICY  # its own period: a day
    daily.close()
    client.close()
