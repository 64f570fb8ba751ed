"""The per-request shortcuts of the collector give what the general paths gave (the UTC day's text), and the ingest
answer is jsonify's."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from flask import jsonify

from collector import auth

from .helpers import bearer, make_reports


@pytest.mark.parametrize("moment", [0.0, 86399.999, 86400.0, 951782400.0 - 0.001, 951782400.0, 1735689599.5,
                                    1735689600.0, 4102444800.25])
def test_utc_today_is_the_utc_date_at_every_moment_even_across_midnight(monkeypatch, moment):
    monkeypatch.setattr(auth.time, "time", lambda: moment)
    expected = dt.datetime.fromtimestamp(moment, dt.timezone.utc).date().isoformat()
    assert auth.utc_today() == expected
    monkeypatch.setattr(auth.time, "time", lambda: moment + 86400)  # the next day: never the cached text
    assert auth.utc_today() == (dt.date.fromisoformat(expected) + dt.timedelta(days=1)).isoformat()


def test_the_ingest_answer_is_the_bytes_jsonify_made(app, http, keys, campaign):
    good = make_reports(campaign, ["chrome"])[0]
    bad = {**make_reports(campaign, ["firefox"])[0], "payload": "caf\u00e9 \"x\""}
    response = http.post("/v1/reports", json={"reports": [good, bad]}, headers=bearer(keys["ingest"]))
    assert response.status_code == 200 and response.mimetype == "application/json"
    with app.app_context():
        assert response.get_data() == jsonify(json.loads(response.get_data())).get_data()
    assert response.json["accepted"] == 1 and response.json["errors"][0]["field"].startswith("reports[1].payload")
    # the answer without errors, with a duplicate
    again = make_reports(campaign, ["safari"])[0]
    response = http.post("/v1/reports", json={"reports": [again, again, good]}, headers=bearer(keys["ingest"]))
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    with app.app_context():
        assert response.get_data() == jsonify(json.loads(response.get_data())).get_data()
    assert response.json == {"accepted": 1, "duplicate": 2, "rejected": 0, "errors": []}
