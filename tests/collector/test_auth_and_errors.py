"""Keys (401/403), rate limits (429 + Retry-After), and problem+json on every error path."""

from __future__ import annotations

import pytest

from collector import create_app
from collector.storage import Storage, hash_key, open_storage

from .helpers import bearer, make_reports, on_both_backends, table_counts


def test_missing_malformed_and_unknown_keys_are_401(http, keys, campaign):
    body = {"reports": make_reports(campaign, ["chrome"])}
    for headers in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"},
                    {"Authorization": "Bearer ldp_wrong"}):
        response = http.post("/v1/reports", json=body, headers=headers)
        assert response.status_code == 401
        assert response.content_type == "application/problem+json"
        assert response.json["field"] == "Authorization"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


@on_both_backends
def test_only_the_hash_of_a_key_is_stored(db_path, keys):
    with open_storage(db_path) as storage:
        rows = storage.table_rows("api_keys")
    assert {row["key_hash"] for row in rows} == {hash_key(keys["admin"]), hash_key(keys["ingest"])}
    dump = repr(rows)
    assert keys["admin"] not in dump and keys["ingest"] not in dump


@on_both_backends
def test_rate_limit_answers_429_with_retry_after_and_stores_nothing(db_path, frozen_clock):
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0.5, "RATE_BURST": 2})
    with open_storage(db_path) as storage:
        key, _ = storage.create_key("admin", "2024-01-01")
    http = app.test_client()
    assert http.get("/v1/campaigns", headers=bearer(key)).status_code == 200
    assert http.get("/v1/campaigns", headers=bearer(key)).status_code == 200
    limited = http.get("/v1/campaigns", headers=bearer(key))
    assert limited.status_code == 429
    assert limited.content_type == "application/problem+json"
    assert int(limited.headers["Retry-After"]) >= 1
    before = table_counts(db_path)
    blocked = http.post("/v1/reports", json={"reports": []}, headers=bearer(key))
    assert blocked.status_code == 429
    assert table_counts(db_path) == before


@on_both_backends
def test_rate_limit_is_shared_by_app_instances_over_one_database(db_path, frozen_clock):
    "Two apps stand for two gunicorn workers: the bucket lives in the database"
    first = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0.1, "RATE_BURST": 2})
    second = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0.1, "RATE_BURST": 2})
    with open_storage(db_path) as storage:
        key, _ = storage.create_key("ingest", "2024-01-01")
    statuses = [app.test_client().get("/v1/campaigns", headers=bearer(key)).status_code
                for app in (first, second, first, second)]
    assert statuses == [200, 200, 429, 429]


@pytest.mark.parametrize("method, path, status", [
    ("get", "/nowhere", 404), ("delete", "/v1/reports", 405), ("put", "/v1/campaigns", 405),
    ("get", "/v1/reports", 405), ("post", "/livez", 405),
])
def test_http_errors_are_problem_json(http, method, path, status):
    response = getattr(http, method)(path)
    assert response.status_code == status
    assert response.content_type == "application/problem+json"
    assert response.json["status"] == status and response.json["type"].startswith("urn:ldp-telemetry:problem:")


def test_unexpected_errors_are_problem_json_500_without_details(db_path, keys, monkeypatch, caplog):
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0})

    def explode(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Storage, "list_campaigns", explode)
    response = app.test_client().get("/v1/campaigns", headers=bearer(keys["admin"]))
    assert response.status_code == 500
    assert response.content_type == "application/problem+json"
    assert "secret internals" not in response.get_data(as_text=True)


def test_environment_configuration(db_path, monkeypatch):
    monkeypatch.setenv("LDP_DATABASE", str(db_path))
    monkeypatch.setenv("LDP_MAX_BATCH_REPORTS", "7")
    app = create_app()
    assert app.config["MAX_BATCH_REPORTS"] == 7 and app.config["DATABASE"] == str(db_path)
    assert create_app({"max_batch_reports": 9}).config["MAX_BATCH_REPORTS"] == 9
    monkeypatch.setenv("LDP_RATE_LIMIT", "fast")
    with pytest.raises(ValueError, match="LDP_RATE_LIMIT"):
        create_app()


def test_health_endpoints(http, tmp_path):
    assert http.get("/livez").json == {"status": "ok"}
    ready = http.get("/readyz")
    assert ready.status_code == 200 and ready.json["database"] == "ok"
    full = create_app({"DATABASE": str(tmp_path / "x.db"), "MIN_FREE_DISK_BYTES": 1 << 62}).test_client()
    not_ready = full.get("/readyz")
    assert not_ready.status_code == 503 and not_ready.json["field"] == "disk"


def test_metrics_count_reports_and_latency(http, keys, campaign):
    reports = make_reports(campaign, ["chrome"] * 3)
    http.post("/v1/reports", json={"reports": reports + reports[:1] + [{"x": 1}]}, headers=bearer(keys["ingest"]))
    text = http.get("/metrics").get_data(as_text=True)
    assert 'ldp_reports_total{outcome="accepted"} 3' in text
    assert 'ldp_reports_total{outcome="duplicate"} 1' in text
    assert 'ldp_reports_total{outcome="rejected"} 1' in text
    assert 'ldp_http_request_duration_seconds_count{endpoint="reports"} 1' in text
    assert 'ldp_http_requests_total{endpoint="reports",status="2xx"} 1' in text
