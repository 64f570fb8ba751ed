"""The heavy_hitters kind on the collector: create, ingest (payloads checked by field, duplicates refused), the
kind's own tables, /estimate, and the report in every format (JSON valid against report.schema.json)."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import jsonschema
import pytest

from client_sdk import DeterministicRandom
from client_sdk.kinds.heavy_hitters import cell_count, make_report, parse_payload
from client_sdk.spec import load_spec
from collector.reporting import report_data_from_db
from estimators.report import json_report, render_markdown, render_table
from estimators.report.json_report import report_schema

from .helpers import bearer

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
PLANTED = {"hello": 0.35, "world": 0.3}


def _spec(algorithm: str) -> dict:
    extra = {"segment_length": 2} if algorithm == "pem" else {"fragment_length": 2, "sketch_width": 256,
                                                              "sketch_depth": 8}
    return {"name": f"words_{algorithm}", "kind": "heavy_hitters", "epsilon": 4.0, "max_length": 5,
            "alphabet": ALPHABET, "algorithm": algorithm, **extra}


def _reports(spec_json: dict, n: int, seed: int = 3) -> list[dict]:
    spec = load_spec(spec_json)
    rng = DeterministicRandom(seed)
    values = [word for word, share in PLANTED.items() for _ in range(int(share * n))]
    values += ["".join(ALPHABET[rng.randbelow(26)] for _ in range(5)) for _ in range(n - len(values))]
    return [{"report_id": str(uuid.uuid4()), "campaign": spec.name, "fingerprint": spec.fingerprint,
             "payload": make_report(rng, spec.params, value)} for value in values]


@pytest.mark.parametrize("algorithm", ["pem", "sfp"])
def test_reports_are_stored_in_the_kinds_tables_and_estimated(algorithm: str, http: Any, keys: dict[str, str],
                                                              db_path: Any) -> None:
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    created = http.post("/v1/campaigns", json=_spec(algorithm), headers=admin)
    assert created.status_code == 201, created.json
    spec = created.json["spec"]
    reports = _reports(spec, 3000)
    params = load_spec(spec).params
    bad = {**reports[0], "report_id": str(uuid.uuid4()), "payload": cell_count(params)}
    older = {**reports[1], "report_id": str(uuid.uuid4()), "payload": [99, 0, 0] + [0] * (algorithm == "sfp")}
    legacy = [{**report, "payload": list(parse_payload(params, report["payload"])._values())}
              for report in reports[1500:1600]]  # the list form of older SDKs, counted as its cell
    batches = [reports[:1500] + [bad, older, dict(reports[0])], legacy + reports[1600:]]
    answers = [http.post("/v1/reports", json={"reports": batch}, headers=ingest).json for batch in batches]
    assert (answers[0]["accepted"], answers[0]["duplicate"], answers[0]["rejected"]) == (1500, 1, 2)
    assert [error["field"] for error in answers[0]["errors"]] == ["reports[1500].payload", "reports[1501].payload[0]"]
    assert answers[1]["accepted"] == 1500
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM hh_seen").fetchone() == (3000,)
        # both algorithms' reports are binned into the bounded count table; no report is kept one by one
        assert conn.execute("SELECT sum(reports) FROM hh_counts").fetchone() == (3000,)
        cells = conn.execute("SELECT count(*), sum(abs(total)) FROM hh_sketch").fetchone()
        assert 0 < cells[0] <= (cells[1] if algorithm == "sfp" else 3000)
        if algorithm == "pem":
            assert cells[1] == 3000
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "hh_pem_reports" not in tables

    estimate = http.get(f"/v1/campaigns/{spec['name']}/estimate", headers=admin)
    assert estimate.status_code == 200, estimate.json
    result = estimate.json
    assert result["kind"] == "heavy_hitters" and result["n"] == 3000
    found = {row["value"]: row for row in result["values"]}
    assert set(PLANTED) <= set(found)
    section = result["heavy_hitters"]
    assert 0 < section["detection_threshold"] < min(PLANTED.values())
    assert section["expected_false_discoveries"] >= 0 and section["interval_source"].startswith("estimation group")

    data = report_data_from_db(db_path, spec["name"])
    document = json_report(data)
    jsonschema.validate(document, report_schema())
    text = render_table(data)
    assert "detection threshold" in text and "hello" in text and "estimation group" in text
    markdown = render_markdown(data, image_prefix=None).text
    assert "hello" in markdown and "detection threshold" in markdown


def test_an_empty_window_is_a_404_naming_since(http: Any, keys: dict[str, str]) -> None:
    admin = bearer(keys["admin"])
    spec = http.post("/v1/campaigns", json=_spec("pem"), headers=admin).json["spec"]
    answer = http.get(f"/v1/campaigns/{spec['name']}/estimate", headers=admin)
    assert answer.status_code == 404 and answer.json["field"] == "since"


def test_a_batch_resent_in_part_stores_only_its_new_reports(http: Any, keys: dict[str, str], db_path: Any) -> None:
    "Ids stored by an earlier batch are duplicates; the new reports of the same batch are stored and counted once"
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    spec = http.post("/v1/campaigns", json=_spec("sfp"), headers=admin).json["spec"]
    reports = _reports(spec, 300)
    first = http.post("/v1/reports", json={"reports": reports[:200]}, headers=ingest).json
    again = http.post("/v1/reports", json={"reports": reports[100:]}, headers=ingest).json
    assert (first["accepted"], first["duplicate"]) == (200, 0)
    assert (again["accepted"], again["duplicate"], again["rejected"]) == (100, 100, 0)
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM hh_seen").fetchone() == (300,)
        assert conn.execute("SELECT sum(reports) FROM hh_counts").fetchone() == (300,)
    assert http.get(f"/v1/campaigns/{spec['name']}/estimate", headers=admin).json["n"] == 300
