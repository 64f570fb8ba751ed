"""The ones test (estimators.ones_test, a unary spec's ``max_ones``): its false-rejection rate for honest reports,
the accepted reports' probabilities, fake all-ones reports refused and the estimate back near the truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from client_sdk import load_spec
from client_sdk.errors import PayloadError, SpecError
from estimators import Aggregate, aggregate
from estimators.flags import IMPOSSIBLE_FREQUENCIES
from estimators.mechanisms import mechanism_for
from estimators.mechanisms.categorical import ones_per_row
from estimators.ones_test import accepted_probabilities, false_rejection_rate, max_ones_for, ones_distribution
from estimators.window import window_estimate

from ..tolerances import k_sigma

D = 16
SHARE = np.array([0.3, 0.2, 0.15, 0.1] + [0.25 / 12] * 12)


def unary_spec(mechanism: str = "oue", d: int = D, max_ones: int | None = None, epsilon: float = 1.0):
    spec = {"name": "apps", "mechanism": mechanism, "epsilon": epsilon, "domain": [f"v{i}" for i in range(d)]}
    return load_spec(spec if max_ones is None else {**spec, "max_ones": max_ones})


def probabilities(spec) -> tuple[float, float]:
    device = mechanism_for(spec).device
    return device.p_star, device.q_star


@pytest.mark.parametrize("mechanism, d, epsilon", [("oue", 16, 1.0), ("sue", 40, 2.0), ("oue", 3, 0.5)])
def test_the_ones_distribution_is_bernoulli_plus_binomial(mechanism, d, epsilon):
    p, q = probabilities(unary_spec(mechanism, d, epsilon=epsilon))
    expected = np.convolve([1 - p, p], stats.binom.pmf(np.arange(d), d - 1, q))
    assert np.allclose(ones_distribution(d, p, q), expected, rtol=1e-9, atol=1e-300)
    for k in range(d + 1):
        assert math.isclose(false_rejection_rate(d, p, q, k), float(expected[k + 1:].sum()), rel_tol=1e-9,
                            abs_tol=1e-15)


@pytest.mark.parametrize("mechanism", ["sue", "oue"])
def test_honest_reports_are_refused_at_the_stated_rate(mechanism):
    "The share of simulated honest reports over max_ones, and of those check_payload refuses, is the stated rate"
    plain = unary_spec(mechanism)
    p, q = probabilities(plain)
    max_ones = max_ones_for(D, p, q, 0.01)  # a rate a test can measure
    rate = false_rejection_rate(D, p, q, max_ones)
    assert 0.001 < rate <= 0.01
    rng = np.random.default_rng(21)
    n = 200_000
    values = rng.choice(D, size=n, p=SHARE)
    rows = mechanism_for(plain).simulate(values, rng)["bits"]
    refused = int((ones_per_row(rows) > max_ones).sum())
    k = k_sigma(3)
    assert abs(refused / n - rate) <= k * math.sqrt(rate * (1 - rate) / n)
    defended = mechanism_for(unary_spec(mechanism, max_ones=max_ones))
    sample = [row.tobytes().hex() for row in rows[:20_000]]
    refused_by_check = sum(1 for payload in sample if _refused(defended, payload))
    assert refused_by_check == int((ones_per_row(rows[:20_000]) > max_ones).sum())
    kept = defended.simulate(values, np.random.default_rng(22)).n  # the simulator drops what the collector refuses
    assert abs((n - kept) / n - rate) <= k * math.sqrt(rate * (1 - rate) / n)


def _refused(server, payload: str) -> bool:
    try:
        server.check_payload(payload)
    except PayloadError:
        return True
    return False


def test_accepted_reports_set_bits_with_the_stated_probabilities():
    spec = unary_spec(d=3, max_ones=2)  # three values: an honest report sets all three bits 3.6% of the time
    p, q = probabilities(spec)
    p_accepted, q_accepted = accepted_probabilities(3, p, q, 2)
    rng = np.random.default_rng(23)
    batch = mechanism_for(spec).simulate(np.zeros(300_000, dtype=np.int64), rng)  # every true value is v0
    bits = np.unpackbits(batch["bits"], axis=1)[:, :3]
    assert int(bits.sum(axis=1).max()) <= 2
    k = k_sigma(2)
    n = batch.n
    assert abs(bits[:, 0].mean() - p_accepted) <= k * math.sqrt(p_accepted * (1 - p_accepted) / n)
    assert abs(bits[:, 1:].mean() - q_accepted) <= k * math.sqrt(q_accepted * (1 - q_accepted) / (2 * n))


def test_fake_all_ones_reports_are_refused_and_the_estimate_returns_near_the_truth():
    plain = unary_spec()
    p, q = probabilities(plain)
    max_ones = max_ones_for(D, p, q, 1e-4)
    defended = unary_spec(max_ones=max_ones)
    fake = "ffff"  # every one of the 16 bits set: lifts every value at once
    rng = np.random.default_rng(24)
    values = rng.choice(D, size=100_000, p=SHARE)
    undefended = aggregate(plain, mechanism_for(plain).simulate(values, rng)).merge(aggregate(plain, [fake] * 5_000))
    poisoned = window_estimate(plain, undefended)
    assert [flag["code"] for flag in poisoned["flags"]] == [IMPOSSIBLE_FREQUENCIES]
    with pytest.raises(PayloadError, match=f"sets 16 bits; this campaign takes at most {max_ones}"):
        aggregate(defended, [fake])
    server = mechanism_for(defended)
    kept = [payload for payload in [fake] * 5_000 if not _refused(server, payload)]  # what the collector stores
    assert kept == []
    honest = aggregate(defended, server.simulate(values, np.random.default_rng(24)))
    total = honest.merge(aggregate(defended, kept)) if kept else honest
    result = window_estimate(defended, total)
    assert result["flags"] == [] and result["defence"]["max_ones"] == max_ones
    k = k_sigma(D)
    for row, truth in zip(result["values"], np.bincount(values, minlength=D) / len(values)):
        assert abs(row["estimate"] - truth) <= k * row["std_error"], row


def test_the_accepted_probabilities_remove_the_bias_of_refusing_honest_reports():
    "At d = 3 the test refuses 3.6% of honest reports; de-biased with p* and q* the estimate would be off"
    spec = unary_spec(d=3, max_ones=2)
    rng = np.random.default_rng(25)
    share = np.array([0.7, 0.2, 0.1])
    values = rng.choice(3, size=400_000, p=share)
    total = aggregate(spec, mechanism_for(spec).simulate(values, rng))
    result = window_estimate(spec, total)
    truth = np.bincount(values, minlength=3) / len(values)
    k = k_sigma(6)
    p, q = probabilities(spec)
    naive = (np.asarray(total.counts, dtype=float) / total.n - q) / (p - q)
    for row, true in zip(result["values"], truth):
        assert abs(row["estimate"] - true) <= k * row["std_error"]
    assert np.max(np.abs(naive - truth) / [row["std_error"] for row in result["values"]]) > k


def test_max_ones_is_part_of_the_fingerprint_and_only_for_unary_encodings():
    assert unary_spec(max_ones=8).fingerprint != unary_spec().fingerprint
    assert load_spec(unary_spec(max_ones=8).to_dict()).max_ones == 8
    with pytest.raises(SpecError, match="max_ones"):
        unary_spec("olh", max_ones=8)
    with pytest.raises(SpecError, match="max_ones"):
        unary_spec(max_ones=D + 1)
    with pytest.raises(SpecError, match="max_ones"):
        load_spec({"name": "t", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 1], "max_ones": 1})
    assert Aggregate.empty(unary_spec(max_ones=8)).fingerprint == unary_spec(max_ones=8).fingerprint


def test_the_reports_state_the_ones_test():
    import jsonschema

    from estimators.report import ReportData, json_report, render_table
    from estimators.report.json_report import report_schema

    spec = unary_spec(max_ones=10)
    result = window_estimate(spec, aggregate(spec, mechanism_for(spec).simulate(np.zeros(500, dtype=np.int64),
                                                                                np.random.default_rng(26))))
    data = ReportData(result, spec.to_dict())
    assert data.estimate.defence is not None and data.estimate.defence.max_ones == 10
    assert "ones test: reports setting more than 10 bits were refused at ingestion" in render_table(data)
    jsonschema.Draft202012Validator(report_schema()).validate(json_report(data))
