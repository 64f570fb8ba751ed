"""Property-based fuzz of every operation in the OpenAPI document: never a 5xx, never a stored row from a rejected
request (or a rejected report).

Operations come from the OpenAPI document itself, so a new endpoint is fuzzed as soon as it is documented (and
test_openapi_docs checks every route is documented).  Inputs mix arbitrary JSON, near-valid reports and specs,
random query strings, headers, content types, encodings and keys; the hostile inputs of issue 8 are explicit
``@example`` s.  Everything is drawn from Hypothesis strategies (report ids from ``st.uuids``), so a failing
example replays exactly.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import client_sdk
from collector import create_app
from collector.openapi import DOCUMENT
from collector.storage import open_storage

from .helpers import BACKENDS, CATEGORICAL, NUMERIC, bearer, make_reports, table_counts

OLH_SPEC = {"name": "apps", "mechanism": "olh", "epsilon": 2.0, "domain": [f"app{i}" for i in range(20)]}
BLOOM_SPEC = {"name": "homepage", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4}}
SPECS = (CATEGORICAL, NUMERIC, OLH_SPEC, BLOOM_SPEC)
VALUES = {"browser": ["chrome", "edge"], "load_ms": [1.0, 500.0], "apps": ["app1", "app7"],
          "homepage": ["home", "news"]}
# Reports as the SDK makes them (the fingerprint does not depend on the version the collector assigns).
SAMPLES = [report for spec in map(client_sdk.load_spec, SPECS) for report in make_reports(spec, VALUES[spec.name])]
OPERATIONS = [(path, method) for path, item in DOCUMENT["paths"].items() for method in item]
CAMPAIGN_FIELDS = ["name", "mechanism", "epsilon", "domain", "range", "version", "delta", "catch_all", "rappor",
                   "candidates", "description"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
report_ids = st.uuids(version=4).map(str)


def near_valid_report() -> st.SearchStrategy:
    base = st.sampled_from(SAMPLES)
    return st.one_of(
        st.builds(lambda r, report_id: {**r, "report_id": report_id}, base, report_ids),
        st.builds(lambda r, report_id, key, value: {**r, "report_id": report_id, key: value}, base, report_ids,
                  st.sampled_from(["report_id", "campaign", "fingerprint", "payload", "extra"]), json_values),
        st.builds(lambda r, key: {k: v for k, v in r.items() if k != key}, base,
                  st.sampled_from(["report_id", "campaign", "fingerprint", "payload"])),
        json_values,
    )


def bodies() -> st.SearchStrategy:
    spec_like = st.builds(lambda base, key, value: {**base, key: value}, st.sampled_from(SPECS),
                          st.sampled_from(CAMPAIGN_FIELDS), json_values)
    return st.one_of(
        json_values,
        spec_like,
        st.builds(lambda reports: {"reports": reports}, st.lists(near_valid_report(), max_size=6)),
    )


@st.composite
def http_requests(draw: Any) -> dict[str, Any]:
    path, method = draw(st.sampled_from(OPERATIONS), label="operation")
    raw = json.dumps(draw(bodies(), label="body")).encode()
    packed = draw(st.booleans(), label="gzip")
    return {
        "path": path, "method": method,
        # closing one of the shared campaigns would change what the other examples expect: close others only
        "name": draw((st.sampled_from(["browser", "load_ms", "homepage"]) if path != "/v1/campaigns/{name}/close"
                      else st.sampled_from(["closable"])) | st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#%"), min_size=1,
            max_size=12), label="name"),
        "query": draw(st.dictionaries(st.sampled_from(["confidence", "since", "until", "version", "granularity"]),
                                      st.text(max_size=12), max_size=3), label="query"),
        "key": draw(st.sampled_from(["admin", "ingest", None, "garbage"]), label="key"),
        "content_type": draw(st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded",
                                              ""]), label="content type"),
        "raw": raw,
        "encoding": draw(st.sampled_from(["gzip", "deflate"]), label="encoding") if packed else None,
        "truncate": draw(st.none() | st.integers(0, len(raw)), label="truncate"),
    }


def case(path: str, raw: bytes | str, *, key: str = "ingest", method: str = "post", name: str = "browser",
         query: dict | None = None, encoding: str | None = None) -> dict[str, Any]:
    "An explicit request for @example"
    return {"path": path, "method": method, "name": name, "query": query or {}, "key": key,
            "content_type": "application/json", "raw": raw.encode() if isinstance(raw, str) else raw,
            "encoding": encoding, "truncate": None}


def reports_body(*reports: dict) -> bytes:
    return json.dumps({"reports": list(reports)}).encode()  # ensure_ascii: surrogates travel as \ud800 escapes


def spec_body(**change: Any) -> bytes:
    return json.dumps({"name": "extreme", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"], **change}).encode()


OLH_SAMPLE = next(r for r in SAMPLES if r["campaign"] == "apps")
SEED = OLH_SAMPLE["payload"][0]
HOSTILE = [
    # item 2: huge integers, lone surrogates, whitespace in hex
    case("/v1/reports", b'{"reports": [' + b"7" * 5000 + b"]}"),
    case("/v1/campaigns", spec_body(epsilon=10**400), key="admin"),
    case("/v1/campaigns", b'{"name": "x", "mechanism": "grr", "epsilon": ' + b"1" * 5000 + b', "domain": [1, 2]}',
         key="admin"),
    case("/v1/campaigns/{name}/estimate", b"", method="get", key="admin", query={"version": "9" * 5000}),
    case("/v1/reports", reports_body({**OLH_SAMPLE, "campaign": "\ud800"})),
    case("/v1/reports", reports_body({**OLH_SAMPLE, "fingerprint": "\udfff" * 32})),
    case("/v1/reports", reports_body({**OLH_SAMPLE, "report_id": "\ud800"})),
    case("/v1/campaigns", spec_body(domain=["a", "\ud800"]), key="admin"),
    case("/v1/reports", reports_body(*SAMPLES, {**OLH_SAMPLE, "payload": [SEED[:30] + "  ", 1]})),
    case("/v1/reports", reports_body({**OLH_SAMPLE, "payload": [" " + SEED[:30] + "\n", 1]}, *SAMPLES)),
    # item 3: campaign parameters
    case("/v1/campaigns", spec_body(epsilon=1e308), key="admin"),
    case("/v1/campaigns", spec_body(epsilon=800), key="admin"),
    case("/v1/campaigns", spec_body(epsilon=1e-320), key="admin"),
    case("/v1/campaigns", json.dumps({**NUMERIC, "name": "wide", "range": [-1e308, 1e308]}).encode(), key="admin"),
    case("/v1/campaigns", json.dumps({**BLOOM_SPEC, "name": "big", "rappor": {"m": 2**40}}).encode(), key="admin"),
    case("/v1/campaigns", json.dumps({**BLOOM_SPEC, "name": "q", "rappor": {"q": 1e-320, "p": 0}}).encode(),
         key="admin"),
    case("/v1/campaigns", json.dumps({**BLOOM_SPEC, "name": "q", "rappor": {"q": 10**400}}).encode(), key="admin"),
    # item 4: names in full, Bloom RAPPOR without candidates
    case("/v1/campaigns", spec_body(name="g\n"), key="admin"),
    case("/v1/reports", reports_body({**OLH_SAMPLE, "campaign": "apps\n"})),
    case("/v1/campaigns/{name}", b"", method="get", name="browser%0A"),  # percent-encoded: urlsplit drops a raw newline
    case("/v1/campaigns/{name}/estimate", b"", method="get", key="admin", name="homepage"),
    # items 5 and 9: a gzip bomb, and many items in few bytes
    case("/v1/reports", b'{"reports": [' + b" " * (4 << 20) + b"]}", encoding="gzip"),
    case("/v1/reports", b'{"reports": [[' + b"0," * 200_000 + b"0]]}", encoding="gzip"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def world(tmp_path_factory, request) -> dict[str, Any]:
    if request.param == "postgresql":
        db_path: Path | str = request.getfixturevalue("postgres_cluster").create_database("fuzz")
    else:
        db_path = Path(tmp_path_factory.mktemp("fuzz")) / "collector.db"
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "MAX_BODY_BYTES": 64 * 1024,
                      "MAX_BATCH_REPORTS": 50})
    with open_storage(db_path) as storage:
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    http = app.test_client()
    for spec in SPECS:
        created = http.post("/v1/campaigns", json=spec, headers=bearer(admin))
        assert created.status_code == 201, created.json
    closable = http.post("/v1/campaigns", json={**CATEGORICAL, "name": "closable"}, headers=bearer(admin))
    assert closable.status_code == 201, closable.json
    served = http.get("/openapi.json").json["paths"]
    assert {(path, method) for path, item in served.items() for method in item} == set(OPERATIONS)
    return {"http": http, "db": db_path, "keys": {"admin": admin, "ingest": ingest, "garbage": "ldp_garbage"}}


def _examples(test: Any) -> Any:
    for hostile in HOSTILE:
        test = example(request=hostile)(test)
    return test


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@_examples
@given(request=http_requests())
def test_no_5xx_and_no_rows_from_rejected_requests(world, request):
    http = world["http"]
    key = world["keys"].get(request["key"]) if request["key"] else None
    headers = bearer(key) if key else {}
    headers["Content-Type"] = request["content_type"]
    raw = request["raw"]
    if request["encoding"]:
        raw = gzip.compress(raw)
        headers["Content-Encoding"] = request["encoding"]
    if request["truncate"] is not None:
        raw = raw[: request["truncate"]]
    path = request["path"].replace("{name}", request["name"])

    before = table_counts(world["db"])
    response = http.open(path, method=request["method"].upper(), query_string=request["query"], headers=headers,
                         data=raw)
    after = table_counts(world["db"])

    assert response.status_code < 500, (request["method"], path, response.get_data(as_text=True))
    if response.status_code >= 400:
        assert response.content_type == "application/problem+json"
        assert response.json["status"] == response.status_code
        assert after == before
    elif path == "/v1/reports":
        assert after["reports"] - before["reports"] == response.json["accepted"]
        assert after["campaigns"] == before["campaigns"]
    elif request["method"] != "post":
        assert after == before


def test_the_hostile_examples_are_refused(world):
    "The explicit examples are not just survived: each is refused (4xx) or each of its bad reports is rejected"
    http = world["http"]
    for hostile in HOSTILE:
        headers = {**bearer(world["keys"][hostile["key"]]), "Content-Type": "application/json"}
        raw = hostile["raw"]
        if hostile["encoding"]:
            raw = gzip.compress(raw)
            headers["Content-Encoding"] = hostile["encoding"]
        response = http.open(hostile["path"].replace("{name}", hostile["name"]), method=hostile["method"].upper(),
                             query_string=hostile["query"], headers=headers, data=raw)
        if response.status_code == 200 and hostile["path"] == "/v1/reports":
            assert response.json["rejected"] == 1, response.json  # one bad report, named; the rest accepted
            assert response.json["accepted"] + response.json["duplicate"] == len(json.loads(raw)["reports"]) - 1
            assert response.json["errors"][0]["field"].startswith("reports[")
        else:
            assert 400 <= response.status_code < 500, (hostile["path"], response.get_data(as_text=True))
            assert response.json.get("field"), response.json
