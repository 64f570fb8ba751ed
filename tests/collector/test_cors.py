"""CORS, played by a hostile page: only the allowed origins, only the spec and report routes, never admin ones."""

from __future__ import annotations

import http.client
import json
import subprocess
from typing import Any
from urllib.parse import urlsplit

import pytest

from collector import create_app
from collector.config import load_config
from collector.cors import ALLOWED_HEADERS, MAX_AGE, parse_origins
from collector.storage import open_storage

from .helpers import CATEGORICAL, bearer, ldp_command, make_reports, running_server

PAGE = "https://app.example.org"
# Near misses of PAGE a hostile page could have: other scheme, port, host, a suffix or prefix, and "null"
NEAR_MISSES = ("http://app.example.org", "https://app.example.org:8443", "https://evil.example.org",
               "https://app.example.org.evil.example", "https://xapp.example.org", "null", "https://APP.example.org")
# (method, rule) pairs a browser may call: everything else must stay closed
BROWSER_ROUTES = {("GET", "/v1/campaigns"), ("GET", "/v1/campaigns/<name>"), ("POST", "/v1/reports")}
CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
                "Access-Control-Allow-Credentials", "Access-Control-Expose-Headers", "Access-Control-Max-Age")


def preflight(http: Any, path: str, method: str = "GET", origin: str = PAGE,
              headers: str = "authorization, content-type") -> Any:
    return http.options(path, headers={"Origin": origin, "Access-Control-Request-Method": method,
                                       "Access-Control-Request-Headers": headers})


def cors_headers(response: Any) -> dict[str, str]:
    return {name: response.headers[name] for name in CORS_HEADERS if name in response.headers}


@pytest.fixture
def cors_app(db_path):
    return create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "CORS_ORIGINS": [PAGE, "http://localhost:5173"]})


@pytest.fixture
def page(cors_app, keys, campaign):
    "A test client standing for a page on PAGE (the keys and the campaign made through the default app)"
    return cors_app.test_client()


def test_without_configured_origins_no_response_carries_cors_headers(http, keys, campaign):
    asked = [preflight(http, "/v1/reports", "POST"), preflight(http, "/v1/campaigns"),
             http.get("/v1/campaigns", headers={"Origin": PAGE, **bearer(keys["ingest"])}),
             http.post("/v1/reports", json={"reports": []}, headers={"Origin": PAGE, **bearer(keys["ingest"])})]
    for response in asked:
        assert cors_headers(response) == {}
        assert "Origin" not in response.headers.get("Vary", "")


def test_a_preflight_from_an_allowed_origin_is_answered_without_a_key(page):
    for path, method in (("/v1/campaigns", "GET"), ("/v1/campaigns/browser", "GET"), ("/v1/reports", "POST")):
        response = preflight(page, path, method)
        assert response.status_code == 204, response.data
        assert cors_headers(response) == {"Access-Control-Allow-Origin": PAGE, "Access-Control-Allow-Methods": method,
                                          "Access-Control-Allow-Headers": ALLOWED_HEADERS,
                                          "Access-Control-Max-Age": str(MAX_AGE)}
        assert "Origin" in response.headers["Vary"]
    allowed = {name.strip().lower() for name in ALLOWED_HEADERS.split(",")}
    assert allowed == {"authorization", "content-type", "content-encoding"}  # exactly what the SDKs send


@pytest.mark.parametrize("origin", NEAR_MISSES)
def test_a_page_from_another_origin_gets_no_cors_headers(page, keys, campaign, origin):
    refused = preflight(page, "/v1/reports", "POST", origin=origin)
    assert refused.status_code == 403
    assert refused.content_type == "application/problem+json" and refused.json["field"] == "Origin"
    assert cors_headers(refused) == {}
    body = {"reports": make_reports(campaign, ["chrome"])}
    for response in (page.get("/v1/campaigns", headers={"Origin": origin, **bearer(keys["ingest"])}),
                     page.post("/v1/reports", json=body, headers={"Origin": origin, **bearer(keys["ingest"])})):
        assert response.status_code == 200  # served (a non-browser client may send any Origin) but unreadable
        assert cors_headers(response) == {}
        assert "Origin" in response.headers["Vary"]


def test_only_the_spec_and_report_routes_are_open_to_browsers(cors_app, page, keys, campaign):
    "Every rule and method of the app, preflighted from the allowed origin: only the device's routes answer"
    opened = set()
    for rule in cors_app.url_map.iter_rules():
        path = rule.rule.replace("<name>", "browser")
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            response = preflight(page, path, method)
            if response.status_code == 204:
                opened.add((method, rule.rule))
            else:
                assert response.status_code == 403 and cors_headers(response) == {}, (method, rule.rule)
    assert opened == BROWSER_ROUTES


def test_admin_routes_never_carry_cors_headers_even_for_the_allowed_origin(page, keys, campaign):
    admin = {"Origin": PAGE, **bearer(keys["admin"])}
    answers = [page.post("/v1/campaigns", json={**CATEGORICAL, "epsilon": 2.0}, headers=admin),
               page.get("/v1/campaigns/browser/estimate", headers=admin),
               page.post("/v1/campaigns/browser/close", headers=admin),
               page.get("/v1/campaigns/browser/estimate", headers={"Origin": PAGE}),  # 401
               page.get("/metrics", headers={"Origin": PAGE}), page.get("/readyz", headers={"Origin": PAGE})]
    assert [a.status_code for a in answers[:4]] == [201, 404, 200, 401]  # 404: no reports yet
    for response in answers:
        assert cors_headers(response) == {}, response.request.path


def test_problem_responses_of_browser_routes_are_readable_by_the_page(db_path, keys, campaign, frozen_clock):
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0.01, "RATE_BURST": 2, "MAX_BATCH_REPORTS": 2,
                      "CORS_ORIGINS": PAGE})
    page = app.test_client()
    origin = {"Origin": PAGE}
    ingest = {**origin, **bearer(keys["ingest"])}
    answers = {
        401: page.post("/v1/reports", json={"reports": []}, headers=origin),
        400: page.post("/v1/reports", data=b"{", headers={**ingest, "Content-Type": "application/json"}),
        404: page.get("/v1/campaigns/missing", headers=ingest),
    }
    answers[429] = page.post("/v1/reports", json={"reports": []}, headers=ingest)  # the bucket held two tokens
    admin = {**origin, **bearer(keys["admin"])}
    answers[413] = page.post("/v1/reports", json={"reports": make_reports(campaign, ["chrome"] * 3)}, headers=admin)
    for status, response in answers.items():
        assert response.status_code == status, response.json
        assert response.content_type == "application/problem+json"
        assert response.headers["Access-Control-Allow-Origin"] == PAGE
        assert "Retry-After" in response.headers["Access-Control-Expose-Headers"]
    assert int(answers[429].headers["Retry-After"]) >= 1


@pytest.mark.parametrize("origin", ["*", "null", "https://app.example.org/path", "ftp://app.example.org",
                                    "app.example.org", "https://*.example.org", "https://user@app.example.org",
                                    "https://app.example.org:99999"])
def test_an_origin_list_with_a_wildcard_or_a_non_origin_is_refused(db_path, origin):
    with pytest.raises(ValueError, match="CORS_ORIGINS"):
        create_app({"DATABASE": str(db_path), "CORS_ORIGINS": [PAGE, origin]})


def test_origins_are_written_as_browsers_send_them():
    assert parse_origins("HTTPS://App.Example.org:443/, http://localhost:5173 ,http://[::1]:80") == \
        ("https://app.example.org", "http://localhost:5173", "http://[::1]")
    assert parse_origins(["https://a.example", "https://a.example"]) == ("https://a.example",)
    assert parse_origins(["https://bücher.example"]) == ("https://xn--bcher-kva.example",)


def test_origins_come_from_the_environment_comma_separated(db_path):
    settings = load_config({"DATABASE": str(db_path)}, {"LDP_CORS_ORIGINS": f"{PAGE},http://localhost:5173"})
    assert settings["CORS_ORIGINS"] == [PAGE, "http://localhost:5173"]
    assert load_config({"DATABASE": str(db_path)}, {})["CORS_ORIGINS"] == ()


def test_serve_refuses_a_wildcard_origin_before_starting(tmp_path):
    out = subprocess.run(ldp_command("serve", "--db", str(tmp_path / "c.db"), "--cors-origin", "*"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "CORS_ORIGINS" in out.stderr and "not allowed" in out.stderr


def raw(url: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None
        ) -> tuple[int, dict[str, str], bytes]:
    "One request over a fresh connection, headers exactly as given (as a browser on another origin sends them)"
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_a_real_server_answers_the_allowed_page_and_nobody_else(tmp_path):
    db = tmp_path / "collector.db"
    with open_storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    page = "http://127.0.0.1:5173"
    with running_server(db, tmp_path / "serve.log", workers=1,
                        extra=("--rate-limit", "0", "--cors-origin", page, "--cors-origin", PAGE)) as (url, _):
        status, _, created = raw(url, "POST", "/v1/campaigns", {**bearer(admin), "Content-Type": "application/json"},
                                 json.dumps(CATEGORICAL).encode())
        assert status == 201
        ask = {"Origin": page, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization,content-type"}
        status, headers, _ = raw(url, "OPTIONS", "/v1/reports", ask)
        assert status == 204 and headers["access-control-allow-origin"] == page
        assert headers["access-control-allow-methods"] == "POST"
        status, headers, _ = raw(url, "OPTIONS", "/v1/reports", {**ask, "Origin": "http://127.0.0.1:5174"})
        assert status == 403 and "access-control-allow-origin" not in headers
        status, headers, _ = raw(url, "OPTIONS", "/v1/campaigns", ask)  # POST /v1/campaigns: admin
        assert status == 403 and "access-control-allow-origin" not in headers

        import client_sdk

        spec = client_sdk.load_spec(json.loads(created)["spec"])
        body = json.dumps({"reports": make_reports(spec, ["chrome", "safari"])}).encode()
        status, headers, answer = raw(url, "POST", "/v1/reports", {"Origin": page, **bearer(ingest),
                                                                    "Content-Type": "application/json"}, body)
        assert status == 200 and json.loads(answer)["accepted"] == 2
        assert headers["access-control-allow-origin"] == page and "origin" in headers["vary"].lower()
        status, headers, _ = raw(url, "GET", "/v1/campaigns/browser/estimate", {"Origin": page, **bearer(admin)})
        assert status == 200 and "access-control-allow-origin" not in headers


def test_a_helpers_hpke_config_is_readable_by_an_allowed_page_and_its_peer_routes_are_not(tmp_path):
    "A page's device (sdk-js) reads the helper's HPKE config from the helper itself; nothing else of it opens"
    helper = create_app({"DATABASE": str(tmp_path / "helper.db"), "RATE_LIMIT": 0, "ROLE": "helper",
                         "PEER_TOKEN": "peer-token", "CORS_ORIGINS": [PAGE]}).test_client()
    answer = helper.get("/v1/hpke_config", headers={"Origin": PAGE})
    assert answer.status_code == 200 and answer.json["configs"]
    assert cors_headers(answer)["Access-Control-Allow-Origin"] == PAGE
    for origin in NEAR_MISSES:
        assert cors_headers(helper.get("/v1/hpke_config", headers={"Origin": origin})) == {}, origin
    opened = set()
    for rule in helper.application.url_map.iter_rules():
        path = rule.rule.replace("<name>", "browser").replace("<job_id>", "job")
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            if preflight(helper, path, method).status_code == 204:
                opened.add((method, rule.rule))
    assert ("GET", "/v1/hpke_config") in opened
    assert not {route for route in opened if route[1].startswith("/v1/peer")}, opened
