"""The quantiles kind's estimate side: registered, its JSON valid against report.schema.json, and the two answers
beside it checked against their formulas (the curator's Laplace half-width) and a simulation (a mean mechanism's
standard error)."""

from __future__ import annotations

import math

import jsonschema
import numpy as np

from client_sdk.kinds.quantiles import bucket_of
from client_sdk.spec import load_spec
from estimators import estimate
from estimators.kinds import QUANTILES_ESTIMATES, estimate_kind
from estimators.kinds.quantiles import simulate_aggregate
from estimators.report import ReportData, render_json, report_schema
from estimators.simulate import simulate
from estimators.window import finite_json
from tests.tolerances import k_sigma

SPEC = load_spec({"name": "load_ms", "kind": "quantiles", "epsilon": 1.0, "range": [0, 2000], "buckets": 128,
                  "unit": "ms"})


def _values(n: int, seed: int) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).lognormal(math.log(300), 0.6, n), 0, 2000)


def _estimate(values: np.ndarray, seed: int):
    buckets = np.array([bucket_of(SPEC.params, float(v)) for v in values])
    source = simulate_aggregate(SPEC.params, buckets, np.random.default_rng(seed), SPEC.fingerprint)
    return QUANTILES_ESTIMATES.estimate(SPEC, source)


def test_registered_and_its_json_is_the_schemas():
    assert estimate_kind(SPEC) is QUANTILES_ESTIMATES
    result = finite_json(_estimate(_values(5000, 1), 2).to_json())
    report = render_json(ReportData(result, SPEC.to_dict(), None, None))
    import json

    jsonschema.Draft202012Validator(report_schema()).validate(json.loads(report))
    assert estimate_kind(result) is QUANTILES_ESTIMATES  # an estimate names its kind as a spec does


def test_the_curators_interval_is_laplace_at_epsilon_over_k():
    result = _estimate(_values(4000, 3), 4).to_json()
    central = result["central_dp"]
    k = len(result["quantiles"])
    assert central["mechanism"] == "Laplace" and central["epsilon_each"] == SPEC.epsilon / k
    expected = (1 / 4000) / (SPEC.epsilon / k) * math.log(1 / (1 - 0.95))
    for row, local in zip(central["quantiles"], result["quantiles"]):
        assert math.isclose(row["rank_halfwidth"], expected)
        assert row["ci_low"] <= local["estimate"] <= row["ci_high"]


def test_the_mean_mechanisms_standard_error_matches_its_simulated_spread():
    "The predicted SE of a hybrid campaign's mean over the same values, against 200 simulated campaigns"
    values = _values(3000, 5)
    predicted = _estimate(values, 6).to_json()["mean_mechanism"]
    local = load_spec({"name": "load_ms", "mechanism": predicted["mechanism"], "epsilon": 1.0, "range": [0, 2000]})
    rng = np.random.default_rng(7)
    population = _values(200 * 3000, 8).reshape(200, 3000)  # fresh samples: the SE is for the population
    means = [estimate(local, simulate(local, sample, rng)).mean for sample in population]
    spread = float(np.std(means, ddof=1))
    # the SD of 200 draws has relative standard error about 1 / sqrt(2 * 199); bucket midpoints move the predicted
    # sampling part by less than a bucket's width
    assert abs(spread - predicted["std_error"]) <= k_sigma() * predicted["std_error"] / math.sqrt(2 * 199)
