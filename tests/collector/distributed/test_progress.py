"""Visible progress of a distributed campaign: per batch, reports accepted, rejected by reason, pending, aggregated
and the distance to ``min_batch``, the same in ``campaign show``, ``GET /v1/campaigns/<name>/progress`` and
``/metrics``; a batch whose window ended below ``min_batch`` says so (``below_min_batch``), in collect's answer too."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from click.testing import CliRunner

from collector import auth
from ldp_telemetry.cli import main

from ..helpers import on_both_backends
from ..test_cli_and_docs import assert_openapi_documents_the_routes
from .kit import Pair, encoded_report, end_day, honest_reports, spec_json, values_for

pytestmark = on_both_backends  # each test on SQLite files and on PostgreSQL databases


@pytest.fixture
def pair(tmp_path):
    return Pair(tmp_path)


def api_progress(pair: Pair, name: str) -> dict:
    response = pair.leader.get(f"/v1/campaigns/{name}/progress", headers=pair.admin)
    assert response.status_code == 200, response.json
    return response.json


def cli_progress(pair: Pair, name: str) -> dict:
    done = CliRunner().invoke(main, ["campaign", "show", name, "--db", str(pair.leader_db)])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)["progress"]


def metrics(pair: Pair) -> dict[str, float]:
    "The distributed series of /metrics: 'name{labels}' -> value"
    text = pair.leader.get("/metrics").get_data(as_text=True)
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(ldp_distributed_\S+) (\S+)$", text, re.M)}


def mixed_upload(pair: Pair) -> tuple[object, str]:
    "6 honest reports, 2 refused at upload (wrong key id, altered ciphertext), 1 the helper refuses in its job"
    spec, block = pair.create(spec_json("histogram", min_batch=10))
    reports = honest_reports(spec, block, values_for("histogram", 8))
    reports[6]["payload"]["leader_share"]["config_id"] = (block["leader"]["hpke_config"]["id"] % 255) + 1
    ciphertext = reports[7]["payload"]["leader_share"]["ciphertext"]
    reports[7]["payload"]["leader_share"]["ciphertext"] = ("A" if ciphertext[0] != "A" else "B") + ciphertext[1:]
    invalid = encoded_report(spec, block, [1, 1, 0, 0])  # two buckets: not a histogram entry
    answer = pair.upload(reports + [invalid])
    assert (answer["accepted"], answer["rejected"]) == (7, 2), answer
    return spec, auth.utc_today()


def test_the_three_views_agree_on_a_batch_with_rejected_reports(pair):
    spec, batch = mixed_upload(pair)
    name = spec.name  # type: ignore[attr-defined]
    before = api_progress(pair, name)["batches"][0]
    assert (before["batch"], before["state"], before["accepted"], before["pending"], before["aggregated"]) == (
        batch, "open", 7, 7, 0)
    assert pair.aggregate().rejected == 1
    progress = api_progress(pair, name)
    (item,) = progress["batches"]
    assert item == {"batch": batch, "state": "open", "accepted": 7, "pending": 0, "pending_in_jobs": 0,
                    "aggregated": 6, "min_batch": 10, "to_min_batch": 4,
                    "rejected": {"hpke-decrypt-error": 1, "hpke-unknown-config-id": 1, "invalid-measurement": 1}}
    assert cli_progress(pair, name) == progress
    series = metrics(pair)
    label = f'campaign="{name}"'
    assert series[f'ldp_distributed_reports{{{label},state="accepted"}}'] == 7
    assert series[f'ldp_distributed_reports{{{label},state="aggregated"}}'] == 6
    assert series[f'ldp_distributed_reports{{{label},state="pending"}}'] == 0
    for reason, count in item["rejected"].items():
        assert series[f'ldp_distributed_rejected_reports{{{label},reason="{reason}"}}'] == count
    assert series[f"ldp_distributed_open_batch_to_min_batch{{{label}}}"] == 4
    assert series[f'ldp_distributed_batches{{{label},state="open"}}'] == 1


def test_a_batch_whose_window_ended_below_min_batch_says_so_everywhere(pair):
    spec, batch = mixed_upload(pair)
    name = spec.name  # type: ignore[attr-defined]
    pair.aggregate()
    assert end_day() == batch
    (item,) = api_progress(pair, name)["batches"]
    assert (item["state"], item["to_min_batch"]) == ("below_min_batch", 4)
    assert cli_progress(pair, name)["batches"][0]["state"] == "below_min_batch"
    assert metrics(pair)[f'ldp_distributed_batches{{campaign="{name}",state="below_min_batch"}}'] == 1
    response = pair.collect(name, batch)
    assert response.status_code == 409 and response.json["type"].endswith("batch-too-small")
    assert (response.json["state"], response.json["report_count"], response.json["min_batch"]) == (
        "below_min_batch", 6, 10)


def test_a_batch_that_reached_min_batch_is_ready_then_collected(pair):
    spec, block = pair.create(spec_json("histogram", min_batch=5))
    pair.upload(honest_reports(spec, block, values_for("histogram", 5)))
    batch = end_day()
    assert api_progress(pair, spec.name)["batches"][0]["state"] == "ready"  # pending reports count toward it
    assert pair.collect(spec.name, batch).status_code == 200
    (item,) = api_progress(pair, spec.name)["batches"]
    assert (item["state"], item["aggregated"], item["to_min_batch"]) == ("collected", 5, 0)


def test_metric_labels_are_bounded_whatever_a_helper_answers(pair, monkeypatch):
    "A reason that is not one of the protocol's (a helper's free text) is counted as rejected-by-helper"
    spec, block = pair.create(spec_json("histogram", min_batch=5))
    pair.upload(honest_reports(spec, block, ["a"]))
    original = pair.transport.inner.request

    def answer_garbage(method, path, body, headers):
        status, answer = original(method, path, body, headers)
        if "aggregation_jobs" in path:
            for entry in answer["reports"]:
                entry.update(result="reject", error=f"free text {uuid.uuid4()}")
        return status, answer

    monkeypatch.setattr(pair.transport.inner, "request", answer_garbage)
    assert pair.aggregate().rejected == 1
    reasons = [key for key in metrics(pair) if key.startswith("ldp_distributed_rejected_reports")]
    assert reasons == [f'ldp_distributed_rejected_reports{{campaign="{spec.name}",reason="rejected-by-helper"}}']


def test_the_leaders_openapi_document_names_every_route_and_the_docs_describe_them(pair):
    assert_openapi_documents_the_routes(pair.leader_app, pair.leader.get("/openapi.json").json)
