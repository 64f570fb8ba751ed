"""What one device request costs the collector, in SQL statements: constant and small (issue 14 item 5).

A device sends one ``GET /v1/campaigns`` and one 1-report ``POST /v1/reports`` per campaign.  The statements each
runs are counted on the request thread's connection (the test client serves in the test's thread).  That the caches
keeping them few never hide a change is behaviour: tests/collector/test_request_caches.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from collector.db import get_storage
from tests.collector.helpers import NUMERIC, bearer, make_reports
from tests.collector.test_request_caches import day_before, post_one, store_on

pytestmark = pytest.mark.budget

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
