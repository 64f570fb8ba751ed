"""The quantiles kind, collector side: its own tables (migrations), payloads checked by field name, duplicates,
mergeable per-day aggregates, the estimate response and a report read from the database."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

from client_sdk.errors import PayloadError
from client_sdk.kinds.quantiles import QuantilesReport, make_report
from client_sdk.randomness import DeterministicRandom
from collector.kinds.quantiles import QuantilesStore
from collector.reporting import report_data_from_db
from collector.storage import open_storage
from estimators.report import render_table

from .helpers import bearer, on_both_backends

SPEC = {"name": "load_ms", "kind": "quantiles", "epsilon": 2.0, "range": [0, 1000], "buckets": 32, "unit": "ms"}


def _reports(spec: dict, values: list[float], seed: int) -> list[dict]:
    from client_sdk import load_spec

    params = load_spec(spec).params
    rng = DeterministicRandom(seed)
    return [{"report_id": str(uuid.uuid4()), "campaign": spec["name"], "fingerprint": spec["fingerprint"],
             "payload": make_report(rng, params, value)} for value in values]


@on_both_backends
def test_reports_are_checked_stored_per_day_and_estimated(http: Any, keys: dict[str, str], db_path: Any) -> None:
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    created = http.post("/v1/campaigns", json=SPEC, headers=admin)
    assert created.status_code == 201, created.json
    spec = created.json["spec"]
    assert spec["kind"] == "quantiles" and spec["derived"]["height"] >= 1
    values = np.random.default_rng(4).uniform(0, 1000, 600).tolist()
    good = _reports(spec, values, seed=3)
    bad_level = {**good[0], "report_id": str(uuid.uuid4()), "payload": [99, good[0]["payload"][1]]}
    bad_inner = {**good[1], "report_id": str(uuid.uuid4()), "payload": [good[1]["payload"][0], ["zz", 1]]}
    answer = http.post("/v1/reports", json={"reports": good[:300] + [bad_level, bad_inner, good[0]]},
                       headers=ingest)
    assert answer.status_code == 200, answer.json
    assert (answer.json["accepted"], answer.json["duplicate"], answer.json["rejected"]) == (300, 1, 2)
    fields = [error["field"] for error in answer.json["errors"]]
    assert fields == ["reports[300].payload[0]", "reports[301].payload[1][0]"], answer.json["errors"]
    again = http.post("/v1/reports", json={"reports": good[250:]}, headers=ingest)  # a retried, larger batch
    assert (again.json["accepted"], again.json["duplicate"]) == (300, 50)

    with open_storage(db_path) as storage:
        days = QuantilesStore(storage).days(spec["name"], spec["fingerprint"], None, None)
    assert len(days) == 1 and days[0][1].n == 600  # one day's row, the two batches merged into it

    estimate = http.get(f"/v1/campaigns/{spec['name']}/estimate?confidence=0.99", headers=admin)
    assert estimate.status_code == 200, estimate.json
    body = estimate.json
    assert body["kind"] == "quantiles" and body["n"] == 600 and body["confidence"] == 0.99
    assert [row["p"] for row in body["quantiles"]] == [0.5, 0.9, 0.95, 0.99]
    assert len(body["cdf"]) == 33 and len(body["histogram"]) == 32
    assert body["mean_mechanism"]["mechanism"] and body["central_dp"]["quantiles"]

    text = render_table(report_data_from_db(db_path, spec["name"]))
    assert "quantiles estimate, local DP" in text and "p95" in text and "n = 600 reports" in text


def test_an_empty_window_is_a_404_naming_since(http: Any, keys: dict[str, str]) -> None:
    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns", json=SPEC, headers=admin).status_code == 201
    answer = http.get(f"/v1/campaigns/{SPEC['name']}/estimate", headers=admin)
    assert answer.status_code == 404 and answer.json["field"] == "since"


def test_payload_errors_name_the_field():
    from client_sdk import load_spec

    params = load_spec({**SPEC}).params
    for payload, field in (("x", "payload"), ([1], "payload"), ([0, [1, 0]], "payload[0]")):
        with pytest.raises(PayloadError) as info:
            QuantilesReport.decode(params, payload)
        assert info.value.field == field, payload
