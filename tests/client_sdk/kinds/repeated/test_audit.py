"""Privacy audits of one repeated-collection report: exactly from the quantized thresholds, and empirically from
the real device function (a fresh device per draw: one report is one memoized answer, plus gamma's flips)."""

import json
from fractions import Fraction

import pytest

from client_sdk.kinds.repeated import make_report, parse_params
from client_sdk.randomness import PROB_DENOMINATOR, DeterministicRandom
from tests.audit import audit, exp_bounds

MEAN = {"mode": "mean", "range": [0, 1], "rounding_points": 3}
HISTOGRAM = {"mode": "histogram", "range": [0, 4], "buckets": 4, "bits": 2}


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0, 8.0])
def test_the_worst_case_ratio_of_one_answer_is_at_most_e_eps_exactly(epsilon):
    mean = parse_params({**MEAN, "rounding_points": 17, "epsilon": epsilon})
    rates = [Fraction(*mean.point_threshold(j)) for j in range(17)]
    ratio = max(max(a / b, (1 - a) / (1 - b)) for a in rates for b in rates)
    histogram = parse_params({**HISTOGRAM, "epsilon": epsilon})
    p, q = Fraction(histogram.keep_threshold, PROB_DENOMINATOR), Fraction(histogram.flip_threshold, PROB_DENOMINATOR)
    low, _ = exp_bounds(epsilon)
    assert ratio <= low and (p / q) ** 2 <= low  # two bits change between two buckets' answers


def reports(data, epsilon, value, draws, seed):
    params, rng = parse_params({**data, "epsilon": epsilon}), DeterministicRandom(seed)
    return [json.dumps(make_report(rng, params, {}, value)[0], sort_keys=True) for _ in range(draws)]


@pytest.mark.parametrize("data", [MEAN, {**MEAN, "gamma": 0.2}, HISTOGRAM])
def test_one_report_passes_the_empirical_audit(data):
    values = (0.0, 0.4, 1.0) if data["mode"] == "mean" else (0.5, 1.5, 3.5)
    samples = {value: reports(data, 1.0, value, 6000, seed) for seed, value in enumerate(values)}
    assert audit(samples, 1.0) == []


def test_the_audit_catches_a_report_at_twice_the_epsilon():
    samples = {value: reports(MEAN, 2.0, value, 6000, seed) for seed, value in enumerate((0.0, 1.0))}
    assert audit(samples, 1.0)
