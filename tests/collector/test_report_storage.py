"""Report storage: no arrival order, exact compact payloads, dedup window, counts and rebuild that stay bounded."""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import uuid

import pytest

import client_sdk
import estimators
from collector import report_codec
from collector import storage as storage_module
from collector.report_codec import decode_payload, encode_payload, encode_payloads
from collector.storage import DEDUP_DAYS, LATEST_SCHEMA_VERSION, ReportGroup, Storage, open_storage
from collector.storage import base as storage_base

from .helpers import on_both_backends
from .test_storage import SPECS, group_of

DAY = "2024-03-01"
RAPPOR = {"name": "rappor", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}}


def device_batches(campaigns, devices: int, seed: int) -> list[list[ReportGroup]]:
    "Per device, one report per campaign, sent together as one request (the linkable pattern)"
    return [[group_of(c, [c.spec.domain[0] if c.spec.domain else 1.0], seed + 100 * i) for c in campaigns]
            for i in range(devices)]


def stored_rows(storage: Storage) -> list[tuple]:
    "The reports table in its storage order (a plain scan, no ORDER BY)"
    return storage.conn.execute("SELECT * FROM reports").fetchall()


def test_storage_order_does_not_follow_arrival(storage, tmp_path):
    campaigns = [storage.create_campaign(spec, DAY)[0] for spec in SPECS[:3]]
    batches = device_batches(campaigns, devices=40, seed=1)
    for batch in batches:
        storage.insert_reports(batch, DAY)
    arrival = [uuid.UUID(r).bytes for batch in batches for g in batch for r in g.report_ids]
    rows = stored_rows(storage)
    columns = [c[1] for c in storage.conn.execute("PRAGMA table_info(reports)")]
    assert columns == ["day", "report_id", "version_id", "payload"]  # no time of day, no sequence
    with pytest.raises(sqlite3.OperationalError):
        storage.conn.execute("SELECT rowid FROM reports")  # WITHOUT ROWID: no hidden arrival counter either
    stored_ids = [row[1] for row in rows]
    assert stored_ids == sorted(arrival) != arrival  # ordered by the random id alone
    assert {row[0] for row in rows} == {dt.date.fromisoformat(DAY).toordinal()}
    # The same reports arriving in the opposite order give the very same table.
    with Storage(tmp_path / "reversed.db") as other:
        other.migrate()
        for spec in SPECS[:3]:
            other.create_campaign(spec, DAY)
        for batch in reversed(batches):
            other.insert_reports([ReportGroup(g.campaign, g.report_ids, g.payloads) for g in reversed(batch)], DAY)
        assert stored_rows(other) == rows


def payload_cases():
    "Every mechanism's payloads, plus wire forms the compact encoding must not change (upper-case hex)"
    cases = []
    for spec in [*SPECS, RAPPOR]:
        loaded = client_sdk.load_spec(spec)
        mechanism = client_sdk.mechanism_from_spec(loaded, rng=client_sdk.DeterministicRandom(5))
        values = loaded.domain * 3 if loaded.domain else ([f"v{i}" for i in range(8)] if spec is RAPPOR
                                                          else [0.0, 2.5, 10.0, 7.0])
        payloads = [mechanism.perturb(v) for v in values]
        if spec["mechanism"] == "oue":
            payloads.append(payloads[0].upper())
        if spec["mechanism"] == "olh":
            payloads.append([payloads[0][0].upper(), payloads[0][1]])
        cases.append((spec, payloads))
    return cases


@pytest.mark.parametrize(("spec", "payloads"), payload_cases(), ids=[s["name"] for s, _ in payload_cases()])
@on_both_backends
def test_payloads_come_back_exactly(storage, spec, payloads):
    campaign, _ = storage.create_campaign(spec, DAY)
    ids = [str(uuid.uuid4()) for _ in payloads]
    assert storage.insert_reports([ReportGroup(campaign, ids, payloads)], DAY).accepted == len(payloads)
    back = {r["report_id"]: r for r in storage.iter_reports(campaign.name)}
    for report_id, payload in zip(ids, payloads):
        assert back[report_id]["payload"] == payload
        assert (back[report_id]["campaign"], back[report_id]["version"]) == (campaign.name, 1)
        assert back[report_id]["fingerprint"] == campaign.fingerprint and back[report_id]["day"] == DAY
        stored = encode_payload(campaign.spec.mechanism, payload)
        assert decode_payload(campaign.spec.mechanism, stored) == payload


@pytest.mark.parametrize("mechanism", ["oue", "olh", "grr"])
def test_a_stored_value_of_no_known_form_is_named_not_misread(mechanism):
    "A REAL (or any type the codec never writes) is a ValueError naming the mechanism, not an AttributeError"
    with pytest.raises(ValueError, match=f"stored '{mechanism}' payload of type float"):
        decode_payload(mechanism, 1.5)  # type: ignore[arg-type]


def test_unary_payloads_are_stored_as_bytes(storage):
    campaign, _ = storage.create_campaign({**SPECS[1], "domain": list(range(1024))}, DAY)
    storage.insert_reports([group_of(campaign, [5] * 10, seed=2)], DAY)
    sizes = {row[0] for row in storage.conn.execute("SELECT length(payload) FROM reports WHERE typeof(payload) "
                                                    "= 'blob'")}
    assert sizes == {128}
    assert storage.conn.execute("SELECT count(*) FROM reports").fetchone()[0] == 10


@on_both_backends
def test_duplicates_are_found_across_the_dedup_window(storage):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    group = group_of(campaign, ["a", "b"] * 10, seed=3)
    assert storage.insert_reports([group], DAY).accepted == 20
    later = (dt.date.fromisoformat(DAY) + dt.timedelta(days=DEDUP_DAYS)).isoformat()
    again = storage.insert_reports([ReportGroup(campaign, group.report_ids, group.payloads)], later)
    assert (again.accepted, again.duplicate) == (0, 20)
    half = ReportGroup(campaign, group.report_ids[:5] + [str(uuid.uuid4())], group.payloads[:6])
    mixed = storage.insert_reports([half], later)
    assert (mixed.accepted, mixed.duplicate) == (1, 5)
    assert storage.count_reports() == 21 and storage.read_aggregate(campaign).n == 21


def traced(storage: Storage) -> list[str]:
    statements: list[str] = []
    storage.conn.set_trace_callback(statements.append)
    return statements


def reads_reports(statements: list[str]) -> list[str]:
    return [s for s in statements if re.search(r"\bFROM\s+reports\b", s, re.IGNORECASE)]


@on_both_backends
def test_rebuild_reads_in_bounded_chunks(storage, monkeypatch):
    campaign, _ = storage.create_campaign(SPECS[1], DAY)
    other, _ = storage.create_campaign(SPECS[0], DAY)
    for seed, day in enumerate(["2024-03-01", "2024-03-01", "2024-03-02"]):
        storage.insert_reports([group_of(campaign, list(range(20)) * 3, seed=seed),
                                group_of(other, ["a", "c"] * 10, seed=seed)], day)
    incremental = storage.aggregates_by_day(campaign), storage.aggregates_by_day(other)
    sizes: list[int] = []
    real_aggregate = estimators.aggregate

    def counting(spec, payloads):
        sizes.append(len(payloads))
        return real_aggregate(spec, payloads)

    monkeypatch.setattr(storage_base, "REBUILD_CHUNK", 7)
    monkeypatch.setattr(estimators, "aggregate", counting)
    assert storage.rebuild_aggregates() == 4
    assert (storage.aggregates_by_day(campaign), storage.aggregates_by_day(other)) == incremental
    assert sizes and max(sizes) <= 7
    assert sum(sizes) == 2 * 60 + 60 + 2 * 20 + 20


LEGACY_REPORTS = """CREATE TABLE reports (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL, version INTEGER NOT NULL,
    fingerprint TEXT NOT NULL, payload TEXT NOT NULL, day TEXT NOT NULL)"""


def test_a_version_1_database_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    with Storage(path) as storage:
        storage.migrate()
        oue, _ = storage.create_campaign(SPECS[1], DAY)
        olh, _ = storage.create_campaign(SPECS[2], DAY)
        groups = [group_of(oue, list(range(20)), seed=1), group_of(olh, list(range(30)), seed=2)]
        storage.insert_reports(groups, DAY)
        aggregates = storage.aggregates_by_day(oue), storage.aggregates_by_day(olh)
        # Rewrite the file into the layout of schema version 1, as the previous release left it.
        storage.conn.executescript(f"DROP TABLE reports; DROP TABLE report_versions; {LEGACY_REPORTS}; "
                                   "PRAGMA user_version = 0;")
        storage.conn.executemany(
            "INSERT INTO reports VALUES (?, ?, ?, ?, ?, ?)",
            [(uuid.UUID(r).bytes, g.campaign.name, 1, g.campaign.fingerprint, client_sdk.spec.canonical_json(p), DAY)
             for g in groups for r, p in zip(g.report_ids, g.payloads)])
    with Storage(path) as storage:
        storage.migrate()
        assert storage.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_SCHEMA_VERSION
        assert "reports_v1" not in storage.db.table_names()
        back = {r["report_id"]: r["payload"] for r in storage.iter_reports()}
        assert back == {r: p for g in groups for r, p in zip(g.report_ids, g.payloads)}
        storage.rebuild_aggregates()
        assert (storage.aggregates_by_day(oue), storage.aggregates_by_day(olh)) == aggregates
        assert storage.insert_reports([groups[0]], DAY).duplicate == 20
        storage.migrate()  # idempotent
        assert storage.count_reports() == 50


@on_both_backends
def test_per_day_estimates_are_slim_on_request(http, keys, db_path):
    from .helpers import bearer

    spec = {"name": "wide", "mechanism": "oue", "epsilon": 2.0, "domain": list(range(64))}
    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns", json=spec, headers=admin).status_code == 201
    with open_storage(db_path) as storage:
        campaign = storage.get_campaign("wide")
        for index, day in enumerate(["2024-03-01", "2024-03-02", "2024-03-03"]):
            storage.insert_reports([group_of(campaign, [1] * 300 + [7] * 200 + [20] * 100 + [index], seed=index)], day)
    url = "/v1/campaigns/wide/estimate?granularity=day"
    full, slim = http.get(url, headers=admin), http.get(url + "&top=3", headers=admin)
    assert full.status_code == slim.status_code == 200
    days = slim.json["days"]
    assert [d["day"] for d in days] == ["2024-03-01", "2024-03-02", "2024-03-03"]
    assert [d["n"] for d in days] == [601, 601, 601]
    total = http.get("/v1/campaigns/wide/estimate", headers=admin).json["values"]
    top = sorted(sorted(total, key=lambda row: -row["estimate"])[:3], key=lambda row: total.index(row))
    for day, full_day in zip(days, full.json["days"]):
        assert [row["value"] for row in day["values"]] == [row["value"] for row in top]
        assert set(day) == {"day", "kind", "n", "confidence", "values"}
        rows = {row["value"]: row for row in full_day["values"]}
        for row in day["values"]:
            assert row == {k: rows[row["value"]][k] for k in ("value", "estimate", "std_error", "ci_low", "ci_high")}
    assert len(slim.data) * 10 < len(full.data)
    assert http.get(url + "&top=0", headers=admin).json["field"] == "top"


@on_both_backends
def test_slim_per_day_means(http, keys, db_path):
    from .helpers import NUMERIC, bearer

    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns", json=NUMERIC, headers=admin).status_code == 201
    with open_storage(db_path) as storage:
        campaign = storage.get_campaign(NUMERIC["name"])
        for index, day in enumerate(["2024-03-01", "2024-03-02"]):
            storage.insert_reports([group_of(campaign, [100.0 * (index + 1)] * 50, seed=index)], day)
    url = f"/v1/campaigns/{NUMERIC['name']}/estimate?granularity=day"
    full, slim = http.get(url, headers=admin).json["days"], http.get(url + "&top=5", headers=admin).json["days"]
    assert [set(day) for day in slim] == [{"day", "kind", "n", "confidence", "mean", "std_error", "ci_low",
                                           "ci_high", "values"}] * 2  # values: the one 'mean' row of every kind
    assert [day["mean"] for day in slim] == [day["mean"] for day in full]


@on_both_backends
def test_iter_reports_filters_by_campaign_and_version(storage):
    first, _ = storage.create_campaign(SPECS[0], DAY)
    second, _ = storage.create_campaign({**SPECS[0], "epsilon": 2.0}, DAY)
    other, _ = storage.create_campaign(SPECS[1], DAY)
    storage.insert_reports([group_of(first, ["a"] * 3, 1), group_of(second, ["b"] * 4, 2),
                            group_of(other, [1] * 5, 3)], DAY)
    assert len(list(storage.iter_reports())) == 12
    assert len(list(storage.iter_reports("grr"))) == 7
    assert {r["version"] for r in storage.iter_reports("grr", 2)} == {2}
    assert len(list(storage.iter_reports(version=1))) == 8


def test_same_day_duplicates_are_dropped_in_the_insert_itself(storage):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    group = group_of(campaign, ["a", "b"] * 300, seed=3)
    storage.insert_reports([group], DAY)
    fresh = group_of(campaign, ["c"] * 5, seed=4)
    mixed = ReportGroup(campaign, group.report_ids[:250] + fresh.report_ids, group.payloads[:250] + fresh.payloads)
    statements = traced(storage)
    result = storage.insert_reports([mixed], DAY)
    assert (result.accepted, result.duplicate) == (5, 250)
    assert result.duplicate_ids == set(group.report_ids[:250])
    assert not [s for s in statements if re.match(r"\s*SELECT report_id FROM reports WHERE day IN", s)]
    aggregate = storage.read_aggregate(campaign)
    assert aggregate.n == 605 and aggregate == estimators.aggregate(campaign.spec, group.payloads + fresh.payloads)


def test_an_id_repeated_within_an_insert_is_refused_not_counted_twice(storage):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    group = group_of(campaign, ["a"] * 5, seed=2)
    repeated = ReportGroup(campaign, group.report_ids + group.report_ids[:1], group.payloads + group.payloads[:1])
    with pytest.raises(storage_module.StorageError, match="unique"):
        storage.insert_reports([repeated], DAY)
    assert storage.count_reports() == 0 and storage.row_count("reports") == 0


@pytest.mark.parametrize("payloads", [
    ["0a1b", "ffee", "0000"],  # the usual case: converted together
    ["0a1b", "FFEE"],  # upper case: stored as text
    ["0a", "1b2c"],  # lengths differ (joined, the bytes would split wrongly)
    ["0a 1b ", "b2c3d4"],  # fromhex skips spaces
    ["0a1b", 5],  # not all strings
    ["", ""],
], ids=["lower", "upper", "lengths", "space", "int", "empty"])
def test_unary_payloads_encoded_together_are_encoded_as_one_by_one(payloads, monkeypatch):
    together = encode_payloads("oue", payloads)
    monkeypatch.setattr(report_codec, "_unary_in_one_pass", lambda payloads: None)
    assert together == encode_payloads("oue", payloads)
    assert [type(v) for v in together] == [type(v) for v in encode_payloads("oue", payloads)]


def test_slim_per_day_rappor(http, keys, db_path):
    "RAPPOR's per-day estimates slim to the top candidates too (its estimate has no per-value arrays)"
    from .helpers import bearer

    spec = {"name": "homepage", "mechanism": "rappor", "candidates": ["a", "b", "c"],
            "rappor": {"k": 32, "h": 1, "m": 4, "f": 0.0, "p": 0.25, "q": 0.75}}
    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns", json=spec, headers=admin).status_code == 201
    with open_storage(db_path) as storage:
        campaign = storage.get_campaign("homepage")
        for index, day in enumerate(["2024-03-01", "2024-03-02"]):
            storage.insert_reports([group_of(campaign, ["a"] * 600 + ["b"] * 300, seed=index)], day)
    url = "/v1/campaigns/homepage/estimate?granularity=day"
    full, slim = http.get(url, headers=admin), http.get(url + "&top=1", headers=admin)
    assert full.status_code == slim.status_code == 200, slim.json
    for day, full_day in zip(slim.json["days"], full.json["days"]):
        largest = max(full_day["values"], key=lambda row: row["estimate"])
        assert [row["value"] for row in day["values"]] == [largest["value"]] and day["kind"] == "rappor"
