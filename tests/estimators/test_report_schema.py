"""The JSON report against its published schema (estimators/report/report.schema.json), for every kind."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from client_sdk import load_spec
from estimators import aggregate, estimate
from estimators.report import SCHEMA_VERSION, DailyResult, ReportData, render_json, report_schema
from estimators.simulate import simulate
from estimators.window import window_estimate

from .report_fixtures import (
    browser_data,
    daily_browser,
    distributed_result,
    distributed_spec,
    distributed_sum_result,
    load_time_result,
    rappor_result,
)

RAPPOR_SPEC = {"name": "homepage", "mechanism": "rappor", "rappor": {"k": 32, "h": 1, "m": 4, "f": 0.0, "p": 0.25,
                                                                       "q": 0.75}, "candidates": ["a", "b", "c"]}


def validator() -> jsonschema.Draft202012Validator:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def decoded_rappor() -> dict:
    spec = load_spec(RAPPOR_SPEC)
    rng = np.random.default_rng(5)
    batch = simulate(spec, rng.choice(["a", "b", "c"], size=6000, p=[0.6, 0.3, 0.1]).tolist(), rng)
    return window_estimate(spec, aggregate(spec, batch))


def frequency(mechanism: str) -> ReportData:
    spec = load_spec({"name": "os", "mechanism": mechanism, "epsilon": 2.0, "domain": ["linux", "mac", "win"]})
    rng = np.random.default_rng(3)
    result = window_estimate(spec, aggregate(spec, simulate(spec, rng.integers(0, 3, size=2000), rng)))
    return ReportData(result, spec.to_dict(), "2025-01-01", None)


CASES = {
    "frequency-oue-daily": lambda: browser_data(daily=daily_browser()),
    "frequency-grr": lambda: frequency("grr"),
    "frequency-olh": lambda: frequency("olh"),
    "mean": lambda: ReportData(load_time_result(), None, None, "2025-01-02",
                               [DailyResult("2025-01-01", load_time_result(seed=3)),
                                DailyResult("2025-01-02", load_time_result(seed=4))]),
    "mean-with-unit": lambda: ReportData(load_time_result(unit="ms")),
    "rappor-decoder-rows": lambda: ReportData(rappor_result(), RAPPOR_SPEC),  # as decoded
    "rappor-collector": lambda: ReportData(decoded_rappor(), load_spec(RAPPOR_SPEC).to_dict()),
    "distributed-histogram-window": lambda: ReportData(distributed_result("coins", days=("2026-11-29", "2026-11-30")),
                                                       distributed_spec("coins")),
    "distributed-sum": lambda: ReportData(distributed_sum_result(), None),
}


@pytest.mark.parametrize("name", CASES)
def test_every_kind_of_report_matches_the_published_schema(name):
    report = json.loads(render_json(CASES[name]()))
    validator().validate(report)
    assert report["schema_version"] == SCHEMA_VERSION == report_schema()["properties"]["schema_version"]["const"]
    assert {"kind", "campaign", "n", "confidence", "values"} <= set(report)


def test_rappor_rows_are_proportions_with_their_counts_kept():
    report = json.loads(render_json(ReportData(rappor_result(), RAPPOR_SPEC)))
    assert report["kind"] == "rappor" and report["campaign"] == "homepage" and report["n"] == 5000
    first = report["values"][0]
    assert (first["value"], first["estimate"], first["std_error"], first["count"]) == ("5.2.0", 0.41, 0.03, 2050.0)
    assert "estimates" not in report


def test_the_schema_rejects_a_report_without_the_common_members():
    report = json.loads(render_json(browser_data()))
    check = validator()
    for member in ("kind", "campaign", "n", "values"):
        broken = {k: v for k, v in report.items() if k != member}
        assert not check.is_valid(broken), member
    assert not check.is_valid({**report, "kind": "histogram"})


def test_the_schema_ships_in_the_package():
    from importlib.resources import files

    assert files("estimators.report").joinpath("report.schema.json").is_file()
    assert estimate  # the estimators' entry point the fixtures use


def test_a_distributed_report_must_carry_its_trust_models_and_guarantee():
    report = json.loads(render_json(ReportData(distributed_result(), distributed_spec())))
    check = validator()
    assert report["trust"] == "distributed" and check.is_valid(report)
    assert json.loads(render_json(browser_data()))["trust"] == "local"
    for member in ("trust_models", "guarantee", "noise", "prio3"):
        assert not check.is_valid({k: v for k, v in report.items() if k != member}), member
    broken = {**report, "trust_models": {k: v for k, v in report["trust_models"].items() if k != "central"}}
    assert not check.is_valid(broken)
