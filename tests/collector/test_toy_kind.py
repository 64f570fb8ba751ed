"""A third campaign kind, added the way docs/architecture.md ("Adding a campaign kind") says: one module per side,
registered through the public registration functions, run through create -> ingest -> estimate -> report with no
edit to the built-in kinds.  The toy kind, "tally", counts the reports its campaign accepted (its own store)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from flask import Response, jsonify

from client_sdk.errors import SpecError
from client_sdk.kinds import CampaignKind, kind_of, register_kind, unregister_kind
from collector.kinds import (
    Accepted,
    ApiGet,
    CollectorKind,
    ReportItem,
    Window,
    register_collector_kind,
    unregister_collector_kind,
)
from collector.reporting import report_data_from_db
from collector.storage import CampaignVersion, StorageBase
from estimators.estimates import Estimate
from estimators.kinds import EstimateKind, register_estimate_kind, unregister_estimate_kind
from estimators.report import json_report, render_table
from estimators.report.kinds import GENERIC, report_kind
from estimators.window import ReportData

from .helpers import bearer

NAME = "tally"
SPEC = {"name": "app_opened", "kind": NAME, "epsilon": 1.0, "description": "app opens, counted"}


class TallyParams:
    "The toy kind's parameters: epsilon only (it owns no spec field of its own)"

    def __init__(self, epsilon: float) -> None:
        self.epsilon = epsilon

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TallyParams) and other.epsilon == self.epsilon

    def __hash__(self) -> int:
        return hash(self.epsilon)


class TallyDevice(CampaignKind):
    "Device side: a report says 'it happened' (its payload is true)"

    name = NAME

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> TallyParams:
        epsilon = data.get("epsilon")
        if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool) or not epsilon > 0:
            raise SpecError("epsilon", "must be a positive number")
        return TallyParams(float(epsilon))

    def make_report(self, ctx: Any, spec: Any, value: Any) -> Any:
        return True


class TallyCollector(CollectorKind):
    "Collector side: its own store (report ids per campaign version), the count as its estimate"

    name = NAME

    def __init__(self) -> None:
        self.store: dict[tuple[str, str], set[str]] = {}

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        outcome = Accepted()
        for index, report, campaign in items:
            if report["payload"] is not True:
                outcome.rejected.append((index, report["report_id"], "payload", "must be true"))
                continue
            ids = self.store.setdefault((campaign.name, campaign.fingerprint), set())
            if report["report_id"] in ids:
                outcome.duplicate += 1
            else:
                ids.add(report["report_id"])
                outcome.accepted += 1
        return outcome

    def count(self, campaign: CampaignVersion) -> int:
        return len(self.store.get((campaign.name, campaign.fingerprint), ()))

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        return jsonify(TALLY_ESTIMATES.estimate(campaign.spec, self.count(campaign)).to_json())

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        result = TALLY_ESTIMATES.estimate(campaign.spec, self.count(campaign), window.confidence).to_json()
        return ReportData(result, campaign.spec.to_dict(), window.since, window.until)

    def report_data_from_api(self, get: ApiGet, base: str, resource: Any, spec_json: dict | None,
                             window: Window, daily_top: int | None) -> ReportData:
        return ReportData(get(base + "/estimate", {}), spec_json, window.since, window.until)


class TallyEstimates(EstimateKind):
    "Estimate side: the number of accepted reports, exact (no noise: a toy)"

    name = NAME

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        count = int(source)
        rows = [{"value": "reports", "estimate": count, "std_error": 0.0, "ci_low": count, "ci_high": count}]
        return Estimate.from_json({"trust": NAME, "kind": "count", "campaign": spec.name, "n": count,
                                   "confidence": confidence, "epsilon": spec.epsilon, "values": rows})


TALLY_ESTIMATES = TallyEstimates()


@pytest.fixture
def tally() -> Iterator[TallyCollector]:
    collector_side = TallyCollector()
    register_kind(TallyDevice())
    register_collector_kind(collector_side)
    register_estimate_kind(TALLY_ESTIMATES)
    try:
        yield collector_side
    finally:
        unregister_kind(NAME)
        unregister_collector_kind(NAME)
        unregister_estimate_kind(NAME)


def _report(spec: dict, payload: Any, report_id: str | None = None) -> dict:
    return {"report_id": report_id or str(uuid.uuid4()), "campaign": spec["name"], "fingerprint": spec["fingerprint"],
            "payload": payload}


def test_a_third_kind_runs_from_campaign_to_report(tally: TallyCollector, http: Any, keys: dict[str, str],
                                                   db_path: Any) -> None:
    admin, ingest = bearer(keys["admin"]), bearer(keys["ingest"])
    created = http.post("/v1/campaigns", json=SPEC, headers=admin)
    assert created.status_code == 201, created.json
    spec = created.json["spec"]
    assert spec["kind"] == NAME and kind_of(spec).name == NAME  # it reloads as its own kind from the database
    listed = http.get("/v1/campaigns", headers=ingest).json["campaigns"]
    assert [item["spec"]["fingerprint"] for item in listed] == [spec["fingerprint"]]

    device = kind_of(spec)
    payloads = [device.make_report(None, spec, None) for _ in range(5)]
    repeated = _report(spec, True)
    batch = [_report(spec, payload) for payload in payloads] + [repeated, dict(repeated), _report(spec, 1)]
    answer = http.post("/v1/reports", json={"reports": batch}, headers=ingest)
    assert answer.status_code == 200, answer.json
    assert (answer.json["accepted"], answer.json["duplicate"], answer.json["rejected"]) == (6, 1, 1)
    assert answer.json["errors"][0]["index"] == 7 and answer.json["errors"][0]["field"] == "reports[7].payload"

    estimate = http.get(f"/v1/campaigns/{spec['name']}/estimate", headers=admin)
    assert estimate.status_code == 200 and estimate.json["n"] == 6 == tally.count(_version(spec))
    data = report_data_from_db(db_path, spec["name"])
    assert data.result["values"][0]["estimate"] == 6
    assert report_kind(data.result) is GENERIC  # no report module: the generic header and captions
    text = render_table(data)
    assert f"campaign {spec['name']}: count estimate, {NAME} campaign" in text and "n = 6 reports" in text
    assert json_report(data)["trust"] == NAME


def test_without_its_modules_the_kind_is_refused_by_name(http: Any, keys: dict[str, str]) -> None:
    "The registry is the list of kinds: an unregistered one is a 400 naming 'kind', before anything is stored"
    answer = http.post("/v1/campaigns", json=SPEC, headers=bearer(keys["admin"]))
    assert answer.status_code == 400 and answer.json["field"] == "kind"
    assert "['local', 'prio3', 'quantiles']" in answer.json["detail"]
    assert http.get("/v1/campaigns", headers=bearer(keys["ingest"])).json["campaigns"] == []


def _version(spec: dict) -> CampaignVersion:
    from client_sdk.spec import load_spec

    loaded = load_spec(spec)
    return CampaignVersion(loaded.name, 1, loaded.fingerprint, loaded, "")
