"""Property-based fuzz of every operation in /openapi.json: never a 5xx, never a stored row from a rejected request.

Operations come from the served OpenAPI document itself, so a new endpoint is fuzzed as soon as it is documented
(and test_openapi_docs checks every route is documented).  Inputs mix arbitrary JSON, near-valid reports and
specs, random query strings, headers, content types, encodings and keys.
"""

from __future__ import annotations

import gzip
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import client_sdk
from collector import create_app
from collector.storage import Storage

from .helpers import CATEGORICAL, NUMERIC, bearer, make_reports, table_counts

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Any]:
    db_path = Path(tmp_path_factory.mktemp("fuzz")) / "collector.db"
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "MAX_BODY_BYTES": 64 * 1024,
                      "MAX_BATCH_REPORTS": 50})
    with Storage(db_path) as storage:
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    http = app.test_client()
    specs = [client_sdk.load_spec(http.post("/v1/campaigns", json=s, headers=bearer(admin)).json["spec"])
             for s in (CATEGORICAL, NUMERIC)]
    samples = [r for spec in specs for r in make_reports(spec, list(spec.domain) if spec.domain else [1.0, 500.0])]
    operations = [(path, method) for path, item in http.get("/openapi.json").json["paths"].items()
                  for method in item]
    return {"http": http, "db": db_path, "admin": admin, "ingest": ingest, "samples": samples,
            "operations": operations}


def near_valid_report(samples: list[dict]) -> st.SearchStrategy:
    base = st.sampled_from(samples)
    return st.one_of(
        base.map(lambda r: {**r, "report_id": str(uuid.uuid4())}),
        st.builds(lambda r, key, value: {**r, "report_id": str(uuid.uuid4()), key: value}, base,
                  st.sampled_from(["report_id", "campaign", "fingerprint", "payload", "extra"]), json_values),
        st.builds(lambda r, key: {k: v for k, v in r.items() if k != key}, base,
                  st.sampled_from(["report_id", "campaign", "fingerprint", "payload"])),
        json_values,
    )


def bodies(samples: list[dict]) -> st.SearchStrategy:
    spec_like = st.builds(lambda base, key, value: {**base, key: value}, st.sampled_from([CATEGORICAL, NUMERIC]),
                          st.sampled_from(["name", "mechanism", "epsilon", "domain", "range", "version", "delta",
                                           "catch_all", "rappor", "candidates"]), json_values)
    return st.one_of(
        json_values,
        spec_like,
        st.builds(lambda reports: {"reports": reports}, st.lists(near_valid_report(samples), max_size=6)),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=st.data())
def test_no_5xx_and_no_rows_from_rejected_requests(world, data):
    http = world["http"]
    path, method = data.draw(st.sampled_from(world["operations"]), label="operation")
    path = path.replace("{name}", data.draw(st.sampled_from(["browser", "load_ms"]) | st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#%"), min_size=1, max_size=12),
        label="name"))
    query = data.draw(st.dictionaries(st.sampled_from(["confidence", "since", "until", "version", "granularity"]),
                                      st.text(max_size=12), max_size=3), label="query")
    key = data.draw(st.sampled_from([world["admin"], world["ingest"], None, "ldp_garbage"]), label="key")
    headers = bearer(key) if key else {}
    content_types = ["application/json", "text/plain", "application/x-www-form-urlencoded", ""]
    headers["Content-Type"] = data.draw(st.sampled_from(content_types), label="content type")
    raw = json.dumps(data.draw(bodies(world["samples"]), label="body")).encode()
    if data.draw(st.booleans(), label="gzip"):
        raw = gzip.compress(raw)
        headers["Content-Encoding"] = data.draw(st.sampled_from(["gzip", "deflate"]), label="encoding")
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw)))]

    before = table_counts(world["db"])
    response = http.open(path, method=method.upper(), query_string=query, headers=headers, data=raw)
    after = table_counts(world["db"])

    assert response.status_code < 500, (method, path, response.get_data(as_text=True))
    if response.status_code >= 400:
        assert response.content_type == "application/problem+json"
        assert after == before
    elif path == "/v1/reports":
        assert after["reports"] - before["reports"] == response.json["accepted"]
        assert after["campaigns"] == before["campaigns"]
    elif method != "post":
        assert after == before
