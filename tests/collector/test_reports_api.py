"""POST /v1/reports: validation per report, duplicates, partial success, limits, gzip."""

from __future__ import annotations

import gzip
import json
import uuid

import pytest

import estimators
from collector.storage import open_storage

from .helpers import bearer, make_reports, on_both_backends, table_counts

pytestmark = on_both_backends


def post(http, key, body, **kwargs):
    return http.post("/v1/reports", json=body, headers=bearer(key), **kwargs)


def test_valid_batch_is_stored_with_its_aggregate(http, keys, campaign, db_path):
    reports = make_reports(campaign, ["chrome", "safari"] * 50)
    response = post(http, keys["ingest"], {"reports": reports})
    assert response.status_code == 200
    assert response.json == {"accepted": 100, "duplicate": 0, "rejected": 0, "errors": []}
    with open_storage(db_path) as storage:
        stored = list(storage.iter_reports("browser"))
        assert sorted(r["report_id"] for r in stored) == sorted(r["report_id"] for r in reports)
        assert set(stored[0]) == {"report_id", "campaign", "version", "fingerprint", "payload", "day"}
        version = storage.get_campaign("browser")
        assert storage.read_aggregate(version) == estimators.aggregate(campaign, [r["payload"] for r in reports])


def test_duplicates_are_counted_not_stored_twice(http, keys, campaign, db_path):
    reports = make_reports(campaign, ["chrome"] * 10)
    assert post(http, keys["ingest"], {"reports": reports}).json["accepted"] == 10
    again = post(http, keys["ingest"], {"reports": reports[:4] + make_reports(campaign, ["edge"]) + reports[:1]})
    assert again.json["accepted"] == 1 and again.json["duplicate"] == 5
    assert table_counts(db_path)["reports"] == 11
    with open_storage(db_path) as storage:
        assert storage.read_aggregate(storage.get_campaign("browser")).n == 11


def test_partial_success_lists_each_rejection_with_field_and_reason(http, keys, campaign, db_path):
    good = make_reports(campaign, ["chrome"] * 3)
    bad = [
        {**good[0], "report_id": str(uuid.uuid4()), "payload": "zz"},  # wrong length / not hex
        {**good[0], "report_id": "not-a-uuid"},
        {**good[0], "report_id": str(uuid.uuid4()), "fingerprint": "0" * 32},
        {**good[0], "report_id": str(uuid.uuid4()), "campaign": "unknown"},
        {"report_id": str(uuid.uuid4()), "campaign": "browser", "fingerprint": campaign.fingerprint},
        {**good[0], "report_id": str(uuid.uuid4()), "ip": "10.0.0.1"},
        "a string",
        {**good[0], "report_id": str(uuid.uuid4()).upper()},
    ]
    response = post(http, keys["ingest"], {"reports": good + bad})
    assert response.status_code == 200
    body = response.json
    assert (body["accepted"], body["rejected"], body["duplicate"]) == (3, len(bad), 0)
    fields = [e["field"] for e in body["errors"]]
    assert fields == ["reports[3].payload", "reports[4].report_id", "reports[5].fingerprint",
                      "reports[6].campaign", "reports[7].payload", "reports[8].ip", "reports[9]",
                      "reports[10].report_id"]
    assert all(e["reason"] for e in body["errors"])
    assert table_counts(db_path)["reports"] == 3


@pytest.mark.parametrize("payload", [None, 1.5, True, [], {}, "f" * 2, "0" * 2 + "g", [[[]]], -1])
def test_wrong_payloads_are_rejected_never_500(http, keys, campaign, payload):
    report = {"report_id": str(uuid.uuid4()), "campaign": "browser", "fingerprint": campaign.fingerprint,
              "payload": payload}
    response = post(http, keys["ingest"], {"reports": [report]})
    assert response.status_code == 200 and response.json["rejected"] == 1


@pytest.mark.parametrize("body, field", [
    ([], "body"), ({"reports": []}, "reports"), ({"reports": {}}, "reports"), ({"reports": [1], "x": 1}, "x"),
    ({}, "reports"),
])
def test_malformed_batches_are_400(http, keys, campaign, body, field, db_path):
    response = post(http, keys["ingest"], body)
    assert response.status_code == 400
    assert response.content_type == "application/problem+json"
    assert response.json["field"] == field
    assert table_counts(db_path)["reports"] == 0


def test_malformed_json_and_deep_nesting_are_400(http, keys, campaign):
    headers = {**bearer(keys["ingest"]), "Content-Type": "application/json"}
    assert http.post("/v1/reports", data=b"{not json", headers=headers).status_code == 400
    assert http.post("/v1/reports", data=b"\xff\xfe", headers=headers).status_code == 400
    deep = b'{"reports": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"  # within the item limit: the parser refuses it
    assert http.post("/v1/reports", data=deep, headers=headers).status_code == 400
    deeper = b'{"reports": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # over the item limit: refused unparsed
    assert http.post("/v1/reports", data=deeper, headers=headers).status_code == 413


def test_wrong_content_type_and_encoding_are_415(http, keys, campaign):
    body = json.dumps({"reports": make_reports(campaign, ["chrome"])}).encode()
    key = bearer(keys["ingest"])
    plain = http.post("/v1/reports", data=body, headers={**key, "Content-Type": "text/plain"})
    assert plain.status_code == 415 and plain.json["field"] == "Content-Type"
    brotli = http.post("/v1/reports", data=body,
                       headers={**key, "Content-Type": "application/json", "Content-Encoding": "br"})
    assert brotli.status_code == 415 and brotli.json["field"] == "Content-Encoding"


def test_gzip_bodies_are_accepted(http, keys, campaign):
    body = gzip.compress(json.dumps({"reports": make_reports(campaign, ["chrome"] * 20)}).encode())
    response = http.post("/v1/reports", data=body, headers={
        **bearer(keys["ingest"]), "Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert response.status_code == 200 and response.json["accepted"] == 20


def test_broken_gzip_is_400(http, keys, campaign):
    headers = {**bearer(keys["ingest"]), "Content-Type": "application/json", "Content-Encoding": "gzip"}
    assert http.post("/v1/reports", data=b"\x1f\x8bnot gzip", headers=headers).status_code == 400
    truncated = gzip.compress(b'{"reports": []}')[:-6]
    assert http.post("/v1/reports", data=truncated, headers=headers).status_code == 400


def test_gzip_bomb_is_413_by_decompressed_size(http, keys, campaign, db_path):
    bomb = gzip.compress(b" " * (50 * 1024 * 1024))  # 50 MiB of spaces in about 50 KB
    assert len(bomb) < 1024 * 1024
    response = http.post("/v1/reports", data=bomb, headers={
        **bearer(keys["ingest"]), "Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert response.status_code == 413 and response.json["field"] == "body"
    assert table_counts(db_path)["reports"] == 0


def test_oversized_body_and_batch_are_413(http, keys, campaign):
    key = bearer(keys["ingest"])
    big = http.post("/v1/reports", data=b" " * (2 * 1024 * 1024), headers={**key, "Content-Type": "application/json"})
    assert big.status_code == 413 and big.content_type == "application/problem+json"
    too_many = post(http, keys["ingest"], {"reports": make_reports(campaign, ["chrome"]) * 2001})
    assert too_many.status_code == 413 and too_many.json["field"] == "reports"


def test_reports_of_an_older_version_go_to_that_version(http, keys, campaign, db_path):
    old_reports = make_reports(campaign, ["chrome"] * 5)
    http.post("/v1/campaigns", json={**campaign.to_dict(derived=False), "version": 2, "epsilon": 2.0},
              headers=bearer(keys["admin"]))
    assert post(http, keys["ingest"], {"reports": old_reports}).json["accepted"] == 5
    with open_storage(db_path) as storage:
        assert {r["version"] for r in storage.iter_reports("browser")} == {1}
        assert storage.read_aggregate(storage.get_campaign("browser", 1)).n == 5
        assert storage.read_aggregate(storage.get_campaign("browser", 2)).n == 0


def test_a_valid_batch_is_checked_in_bulk_and_a_bad_payload_still_named(http, keys, campaign, db_path, monkeypatch):
    "No per-report check_payload for a valid OUE batch (one vectorised check); a bad payload is still named"
    from client_sdk.mechanisms.categorical import UnaryEncoding

    calls: list[object] = []
    real_check = UnaryEncoding.check_payload

    def counting(self, payload):
        calls.append(payload)
        return real_check(self, payload)

    monkeypatch.setattr(UnaryEncoding, "check_payload", counting)
    reports = make_reports(campaign, ["chrome", "safari"] * 100)
    assert post(http, keys["ingest"], {"reports": reports}).json["accepted"] == 200
    assert calls == []
    repeated = make_reports(campaign, ["edge"] * 20)
    repeated.append(dict(repeated[3], payload=repeated[3]["payload"][:-1] + " "))  # a repeated id, a bad payload
    response = post(http, keys["ingest"], {"reports": repeated})
    assert (response.json["accepted"], response.json["rejected"], response.json["duplicate"]) == (20, 1, 0)
    assert response.json["errors"][0]["field"] == "reports[20].payload" and len(calls) == 1
    bad = make_reports(campaign, ["edge"] * 50)
    bad[17]["payload"] = bad[17]["payload"][:-1] + " "
    bad.append(dict(bad[17], payload=bad[16]["payload"]))  # the bad report's id again, with a valid payload
    response = post(http, keys["ingest"], {"reports": bad})
    assert (response.json["accepted"], response.json["rejected"], response.json["duplicate"]) == (50, 1, 0)
    assert response.json["errors"][0]["field"] == "reports[17].payload"
    assert calls[-len(bad):] == [r["payload"] for r in bad]  # one by one, as before, only because one failed
    assert table_counts(db_path)["reports"] == 270


def test_a_batch_looks_its_campaign_up_once_not_once_per_report(http, keys, campaign, monkeypatch):
    "The version, its mechanism and whether it still takes reports are resolved once per (campaign, fingerprint)"
    from collector.api import reports as reports_api

    calls: list[str] = []
    real_find, real_ended = reports_api._Lookup.find, reports_api._Lookup.ended
    monkeypatch.setattr(reports_api._Lookup, "find", lambda self, *a: calls.append("find") or real_find(self, *a))
    monkeypatch.setattr(reports_api._Lookup, "ended", lambda self, c: calls.append("ended") or real_ended(self, c))
    reports = make_reports(campaign, ["chrome", "safari"] * 50)
    reports.insert(7, dict(reports[7], campaign="nonexistent"))
    response = post(http, keys["ingest"], {"reports": reports})
    assert (response.json["accepted"], response.json["rejected"]) == (100, 1)
    assert response.json["errors"][0]["field"] == "reports[7].campaign"
    assert sorted(calls) == ["ended", "find", "find"]
