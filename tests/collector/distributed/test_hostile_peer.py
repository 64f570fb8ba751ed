"""Hostile input to the distributed routes: every junk body gets a 4xx problem naming a field, never a 5xx.

The peer routes are not in the standalone OpenAPI document (so the schema fuzz does not reach them); this sends
each of them, and the leader's upload and collection, the malformed shapes a confused or hostile peer might."""

from __future__ import annotations

import uuid

import pytest

from .kit import PEER_TOKEN, Pair, end_day, honest_reports, spec_json, values_for

JUNK = [b"", b"not json", b"[]", b"null", b"3", b'"text"', b"{}", b'{"campaign": 1}',
        b'{"campaign": "x", "fingerprint": "00", "batch": "2026-13-45"}',
        b'{"campaign": "apps", "fingerprint": "' + b"f" * 32 + b'", "batch": "2026-11-30", "reports": 7}',
        b'{"campaign": "apps", "fingerprint": "' + b"f" * 32 + b'", "batch": "2026-11-30", "reports": [1, {}]}',
        b'{"spec": [], "verify_key": "!!"}', b'{"spec": {"name": "apps"}, "verify_key": 5}',
        b'{"report_count": -1, "checksum": "zz"}', b'{"commitment": "\\ud800"}', b"\xff\xfe", b"1e999999"]


@pytest.fixture
def pair(tmp_path):
    return Pair(tmp_path)


def _assert_problem(response, what):
    assert 400 <= response.status_code < 500, (what, response.status_code, response.get_data()[:300])
    assert response.mimetype == "application/problem+json", what
    assert response.json.get("field"), (what, response.json)


def test_peer_routes_answer_junk_with_a_named_4xx(pair):
    spec, _ = pair.create(spec_json("histogram"))
    helper = pair.helper_app.test_client()
    peer = {"Authorization": f"Bearer {PEER_TOKEN}", "Content-Type": "application/json"}
    routes = [("put", f"/v1/peer/campaigns/{spec.name}"), ("put", f"/v1/peer/aggregation_jobs/{uuid.uuid4()}"),
              ("put", "/v1/peer/aggregation_jobs/not-a-uuid"),
              ("post", "/v1/peer/aggregate_shares")]
    for method, path in routes:
        for body in JUNK:
            _assert_problem(getattr(helper, method)(path, data=body, headers=peer), (method, path, body))


def test_leader_upload_and_collect_answer_junk_with_a_named_4xx(pair):
    spec, block = pair.create(spec_json("histogram"))
    good = honest_reports(spec, block, values_for("histogram", 1))[0]
    bad_payloads = [None, 1, [], {}, {"public_share": 5}, {**good["payload"], "leader_share": "x"},
                    {**good["payload"], "leader_share": {"config_id": 999, "ciphertext": "AA"}},
                    {**good["payload"], "helper_share": {"config_id": 1, "ciphertext": "not base64url!"}},
                    {**good["payload"], "extra": 1}, {**good["payload"], "batch": "2026-13-01"},
                    {**good["payload"], "batch": 20261201}]
    for payload in bad_payloads:
        report = {**good, "report_id": str(uuid.uuid4()), "payload": payload}
        response = pair.leader.post("/v1/reports", json={"reports": [report]}, headers=pair.ingest)
        assert response.status_code == 200 and response.json["accepted"] == 0, (payload, response.json)
        assert response.json["errors"][0]["field"], (payload, response.json)
    headers = {**pair.admin, "Content-Type": "application/json"}
    for body in JUNK:
        response = pair.leader.post(f"/v1/campaigns/{spec.name}/collect", data=body, headers=headers)
        _assert_problem(response, body)
    day = end_day()
    small = pair.collect(spec.name, day)
    assert small.status_code == 409 and small.json["type"].endswith("batch-too-small")  # nothing was stored
