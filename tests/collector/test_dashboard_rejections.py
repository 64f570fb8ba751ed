"""Rejections by reason of local campaigns (issue 38): the collector counts each campaign's refused reports by the
refused field, shows the counts in the dashboard's panel, and stores nothing else about them: not the payload,
not the key, not an order of arrival; a report naming no campaign its key may use is not counted at all."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from collector.kinds.local_rejections import reason_of

from .helpers import bearer, make_reports

MARKER = "zq-rejected-payload-7f3c"  # text of the refused payloads: it must be nowhere in the database files


def _bad(campaign, payload) -> dict:
    return {"report_id": str(uuid.uuid4()), "campaign": campaign.name, "fingerprint": campaign.fingerprint,
            "payload": payload}


def _panel(http, keys, name="browser") -> dict:
    answer = http.get(f"/v1/campaigns/{name}/panel", headers=bearer(keys["admin"]))
    assert answer.status_code == 200, answer.json
    return answer.json


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_rejections_are_counted_by_reason_and_shown_in_the_panel(http, keys, campaign, backend) -> None:
    ingest = bearer(keys["ingest"])
    good = make_reports(campaign, ["chrome"] * 5)
    assert http.post("/v1/reports", json={"reports": good}, headers=ingest).json["accepted"] == 5
    assert _panel(http, keys)["rejections"] == {}
    wrong_shape = [_bad(campaign, MARKER) for _ in range(3)]  # a string where OUE takes its bit list
    answer = http.post("/v1/reports", json={"reports": [*wrong_shape, *make_reports(campaign, ["edge"], seed=2)]},
                       headers=ingest).json
    assert (answer["accepted"], answer["rejected"]) == (1, 3)
    fields = {reason_of(error["field"]) for error in answer["errors"]}
    assert fields == {"payload"}
    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns/browser/close", headers=admin).status_code == 200
    closed = make_reports(campaign, ["safari"] * 2, seed=3)
    assert http.post("/v1/reports", json={"reports": closed}, headers=ingest).json["rejected"] == 2
    assert _panel(http, keys)["rejections"] == {"payload": 3, "campaign": 2}
    # not counted: a campaign nobody created (an attacker's text) and a report of no known shape
    unknown = {**_bad(campaign, [0, 1, 0, 0]), "campaign": "no_such_campaign"}
    shapeless = {"report_id": str(uuid.uuid4()), MARKER: 1}
    assert http.post("/v1/reports", json={"reports": [unknown, shapeless]}, headers=ingest).json["rejected"] == 2
    assert _panel(http, keys)["rejections"] == {"payload": 3, "campaign": 2}


def test_a_campaign_with_only_rejected_reports_shows_them_beside_no_estimate(http, keys, campaign) -> None:
    http.post("/v1/reports", json={"reports": [_bad(campaign, {"bits": MARKER})]}, headers=bearer(keys["ingest"]))
    answer = http.get("/v1/campaigns/browser/panel", headers=bearer(keys["admin"]))
    assert answer.status_code == 404 and answer.json["rejections"] == {"payload": 1}


def test_the_rejected_payload_is_nowhere_in_the_database_files(http, keys, campaign, db_path: Path) -> None:
    ingest = bearer(keys["ingest"])
    for shape in (MARKER, {MARKER: MARKER}, [MARKER] * 4, [[MARKER]]):
        http.post("/v1/reports", json={"reports": [_bad(campaign, shape) for _ in range(2)]}, headers=ingest)
    shown = http.get("/v1/campaigns/browser/panel", headers=bearer(keys["admin"])).json  # no estimate: a 404
    assert shown["rejections"] == {"payload": 8}
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.execute("SELECT * FROM report_rejections").fetchall()
    assert rows == [("browser", "payload", 8)]  # campaign, reason, count: nothing per report, no id or time
    files = [path for path in db_path.parent.iterdir() if path.name.startswith(db_path.name)]
    assert files
    for path in files:
        assert MARKER.encode() not in path.read_bytes(), path


def test_the_stored_reason_is_a_collector_field_name_never_the_senders_text() -> None:
    assert reason_of("reports[3].payload") == "payload"
    assert reason_of("reports[0].payload[2]") == "payload"
    assert reason_of("reports[1].campaign") == "campaign"
    assert reason_of("reports[9].payload.bits") == "payload.bits"
    for hostile in ("reports[0]." + MARKER, "reports[0].<img src=x>", "reports[0]." + "a" * 80, "reports[0].Payload"):
        assert reason_of(hostile) == "payload"
