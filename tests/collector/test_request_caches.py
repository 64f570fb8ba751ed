"""The collector's per-connection caches that keep a device request cheap never hide a change: a new version, a
closing, a duplicate stored yesterday.  What a request costs is a budget: tests/budgets/test_collector_request_cost.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import client_sdk
from collector.api.campaigns import today
from collector.db import get_storage
from collector.storage import ReportGroup, open_storage

from .helpers import CATEGORICAL, bearer, make_reports


def post_one(http: Any, keys: dict[str, str], spec: client_sdk.Spec, value: Any = "chrome",
             report: dict | None = None) -> dict:
    response = http.post("/v1/reports", json={"reports": [report or make_reports(spec, [value])[0]]},
                         headers=bearer(keys["ingest"]))
    assert response.status_code == 200, response.json
    return response.json


def day_before(days: int) -> str:
    return (dt.date.fromisoformat(today()) - dt.timedelta(days=days)).isoformat()


def store_on(db_path: Path, day: str, reports: list[dict]) -> None:
    "Reports stored on ``day`` by another connection (as the collector stored them that day)"
    with open_storage(db_path) as storage:
        campaign = storage.get_campaign(reports[0]["campaign"])
        storage.insert_reports([ReportGroup(campaign, [r["report_id"] for r in reports],
                                            [r["payload"] for r in reports])], day)


def test_a_report_stored_yesterday_after_the_days_were_looked_up_is_a_duplicate(app, http, keys, campaign, db_path):
    post_one(http, keys, campaign)  # the connection has looked at the earlier days: none has reports
    late = make_reports(campaign, ["safari"], seed=7)[0]
    store_on(db_path, day_before(1), [late])  # a request that began before midnight stores it yesterday
    assert post_one(http, keys, campaign, report=late) == {"accepted": 0, "duplicate": 1, "rejected": 0,
                                                            "errors": []}


def test_a_report_this_connection_stored_on_a_past_day_is_a_duplicate_later(app, keys, campaign):
    "Days are looked up once; a day this connection writes afterwards (out of order, as tests and tools may) counts"
    with app.app_context():
        storage = get_storage()
        version = storage.get_campaign(campaign.name)
        first, late = make_reports(campaign, ["edge", "chrome"])
        assert storage.insert_reports([ReportGroup(version, [first["report_id"]], [first["payload"]])],
                                      today()).accepted == 1  # the days before today: looked up, none has reports
        group = ReportGroup(version, [late["report_id"]], [late["payload"]])
        assert storage.insert_reports([group], day_before(3)).accepted == 1
        again = ReportGroup(version, [late["report_id"]], [late["payload"]])
        assert storage.insert_reports([again], today()).duplicate == 1


def test_the_spec_listing_shows_a_new_version_and_a_closing_at_once(http, keys, campaign):
    def listed() -> dict:
        response = http.get("/v1/campaigns", headers=bearer(keys["ingest"]))
        assert response.status_code == 200
        return {c["name"]: c for c in response.json["campaigns"]}

    assert listed()["browser"]["version"] == 1 and listed()["browser"]["closed"] is False
    changed = {**CATEGORICAL, "epsilon": 2.0}
    assert http.post("/v1/campaigns", json=changed, headers=bearer(keys["admin"])).status_code == 201
    assert listed()["browser"]["version"] == 2
    assert http.post("/v1/campaigns/browser/close", headers=bearer(keys["admin"])).status_code == 200
    assert listed()["browser"]["closed"] is True
