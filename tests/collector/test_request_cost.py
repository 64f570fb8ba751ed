"""What one device request costs the collector, in SQL statements: constant and small (issue 14 item 5).

A device sends one ``GET /v1/campaigns`` and one 1-report ``POST /v1/reports`` per campaign.  The statements each
runs are counted on the request thread's connection (the test client serves in the test's thread); the caches
that keep them few must never hide a change: a new version, a closing, a duplicate stored yesterday.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import client_sdk
from collector.api.campaigns import today
from collector.db import get_storage
from collector.storage import ReportGroup, open_storage

from .helpers import CATEGORICAL, NUMERIC, bearer, make_reports

# key, closed campaigns, the window's day filters, BEGIN, the day's filter dropped (a late insert into a closed day
# must drop it), INSERT, aggregate read and write, COMMIT
POST_STATEMENTS = 9
GET_STATEMENTS = 3  # key, closed campaigns, the latest versions


@contextmanager
def statements(app: Any) -> Iterator[list[str]]:
    "The SQL statements run on this thread's collector connection inside the block"
    with app.app_context():
        storage: Any = get_storage()
    seen: list[str] = []
    storage.conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        storage.conn.set_trace_callback(None)


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


def test_a_one_report_post_runs_the_same_few_statements_every_time(app, http, keys, campaign):
    post_one(http, keys, campaign)  # the first one caches the campaign version
    counts = []
    for value in ("chrome", "firefox", "safari", "edge", "chrome"):
        with statements(app) as seen:
            assert post_one(http, keys, campaign, value)["accepted"] == 1
        counts.append(len(seen))
        assert sum(s.startswith("INSERT OR IGNORE INTO reports") for s in seen) == 1, seen
    assert len(set(counts)) == 1 and counts[0] <= POST_STATEMENTS, (counts, seen)


def test_the_duplicate_lookup_of_earlier_days_does_not_grow_with_stored_days(app, http, keys, campaign, db_path):
    for days in range(1, 9):  # every day the lookup searches has reports
        store_on(db_path, day_before(days), make_reports(campaign, ["chrome"] * 3, seed=days))
    post_one(http, keys, campaign)
    for _ in range(3):
        with statements(app) as seen:
            post_one(http, keys, campaign)
        probes = [s for s in seen if "FROM reports" in s and "INSERT" not in s]
        # the days with reports are known from the first POST on: only the search for the ids themselves is left,
        # and none once the days' filters (built in the background after the first POST) rule the ids out
        assert len(probes) <= 1 and all("report_id IN" in probe for probe in probes), seen
        assert len(seen) <= POST_STATEMENTS + len(probes), seen


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


def test_the_spec_get_runs_the_same_few_statements_however_many_campaigns(app, http, keys, campaign):
    def count() -> int:
        http.get("/v1/campaigns", headers=bearer(keys["ingest"]))
        with statements(app) as seen:
            response = http.get("/v1/campaigns", headers=bearer(keys["ingest"]))
        assert response.status_code == 200
        return len(seen)

    one = count()
    for index in range(4):
        spec = {**NUMERIC, "name": f"load_{index}"}
        assert http.post("/v1/campaigns", json=spec, headers=bearer(keys["admin"])).status_code == 201
    assert count() == one <= GET_STATEMENTS


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
