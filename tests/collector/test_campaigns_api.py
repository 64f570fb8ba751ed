"""Campaign endpoints: create, versions, fetch, list, estimate."""

from __future__ import annotations

import datetime as dt

import pytest

import client_sdk

from .helpers import CATEGORICAL, NUMERIC, bearer, make_reports, on_both_backends, table_counts

pytestmark = on_both_backends


def test_create_resolves_auto_and_returns_a_loadable_spec(http, keys):
    response = http.post("/v1/campaigns", json={"name": "os", "mechanism": "auto", "epsilon": 1.0,
                                                 "domain": ["linux", "mac", "windows"]}, headers=bearer(keys["admin"]))
    assert response.status_code == 201
    body = response.json
    assert body["mechanism"] == "grr" and body["spec"]["mechanism"] == "grr"
    assert body["version"] == 1
    assert response.headers["Location"].endswith("/v1/campaigns/os?version=1")
    spec = client_sdk.load_spec(body["spec"])
    assert spec.fingerprint == body["fingerprint"]


def test_identical_spec_is_idempotent_and_a_change_makes_a_new_version(http, keys):
    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns", json=CATEGORICAL, headers=admin).status_code == 201
    again = http.post("/v1/campaigns", json=CATEGORICAL, headers=admin)
    assert again.status_code == 200 and again.json["version"] == 1
    changed = http.post("/v1/campaigns", json={**CATEGORICAL, "epsilon": 2.0}, headers=admin)
    assert changed.status_code == 201 and changed.json["version"] == 2
    latest = http.get("/v1/campaigns/browser", headers=admin).json
    assert latest["version"] == 2 and latest["versions"] == [1, 2]
    first = http.get("/v1/campaigns/browser?version=1", headers=admin).json
    assert first["spec"]["epsilon"] == 1.0


def test_wrong_explicit_version_is_a_conflict(http, keys):
    admin = bearer(keys["admin"])
    response = http.post("/v1/campaigns", json={**CATEGORICAL, "version": 3}, headers=admin)
    assert response.status_code == 409
    assert response.json["field"] == "version"
    assert table_counts_zero(http)


def table_counts_zero(http) -> bool:
    return table_counts(http.application.config["DATABASE"])["campaigns"] == 0


@pytest.mark.parametrize("spec, field", [
    ({"name": "x", "mechanism": "oue", "epsilon": -1, "domain": ["a", "b"]}, "epsilon"),
    ({"name": "x", "mechanism": "nope"}, "mechanism"),
    ({"name": "bad name", "mechanism": "oue", "epsilon": 1, "domain": ["a", "b"]}, "name"),
    ({"name": "x", "mechanism": "laplace", "epsilon": 1, "range": [5, 1]}, "range"),
    ({"name": "x", "mechanism": "oue", "epsilon": 1, "domain": ["a", "b"], "colour": 1}, "colour"),
])
def test_invalid_specs_name_the_field(http, keys, spec, field):
    response = http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"]))
    assert response.status_code == 400
    assert response.content_type == "application/problem+json"
    assert response.json["field"] == field
    assert table_counts_zero(http)


def test_high_epsilon_is_created_with_a_warning(http, keys):
    response = http.post("/v1/campaigns", json={**CATEGORICAL, "epsilon": 12.0}, headers=bearer(keys["admin"]))
    assert response.status_code == 201
    assert response.json["warnings"] and "privacy" in response.json["warnings"][0]


def test_list_and_get_need_a_key_and_ingest_keys_may_read(http, keys, campaign):
    assert http.get("/v1/campaigns").status_code == 401
    listing = http.get("/v1/campaigns", headers=bearer(keys["ingest"]))
    assert listing.status_code == 200
    assert [c["name"] for c in listing.json["campaigns"]] == ["browser"]
    assert http.get("/v1/campaigns/browser", headers=bearer(keys["ingest"])).status_code == 200
    missing = http.get("/v1/campaigns/nothing", headers=bearer(keys["ingest"]))
    assert missing.status_code == 404 and missing.json["field"] == "name"
    assert http.get("/v1/campaigns/browser?version=9", headers=bearer(keys["ingest"])).json["field"] == "version"


def test_only_admin_creates_and_estimates(http, keys, campaign):
    assert http.post("/v1/campaigns", json=NUMERIC, headers=bearer(keys["ingest"])).status_code == 403
    assert http.get("/v1/campaigns/browser/estimate", headers=bearer(keys["ingest"])).status_code == 403


def test_estimate_total_and_per_day(http, keys, campaign):
    reports = make_reports(campaign, ["chrome"] * 300 + ["safari"] * 100)
    assert http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"])).json["accepted"] == 400
    admin = bearer(keys["admin"])
    total = http.get("/v1/campaigns/browser/estimate?confidence=0.9", headers=admin)
    assert total.status_code == 200
    body = total.json
    assert body["kind"] == "frequency" and body["n"] == 400 and body["confidence"] == 0.9
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    per_day = http.get(f"/v1/campaigns/browser/estimate?granularity=day&since={today}&until={today}", headers=admin)
    assert [d["day"] for d in per_day.json["days"]] == [today]
    assert per_day.json["days"][0]["n"] == 400


def test_estimate_without_reports_and_bad_parameters(http, keys, campaign):
    admin = bearer(keys["admin"])
    empty = http.get("/v1/campaigns/browser/estimate", headers=admin)
    assert empty.status_code == 404 and empty.json["type"].endswith("no-reports")
    for query, field in [("confidence=1.5", "confidence"), ("confidence=abc", "confidence"),
                         ("since=2024-13-01", "since"), ("until=yesterday", "until"),
                         ("since=2024-02-02&until=2024-02-01", "since"), ("granularity=week", "granularity"),
                         ("version=0", "version"), ("version=%C2%B2", "version")]:
        response = http.get(f"/v1/campaigns/browser/estimate?{query}", headers=admin)
        assert response.status_code == 400, query
        assert response.json["field"] == field, query


def test_numeric_campaign_estimate(http, keys):
    admin = bearer(keys["admin"])
    spec = client_sdk.load_spec(http.post("/v1/campaigns", json=NUMERIC, headers=admin).json["spec"])
    reports = make_reports(spec, [250.0] * 500)
    assert http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"])).json["accepted"] == 500
    body = http.get("/v1/campaigns/load_ms/estimate", headers=admin).json
    assert body["kind"] == "mean" and body["n"] == 500
