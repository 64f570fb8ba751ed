"""The quantiles planner in value units: at the n it gives for p95 within +-x, the real estimator's p95 interval
has half-width <= x in at least the stated share of simulated runs (and at half that n, in clearly fewer), and a
+-x no n up to the planner's limit reaches is refused; the CLI's ``plan --spec`` line prints the same n."""

import json
import math
import subprocess

import numpy as np
import pytest

from client_sdk.kinds.quantiles import parse_params
from estimators.kinds.quantiles import estimate_quantiles, simulate_aggregate
from estimators.kinds.quantiles.planner import assumed_shares, reports_for_quantile_value
from tests.collector.helpers import ldp_command
from tests.tolerances import k_sigma

SPEC = {"name": "load", "kind": "quantiles", "epsilon": 2.0, "range": [0, 2000], "buckets": 64, "branching": 4,
        "unit": "ms"}
ASSUME = "lognormal:5.3,0.9"
TARGET, SHARE, RUNS = 150.0, 0.9, 100


def params_of():
    return parse_params(SPEC, SPEC["epsilon"])


def share_within(params, shares, n, rng):
    "The share of RUNS estimates whose p95 interval has half-width <= TARGET"
    fits = 0
    for _ in range(RUNS):
        aggregate = simulate_aggregate(params, rng.choice(params.buckets, size=n, p=shares), rng)
        row = estimate_quantiles(params, aggregate, band_draws=10, quantiles=(0.95,)).quantiles[0]
        fits += (row.ci_high - row.ci_low) / 2 <= TARGET
    return fits / RUNS


def test_at_the_planned_n_p95_is_within_the_target_in_the_stated_share_of_runs():
    params = params_of()
    shares = assumed_shares(params, ASSUME)
    n = reports_for_quantile_value(params, shares, TARGET, 0.95, share=SHARE)
    rng = np.random.default_rng(34)
    slack = k_sigma(2) * math.sqrt(SHARE * (1 - SHARE) / RUNS)
    assert share_within(params, shares, n, rng) >= SHARE - slack  # measured 0.88 (n = 104,365)
    assert share_within(params, shares, n // 2, rng) < SHARE - slack  # not over-generous: measured 0.44


def test_a_target_no_n_reaches_is_refused():
    "The interval is linear within a bucket (31.25 wide here), so +-10 is reachable; +-0.001 needs over 1e12"
    params = params_of()
    shares = assumed_shares(params, ASSUME)
    assert reports_for_quantile_value(params, shares, 10.0, 0.95) < 10**9
    with pytest.raises(ValueError, match="needs more than"):
        reports_for_quantile_value(params, shares, 0.001, 0.95)


def test_the_assumed_distribution_is_validated_and_a_pilots_buckets_are_read():
    params = params_of()
    with pytest.raises(ValueError, match="lognormal:MU,SIGMA"):
        assumed_shares(params, "lognormal:5")
    uniform = assumed_shares(params, "uniform")
    assert np.allclose(uniform, 1 / 64)
    assert np.allclose(assumed_shares(params, {"buckets": [-0.01] + [1.0] * 63}), [0.0] + [1 / 63] * 63)


def test_the_plan_cli_answers_for_a_spec(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    command = ["plan", "--spec", str(spec), "--n", "100000", "--quantile", "0.95", "--assume", ASSUME,
               "--target-halfwidth", str(TARGET)]
    done = subprocess.run(ldp_command(*command), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    params = params_of()
    n = reports_for_quantile_value(params, assumed_shares(params, ASSUME), TARGET, 0.95, share=SHARE)
    line = done.stdout.splitlines()[-1].split()
    assert line[0] == "p95" and line[-1] == f"{n:,}", done.stdout
    assert "n for +-150" in done.stdout and "90% of runs" in done.stdout
    pilot = tmp_path / "pilot.json"
    pilot.write_text(json.dumps({"buckets": assumed_shares(params, ASSUME).tolist()}))
    from_pilot = subprocess.run(ldp_command(*command[:-4], "--assume", str(pilot), "--target-halfwidth", "150",
                                            "--format", "json"), capture_output=True, text=True, check=False)
    assert from_pilot.returncode == 0, from_pilot.stderr
    assert json.loads(from_pilot.stdout)["rows"][0]["n for +-150"] == n
    refused = subprocess.run(ldp_command(*command, "--epsilon", "1"), capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "--spec gives the epsilon" in refused.stderr
