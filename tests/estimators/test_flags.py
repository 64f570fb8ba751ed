"""Estimate flags (estimators.flags): impossible frequencies or means from planted fake reports, too few reports
for a useful answer, in the estimate's JSON, its typed form and every report format."""

from __future__ import annotations

import json
import math

import jsonschema
import numpy as np
import pytest

from client_sdk import load_spec
from estimators import aggregate
from estimators.estimates import Estimate
from estimators.flags import FLAG_CODES, IMPOSSIBLE_FREQUENCIES, IMPOSSIBLE_MEAN, TOO_FEW_REPORTS, estimate_flags
from estimators.mechanisms import mechanism_for
from estimators.planner import n_for_halfwidth
from estimators.report import ReportData, render_html, render_json, render_markdown, render_table
from estimators.report.json_report import report_schema
from estimators.window import window_estimate

from ..tolerances import k_sigma

BROWSERS = ["chrome", "firefox", "safari"]
FAKE_ONES = {"sue": "e0", "oue": "e0"}  # three values: bits 1110 0000


def browser_spec(mechanism: str = "oue", domain: list | None = None):
    return load_spec({"name": "browser", "mechanism": mechanism, "epsilon": 1.0, "domain": domain or BROWSERS})


def honest(spec, n: int, seed: int, share: np.ndarray | None = None):
    rng = np.random.default_rng(seed)
    d = spec.domain_size
    values = rng.choice(d, size=n, p=share if share is not None else np.full(d, 1 / d))
    return aggregate(spec, mechanism_for(spec).simulate(values, rng))


def codes(result: dict) -> list[str]:
    return [flag["code"] for flag in result["flags"]]


def test_all_ones_reports_are_flagged_impossible_in_the_json_and_the_typed_estimate():
    spec = browser_spec()
    result = window_estimate(spec, aggregate(spec, [FAKE_ONES["oue"]] * 40_000))
    assert all(row["estimate"] > 3 for row in result["values"])  # the 3.2 each, summing to 9.5
    assert codes(result) == [IMPOSSIBLE_FREQUENCIES]
    flag = Estimate.from_json(result).flags[0]
    assert flag.code == IMPOSSIBLE_FREQUENCIES and "chrome, firefox, safari are above 1" in flag.message
    assert "sum to 9.49" in flag.message


def test_fake_reports_mixed_into_honest_ones_are_flagged_and_honest_ones_alone_are_not():
    spec = browser_spec(domain=[f"v{i}" for i in range(8)])
    clean = honest(spec, 20_000, seed=3)
    assert codes(window_estimate(spec, clean)) == []
    fakes = aggregate(spec, ["ff"] * 500)  # 2.4% fake reports, all eight bits set
    assert codes(window_estimate(spec, clean.merge(fakes))) == [IMPOSSIBLE_FREQUENCIES]


def test_grr_sums_to_one_whatever_is_sent_and_is_not_flagged_for_the_sum():
    spec = browser_spec("grr")
    result = window_estimate(spec, honest(spec, 5_000, seed=4).merge(aggregate(spec, [0] * 2_000)))
    assert math.isclose(sum(row["estimate"] for row in result["values"]), 1.0)
    assert codes(result) == []  # one fake GRR report lifts one value: 0.29 + ... is below 1


@pytest.mark.parametrize("mechanism", ["grr", "sue", "oue", "olh", "hadamard"])
def test_honest_sum_spread_is_within_the_standard_error_the_flag_uses(mechanism):
    """The flag's false-alarm bound rests on SE_sum = sqrt(sum SE^2) being at least the real spread of the sum of
    the frequencies over honest populations: the sample sd of R sums is at most the mean SE_sum, k SEs of a
    sample sd allowed (sd(s) ~ sigma / sqrt(2 (R - 1)))"""
    spec = browser_spec(mechanism, domain=[f"v{i}" for i in range(8)])
    share = np.array([0.4, 0.2, 0.15, 0.1, 0.08, 0.04, 0.03, 0.0])
    repetitions = 150
    sums, errors = [], []
    for seed in range(repetitions):
        rows = window_estimate(spec, honest(spec, 2_000, seed=100 + seed, share=share))["values"]
        sums.append(sum(row["estimate"] for row in rows))
        errors.append(math.sqrt(sum(row["std_error"] ** 2 for row in rows)))
    stated = float(np.mean(errors))
    k = k_sigma(10)  # two comparisons for each of five mechanisms
    assert float(np.std(sums, ddof=1)) <= stated * (1 + k / math.sqrt(2 * (repetitions - 1)))
    assert abs(float(np.mean(sums)) - 1) <= k * stated / math.sqrt(repetitions)


def test_fake_duchi_reports_give_an_impossible_mean():
    spec = load_spec({"name": "load", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 10]})
    result = window_estimate(spec, aggregate(spec, [1] * 1_000))  # every report +C
    assert result["mean"] > 10 and codes(result) == [IMPOSSIBLE_MEAN]
    rng = np.random.default_rng(5)
    near_top = aggregate(spec, mechanism_for(spec).simulate(np.full(1_000, 10.0), rng))
    assert codes(window_estimate(spec, near_top)) == []  # every honest value at the top: still possible


@pytest.mark.parametrize("spec_json, options", [
    ({"name": "b", "mechanism": "oue", "epsilon": 1.0, "domain": BROWSERS}, {"domain_size": 3}),
    ({"name": "g", "mechanism": "grr", "epsilon": 0.5, "domain": list(range(20))}, {"domain_size": 20}),
    ({"name": "m", "mechanism": "piecewise", "epsilon": 1.0, "range": [0, 10]}, {"value_range": (0, 10)}),
])
def test_too_few_reports_below_the_n_the_planner_needs_for_an_interval_inside_the_range(spec_json, options):
    spec = load_spec(spec_json)
    useful = 0.5 if "domain_size" in options else 5.0
    needed = n_for_halfwidth(spec.mechanism, spec.epsilon, useful, **options)
    base = {"n": needed, "confidence": 0.95, "values": [], "mean": None}
    assert TOO_FEW_REPORTS not in [flag.code for flag in estimate_flags(base, spec)]
    flags = estimate_flags({**base, "n": needed - 1}, spec)
    assert [flag.code for flag in flags] == [TOO_FEW_REPORTS]
    assert f"about n = {needed:,} reports" in flags[0].message


def test_one_report_says_it_is_too_few_instead_of_printing_a_bare_number():
    spec = browser_spec()
    result = window_estimate(spec, honest(spec, 1, seed=6))
    assert TOO_FEW_REPORTS in codes(result)
    assert "at n = 1 the planner expects" in result["flags"][-1]["message"]


def test_every_report_format_prints_the_flags():
    spec = browser_spec()
    result = window_estimate(spec, aggregate(spec, [FAKE_ONES["oue"]] * 400))
    data = ReportData(result, spec.to_dict())
    assert "WARNING: impossible frequencies" in render_table(data)
    assert "> **WARNING: impossible frequencies" in render_markdown(data, image_prefix=None).text
    html = render_html(data, simulate_points=False)
    assert '<p class="warning" role="alert">WARNING: impossible frequencies' in html
    assert '"code": "impossible-frequencies"' in render_json(data)
    jsonschema.Draft202012Validator(report_schema()).validate(json.loads(render_json(data)))


def test_a_clean_estimate_prints_no_warning():
    spec = browser_spec()
    data = ReportData(window_estimate(spec, honest(spec, 5_000, seed=7)), spec.to_dict())
    assert data.estimate.flags == () and "WARNING" not in render_table(data)


def test_the_schema_names_every_flag_code():
    flags = report_schema()["properties"]["flags"]
    assert tuple(flags["items"]["properties"]["code"]["enum"]) == FLAG_CODES
