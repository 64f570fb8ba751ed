"""Issue 8, items 2-5, 9 and 11: hostile input gets a 4xx problem naming the field, never a 5xx or a stored row;
every request with a key is charged; the rate bucket keeps no precise time."""

from __future__ import annotations

import gzip
import http.client
import json
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

import client_sdk
from client_sdk.mechanisms.categorical import OLH
from collector import create_app
from collector.storage import Storage

from .helpers import bearer, create_key, make_reports, running_server, table_counts

OLH_SPEC = {"name": "apps", "mechanism": "olh", "epsilon": 2.0, "domain": [f"app{i}" for i in range(50)]}
BLOOM_SPEC = {"name": "homepage", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4}}


def create(http: Any, admin: str, spec: dict) -> client_sdk.Spec:
    response = http.post("/v1/campaigns", json=spec, headers=bearer(admin))
    assert response.status_code == 201, response.json
    return client_sdk.load_spec(response.json["spec"])


def post_raw(http: Any, key: str, raw: bytes, path: str = "/v1/reports", **headers: str) -> Any:
    return http.post(path, data=raw, headers={**bearer(key), "Content-Type": "application/json", **headers})


def assert_problem(response: Any, status: int, field: str) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.content_type == "application/problem+json"
    assert response.json["field"] == field


# -- item 2: huge integers, lone surrogates, whitespace in hex -----------------------------------------------------
def test_integers_over_4300_digits_are_400_not_500(http, keys, campaign, db_path):
    before = table_counts(db_path)
    huge = b"1" * 5000
    assert_problem(post_raw(http, keys["ingest"], b'{"reports": [' + huge + b"]}"), 400, "body")
    spec = b'{"name": "big", "mechanism": "grr", "epsilon": ' + huge + b', "domain": ["a", "b"]}'
    assert_problem(post_raw(http, keys["admin"], spec, "/v1/campaigns"), 400, "body")
    assert_problem(http.get("/v1/campaigns/browser/estimate?version=" + "1" * 5000,
                            headers=bearer(keys["admin"])), 400, "version")
    assert table_counts(db_path) == before


def test_lone_surrogates_are_rejected_by_field(http, keys, campaign, db_path):
    good = make_reports(campaign, ["chrome", "safari"])
    bad = [{**good[0], "report_id": str(uuid.uuid4()), "campaign": "\ud800"},
           {**good[0], "report_id": str(uuid.uuid4()), "fingerprint": "\udfff" * 32},
           {**good[0], "report_id": "\ud800"}]
    raw = json.dumps({"reports": bad + good[1:]}).encode()  # ensure_ascii: the surrogates travel as \\ud800
    response = post_raw(http, keys["ingest"], raw)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.json["accepted"] == 1 and response.json["rejected"] == 3
    assert [e["field"] for e in response.json["errors"]] == [
        "reports[0].campaign", "reports[1].fingerprint", "reports[2].report_id"]
    assert table_counts(db_path)["reports"] == 1
    spec = json.dumps({"name": "sur", "mechanism": "grr", "epsilon": 1, "domain": ["a", "\ud800"]}).encode()
    assert_problem(post_raw(http, keys["admin"], spec, "/v1/campaigns"), 400, "domain")
    spec = json.dumps({"name": "sur", "mechanism": "grr", "epsilon": 1, "domain": ["a", "b"],
                       "description": "\udc00"}).encode()
    assert_problem(post_raw(http, keys["admin"], spec, "/v1/campaigns"), 400, "description")


@pytest.mark.parametrize("seed_of", [
    lambda seed: seed[:30] + "  ",  # bytes.fromhex skips whitespace: 15 bytes, not 16
    lambda seed: " " + seed[:30] + "\n",
    lambda seed: seed[:16] + "\t" + seed[17:],
])
def test_a_whitespace_seed_is_rejected_by_name_and_the_batch_is_kept(http, keys, db_path, seed_of):
    spec = create(http, keys["admin"], OLH_SPEC)
    reports = make_reports(spec, [f"app{i % 50}" for i in range(1000)])
    reports[500]["payload"] = [seed_of(reports[500]["payload"][0]), reports[500]["payload"][1]]
    assert len(reports[500]["payload"][0]) == 32
    response = http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"]))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert (response.json["accepted"], response.json["rejected"]) == (999, 1)
    assert response.json["errors"][0]["field"] == "reports[500].payload[0]"
    assert table_counts(db_path)["reports"] == 999


def test_a_payload_the_aggregation_cannot_read_is_rejected_by_name(http, keys, db_path, monkeypatch):
    "Defence in depth: should a payload check ever miss a case, only that report is refused"
    spec = create(http, keys["admin"], OLH_SPEC)
    reports = make_reports(spec, ["app1"] * 20)
    reports[7]["payload"] = ["zz" * 16, 0]
    monkeypatch.setattr(OLH, "check_payload", lambda self, payload: None)
    response = http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"]))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert (response.json["accepted"], response.json["rejected"]) == (19, 1)
    assert response.json["errors"][0]["field"] == "reports[7].payload"
    assert table_counts(db_path)["reports"] == 19


# -- item 3: campaign parameters -------------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"epsilon": 1e308}, "epsilon"), ({"epsilon": 800}, "epsilon"), ({"epsilon": 1e-320}, "epsilon"),
    ({"epsilon": 10**400}, "epsilon"), ({"epsilon": 20.001}, "epsilon"), ({"epsilon": 0.0099}, "epsilon"),
    ({"domain": ["a", 2**64]}, "domain"),
])
def test_extreme_categorical_parameters_are_400(http, keys, db_path, change, field):
    spec = {"name": "extreme", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"], **change}
    assert_problem(http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"])), 400, field)
    assert table_counts(db_path)["campaigns"] == 0


@pytest.mark.parametrize("value_range", [[-1e308, 1e308], [0, 10**400], [0, 1e-320], [0, 1e16], [5, 5]])
def test_extreme_ranges_are_400(http, keys, db_path, value_range):
    spec = {"name": "extreme", "mechanism": "laplace", "epsilon": 1.0, "range": value_range}
    assert_problem(http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"])), 400, "range")
    assert table_counts(db_path)["campaigns"] == 0


@pytest.mark.parametrize("rappor, field", [
    ({"m": 2**40}, "rappor.m"), ({"m": 2048}, "rappor.m"), ({"k": 65536, "h": 2, "m": 128}, "rappor.m"),
    ({"q": 1e-320, "p": 0}, "rappor.q"), ({"q": 0.5 + 2**-34}, "rappor.q"), ({"f": 0, "p": 0, "q": 1}, "rappor"),
    ({"q": 0.501}, "rappor"),
    ({"k": 2, "h": 3}, "rappor.h"), ({"q": 10**400}, "rappor.q"),
])
def test_extreme_rappor_parameters_are_400(http, keys, db_path, rappor, field):
    spec = {"name": "extreme", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4, **rappor}}
    assert_problem(http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"])), 400, field)
    assert table_counts(db_path)["campaigns"] == 0


def test_the_epsilon_bounds_themselves_are_accepted(http, keys):
    for epsilon in (0.01, 20):
        spec = {"name": f"edge{epsilon}", "mechanism": "grr", "epsilon": epsilon, "domain": ["a", "b"]}
        assert http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"])).status_code == 201


# -- item 4: names, Bloom RAPPOR candidates ------------------------------------------------------------------------
def test_a_name_with_a_trailing_newline_is_rejected(http, keys, campaign, db_path):
    spec = {"name": "g\n", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]}
    assert_problem(http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"])), 400, "name")
    report = {**make_reports(campaign, ["chrome"])[0], "campaign": "browser\n"}
    response = http.post("/v1/reports", json={"reports": [report]}, headers=bearer(keys["ingest"]))
    assert response.json["errors"][0]["field"] == "reports[0].campaign"
    assert http.get("/v1/campaigns/browser%0A", headers=bearer(keys["admin"])).status_code == 404
    assert table_counts(db_path)["campaigns"] == 1


def test_bloom_rappor_without_candidates_is_a_409_and_candidates_make_a_new_version(http, keys, db_path):
    created = http.post("/v1/campaigns", json=BLOOM_SPEC, headers=bearer(keys["admin"]))
    assert created.status_code == 201
    (note,) = created.json["warnings"]  # the creator hears at once that the estimate will need candidates
    assert "has no candidates" in note and "\n" not in note
    spec = client_sdk.load_spec(created.json["spec"])
    reports = make_reports(spec, ["home", "news", "home"])
    assert http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"])).json["accepted"] == 3
    missing = http.get("/v1/campaigns/homepage/estimate", headers=bearer(keys["admin"]))
    assert_problem(missing, 409, "candidates")
    assert missing.json["type"].endswith("candidates-required")
    with_candidates = http.post("/v1/campaigns", json={**BLOOM_SPEC, "candidates": ["home", "news"]},
                                headers=bearer(keys["admin"]))
    assert with_candidates.status_code == 201 and with_candidates.json["version"] == 2
    assert with_candidates.json["warnings"] == []
    assert with_candidates.json["spec"]["candidates"] == ["home", "news"]
    changed = http.post("/v1/campaigns", json={**BLOOM_SPEC, "candidates": ["home", "news", "mail"]},
                        headers=bearer(keys["admin"]))
    assert changed.status_code == 201 and changed.json["version"] == 3
    again = http.post("/v1/campaigns", json={**BLOOM_SPEC, "candidates": ["home", "news"]},
                      headers=bearer(keys["admin"]))
    assert again.status_code == 200 and again.json["version"] == 2


# -- item 5 and 9: size and work limits --------------------------------------------------------------------------
def test_a_gzip_bomb_is_413(http, keys, campaign, db_path):
    bomb = gzip.compress(b'{"reports": [' + b" " * (64 * 1024 * 1024) + b"]}")
    assert len(bomb) < 100_000
    assert_problem(post_raw(http, keys["ingest"], bomb, **{"Content-Encoding": "gzip"}), 413, "body")
    assert table_counts(db_path)["reports"] == 0


def test_item_count_is_bounded_before_parsing(http, keys, campaign, db_path):
    "One 'report' holding 300,000 list items: refused by counting, before json.loads builds the list"
    raw = b'{"reports": [[' + b",".join([b"0"] * 300_000) + b"]]}"
    body = gzip.compress(raw)
    assert len(body) < 8 * 1024
    response = post_raw(http, keys["ingest"], body, **{"Content-Encoding": "gzip"})
    assert_problem(response, 413, "body")
    assert "items" in response.json["detail"]
    assert table_counts(db_path)["reports"] == 0


def test_a_chunked_body_over_the_limit_is_413_on_the_real_server(tmp_path: Path):
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
    admin, ingest = create_key(db_path, "admin"), create_key(db_path, "ingest")
    with running_server(db_path, tmp_path / "server.log", workers=1,
                        extra=("--rate-limit", "0", "--max-body-bytes", "20000")) as (url, _):
        port = int(url.rsplit(":", 1)[1])

        def send(path: str, key: str, body: bytes) -> tuple[int, dict]:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                connection.request("POST", path, body=iter([body[i:i + 4096] for i in range(0, len(body), 4096)]),
                                   headers={**bearer(key), "Content-Type": "application/json"},
                                   encode_chunked=True)
                response = connection.getresponse()
                return response.status, json.loads(response.read() or b"{}")
            finally:
                connection.close()

        status, created = send("/v1/campaigns", admin, json.dumps(OLH_SPEC).encode())
        assert status == 201, created
        spec = client_sdk.load_spec(created["spec"])
        small = json.dumps({"reports": make_reports(spec, ["app1"] * 5)}).encode()
        status, answer = send("/v1/reports", ingest, small)  # chunked and within the limit: accepted
        assert status == 200 and answer["accepted"] == 5
        large = json.dumps({"reports": make_reports(spec, ["app1"] * 300)}).encode()
        assert len(large) > 20000
        status, problem = send("/v1/reports", ingest, large)
        assert status == 413 and problem["field"] == "body"
    assert table_counts(db_path)["reports"] == 5


# -- item 9 and 11: every request with a key is charged; the bucket keeps no precise time ---------------------
@pytest.fixture
def frozen_clock(monkeypatch) -> types.SimpleNamespace:
    "The collector's clock, fixed inside one 10-second window (tests must not depend on when they run)"
    clock = types.SimpleNamespace(now=1_700_000_003.123456)
    fake = types.SimpleNamespace(time=lambda: clock.now, perf_counter=lambda: 0.0)
    monkeypatch.setattr("collector.auth.time", fake)
    monkeypatch.setattr("collector.api.reports.time", fake)
    return clock


def limited_app(db_path: Path, burst: int) -> tuple[Any, str, str]:
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0.05, "RATE_BURST": burst})
    with Storage(db_path) as storage:
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    return app.test_client(), admin, ingest


def test_malformed_posts_are_charged(db_path, frozen_clock):
    http, _, ingest = limited_app(db_path, burst=4)
    statuses = [post_raw(http, ingest, body).status_code
                for body in (b"{not json", b'{"reports": 3}', b"[1]" * 10, b'{"reports": [1]}')]
    assert statuses == [400, 400, 400, 200]  # the last one is readable: 200 with one rejection
    limited = post_raw(http, ingest, b"{not json")
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert http.get("/v1/campaigns", headers=bearer(ingest)).status_code == 429


def test_forbidden_and_oversized_requests_are_charged(db_path, frozen_clock):
    http, _, ingest = limited_app(db_path, burst=2)
    assert http.get("/v1/campaigns/x/estimate", headers=bearer(ingest)).status_code == 403
    assert post_raw(http, ingest, b"[" + b"0," * 600_000 + b"0]").status_code == 413
    assert http.get("/v1/campaigns", headers=bearer(ingest)).status_code == 429


def test_tokens_come_back_in_ten_second_steps(db_path, frozen_clock):
    http, _, ingest = limited_app(db_path, burst=1)
    assert http.get("/v1/campaigns", headers=bearer(ingest)).status_code == 200
    frozen_clock.now += 6.0  # same window (…000.0 to …010.0): nothing refilled yet
    limited = http.get("/v1/campaigns", headers=bearer(ingest))
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "11"  # two steps of 0.5 tokens
    frozen_clock.now += 1.0  # next window: one step of 0.05 * 10 = 0.5 tokens is not enough
    assert http.get("/v1/campaigns", headers=bearer(ingest)).status_code == 429
    frozen_clock.now += 10.0
    assert http.get("/v1/campaigns", headers=bearer(ingest)).status_code == 200


def test_the_rate_bucket_stores_no_precise_time(db_path, frozen_clock):
    http, admin, ingest = limited_app(db_path, burst=50)
    for key in (admin, ingest, ingest):
        http.get("/v1/campaigns", headers=bearer(key))
    post_raw(http, ingest, b"{not json")
    with Storage(db_path) as storage:
        rows = storage.table_rows("rate_buckets")
    assert len(rows) == 2
    for row in rows:
        assert row["updated"] % 10 == 0, row  # the start of a 10-second window, nothing finer
        assert row["tokens"] == int(row["tokens"]), row  # whole tokens taken from a whole burst: no time in it
    assert sorted(row["tokens"] for row in rows) == [47, 49]
