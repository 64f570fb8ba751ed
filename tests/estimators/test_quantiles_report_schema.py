"""The quantiles kind's JSON reports against report.schema.json: a local campaign's (each quantile's simultaneous
interval, its pointwise set) and a distributed one's (the aggregators' noise, the guarantee, and the trust models
side by side per quantile), both from real estimates; the schema refuses each with one of those members missing."""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import numpy as np
import pytest

from client_sdk.kinds.quantiles import bucket_of
from client_sdk.spec import load_spec
from estimators.distributed.release import DistributedQuestion
from estimators.kinds import QUANTILES_ESTIMATES
from estimators.kinds.quantiles import simulate_aggregate
from estimators.kinds.quantiles.distributed import estimate_releases
from estimators.report import ReportData, render_json, report_schema
from estimators.window import finite_json

LOCAL = {"name": "load_ms", "kind": "quantiles", "epsilon": 1.0, "range": [0, 2000], "buckets": 128, "unit": "ms"}
DISTRIBUTED = {"name": "lat", "kind": "quantiles", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
               "range": [0, 1000], "buckets": 40, "noise": "gaussian", "min_batch": 10, "unit": "ms"}


def _values(n: int, seed: int) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).lognormal(math.log(300), 0.6, n), 0, 2000)


def local_report() -> dict:
    spec = load_spec(LOCAL)
    buckets = np.array([bucket_of(spec.params, float(v)) for v in _values(5000, 1)])
    source = simulate_aggregate(spec.params, buckets, np.random.default_rng(2), spec.fingerprint)
    result = finite_json(QUANTILES_ESTIMATES.estimate(spec, source).to_json())
    return json.loads(render_json(ReportData(result, spec.to_dict(), None, None)))


def distributed_report() -> dict:
    "A release as the leader stores it (the bucket counts plus both aggregators' exact noise), estimated"
    spec = load_spec(DISTRIBUTED)
    noise = DistributedQuestion.of(spec).calibrated_noise()
    counts = np.bincount([bucket_of(spec.params, float(v)) for v in _values(3000, 3)], minlength=40)
    offsets, pmf = noise.noise_pmf()
    noisy = counts + np.random.default_rng(4).choice(offsets, size=len(counts), p=pmf)
    release = {"release": [int(v) for v in noisy], "report_count": int(counts.sum()), "fingerprint": spec.fingerprint,
               "batch": "2026-12-02", "noise": noise.describe(), "prio3": "histogram"}
    result = finite_json(estimate_releases(spec, [release]))
    return json.loads(render_json(ReportData(result, spec.to_dict(), None, None)))


def _validator() -> jsonschema.Draft202012Validator:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _without(report: dict, *path: str | int) -> dict:
    "A copy of ``report`` without the member at ``path`` (keys and list indices)"
    broken = copy.deepcopy(report)
    parent: object = broken
    for step in path[:-1]:
        parent = parent[step]  # type: ignore[index]
    del parent[path[-1]]  # type: ignore[attr-defined]
    return broken


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    return {"local": local_report(), "distributed": distributed_report()}


def test_real_local_and_distributed_quantiles_reports_match_the_schema(reports: dict[str, dict]) -> None:
    check = _validator()
    for trust, report in reports.items():
        assert report["kind"] == "quantiles" and report["trust"] == trust
        check.validate(report)
    row = reports["local"]["quantiles"][0]
    assert {"simultaneous_low", "simultaneous_high"} <= set(row), row
    assert set(reports["distributed"]["trust_models"]["quantiles"][0]) >= {"local", "distributed", "central"}


LOCAL_MISSING = [("quantiles", 0, "simultaneous_low"), ("quantiles", 2, "simultaneous_high"), ("band",),
                 ("cdf", 3, "band_low")]
DISTRIBUTED_MISSING = [("trust_models",), ("trust_models", "quantiles"), ("trust_models", "quantiles", 1, "central"),
                       ("trust_models", "quantiles", 0, "distributed", "rank_halfwidth"), ("trust_models", "local"),
                       ("noise",), ("guarantee",), ("band", "draws"), ("prio3",)]


@pytest.mark.parametrize("path", LOCAL_MISSING, ids=lambda path: ".".join(map(str, path)))
def test_the_schema_refuses_a_local_report_missing_a_member(reports: dict[str, dict], path: tuple) -> None:
    assert not _validator().is_valid(_without(reports["local"], *path))


@pytest.mark.parametrize("path", DISTRIBUTED_MISSING, ids=lambda path: ".".join(map(str, path)))
def test_the_schema_refuses_a_distributed_report_missing_a_member(reports: dict[str, dict], path: tuple) -> None:
    assert not _validator().is_valid(_without(reports["distributed"], *path))


def test_the_schema_checks_the_pointwise_set_and_the_simultaneous_bounds(reports: dict[str, dict]) -> None:
    check = _validator()
    report = reports["local"]
    if "pointwise_set" in report["quantiles"][0]:  # the values whose pointwise CDF interval holds p: [low, high]s
        bad = copy.deepcopy(report)
        bad["quantiles"][0]["pointwise_set"] = [[1.0]]
        assert not check.is_valid(bad)
    bad = copy.deepcopy(report)
    bad["quantiles"][0]["simultaneous_low"] = "low"
    assert not check.is_valid(bad)
