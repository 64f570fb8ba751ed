"""The repeated-collection kind, collector side: a campaign created, reports of the real device code checked by field,
counted per period in the kind's own tables (duplicates once), the series, the change, and a rendered report."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import numpy as np

import client_sdk
from client_sdk.kinds.repeated import encode_report, make_report, period_of
from client_sdk.randomness import DeterministicRandom
from collector.auth import clock_now
from collector.reporting import report_data_from_db
from estimators.report import json_report, render_table

from .helpers import bearer

SPEC = {"name": "usage", "kind": "repeated", "epsilon": 2.0, "mode": "mean", "range": [0, 10], "rounding_points": 5,
        "period": "day"}
DAY = 86_400


def _report(spec: dict, payload: Any) -> dict:
    return {"report_id": str(uuid.uuid4()), "campaign": spec["name"], "fingerprint": spec["fingerprint"],
            "payload": payload}


def test_reports_are_counted_per_period_and_estimated_as_a_series(http: Any, keys: dict[str, str],
                                                                    db_path: Any) -> None:
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    created = http.post("/v1/campaigns", json=SPEC, headers=admin)
    assert created.status_code == 201, created.json
    spec = created.json["spec"]
    params = client_sdk.load_spec(spec).params
    now = clock_now()
    periods = [period_of(params, now - 2 * DAY), period_of(params, now - DAY)]
    rng, states = DeterministicRandom(5), [{} for _ in range(400)]
    batches = []
    for offset, period in enumerate(periods):  # every device: 2.0 the first period, 6.0 the second
        batches.append([_report(spec, encode_report(period, make_report(rng, params, state, 2.0 + 4 * offset)[0]))
                        for state in states])
    for batch in batches:
        answer = http.post("/v1/reports", json={"reports": batch}, headers=ingest)
        assert answer.json["accepted"] == 400 and answer.json["rejected"] == 0, answer.json
    again = http.post("/v1/reports", json={"reports": batches[0][:3]}, headers=ingest)
    assert (again.json["accepted"], again.json["duplicate"]) == (0, 3)

    bad = [_report(spec, {"period": periods[0], "answer": 2}), _report(spec, {"period": "2026-02-30", "answer": 1}),
           _report(spec, {"period": period_of(params, now + 2 * DAY), "answer": 1}), _report(spec, [1])]
    answer = http.post("/v1/reports", json={"reports": bad}, headers=ingest)
    assert answer.status_code == 200 and answer.json["rejected"] == 4
    assert [error["field"] for error in answer.json["errors"]] == [
        "reports[0].payload.answer", "reports[1].payload.period", "reports[2].payload.period", "reports[3].payload"]

    estimate = http.get(f"/v1/campaigns/{spec['name']}/estimate", headers=admin)
    assert estimate.status_code == 200, estimate.json
    result = estimate.json
    assert [item["period"] for item in result["periods"]] == periods and result["n"] == 400
    for item, truth in zip(result["periods"], (2.0, 6.0)):
        assert item["ci_low"] <= truth <= item["ci_high"]
        assert abs(item["mean"] - truth) <= 4 * item["std_error"]
    change = result["change"]
    assert (change["before"], change["after"]) == tuple(periods)
    assert change["interval"][0] <= 4.0 <= change["interval"][1]
    assert result["central_dp"]["std_error"] < result["std_error"]  # a trusted curator, one period, same epsilon
    assert "epsilon for all time" in result["guarantee"]["text"]

    named = http.get(f"/v1/campaigns/{spec['name']}/estimate",
                     query_string={"before": periods[1], "after": periods[0]}, headers=admin)
    assert named.status_code == 200 and np.isclose(named.json["change"]["difference"], -change["difference"])
    missing = http.get(f"/v1/campaigns/{spec['name']}/estimate", query_string={"before": "2001-01-01",
                                                                                "after": periods[0]}, headers=admin)
    assert missing.status_code == 400 and missing.json["field"] == "before"
    empty = http.get(f"/v1/campaigns/{spec['name']}/estimate", query_string={"since": "2099-01-01"}, headers=admin)
    assert empty.status_code == 404 and empty.json["field"] == "since"

    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM repeated_aggregates").fetchone()[0] == 2
        assert conn.execute("SELECT count(*) FROM repeated_report_ids").fetchone()[0] == 800
    conn.close()
    data = report_data_from_db(db_path, spec["name"])
    assert not data.daily and len(json_report(data)["periods"]) == 2 and json_report(data)["trust"] == "repeated"
    text = render_table(data)
    assert "repeated" in text and "epsilon for all time" in text
    from estimators.report.plots import report_plots  # matplotlib: this test only

    plots = {plot.name: plot for plot in report_plots(data, simulate_points=False)}
    assert "series" in plots and "central DP" in plots["series"].caption and plots["series"].png[:4] == b"\x89PNG"
    assert "daily" not in plots  # the series is drawn once, by the kind's chart
