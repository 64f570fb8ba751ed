"""The LDP/central ratio and the three trust models against closed forms, under one relation: replace-one (n public).

A histogram with n public has L1 sensitivity 2 and L2 sensitivity sqrt(2) (counts; over n on the fraction scale),
a single count 1, a mean over a range of width w: w/n.  The headline ratio compares privacy noise with privacy
noise (target "reported"); the total ratio adds the sampling variance on both sides."""

import math

import numpy as np
import pytest

from client_sdk import load_spec, mechanism_from_spec
from estimators import estimate
from estimators.central import analytic_gaussian_sigma, ratio_text
from estimators.distributed import calibrate, estimate_distributed, trust_models
from estimators.planner import plan
from estimators.simulate import simulate

N = 10_000


def grr_estimate(delta=None):
    "The issue's example: GRR, epsilon 4, d = 8, n = 1e4"
    spec = load_spec({"name": "t", "mechanism": "grr", "epsilon": 4.0, "domain": list(range(8)),
                      **({"delta": delta} if delta else {})})
    rng = np.random.default_rng(22)
    truth = rng.choice(8, size=N, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05, 0.0])
    return spec, estimate(spec, simulate(spec, truth, rng)).to_dict()


def test_the_frequency_ratio_is_privacy_noise_against_replace_one_laplace():
    spec, result = grr_estimate()
    m = mechanism_from_spec(spec)
    p, q = m.p_star, m.q_star
    f = np.clip([row["estimate"] for row in result["values"]], 0, 1)
    noise = np.sqrt((f * p * (1 - p) + (1 - f) * q * (1 - q)) / N) / (p - q)  # fixed-data (Wang et al. 2017)
    population = np.sqrt((q + f * (p - q)) * (1 - q - f * (p - q)) / N) / (p - q)
    central = math.sqrt(2) * 2 / (N * 4.0)  # Laplace, L1 = 2 counts, on the fraction: 2/n
    block = result["central_dp"]
    assert block["relation"] == "replace-one" and block["mechanism"] == "Laplace"
    assert block["sensitivity"]["l1"] == pytest.approx(2 / N) and block["sensitivity"]["l2"] == pytest.approx(
        math.sqrt(2) / N)
    assert block["std_error"] == pytest.approx(central)
    # the root mean square over the values of the fixed-data noise, at the true frequencies (they sum to 1)
    rms = math.sqrt((p * (1 - p) + 7 * q * (1 - q)) / (8 * N)) / (p - q)
    assert block["ldp_to_central_ratio"] == pytest.approx(rms / central)
    assert math.sqrt(np.mean(noise**2)) == pytest.approx(rms, rel=0.01)  # the plug-in at the estimates, near it
    assert 15 < block["ldp_to_central_ratio"] < 30  # the 26.1 at its frequencies (95.7 before)
    total = block["total"]
    central_total = math.sqrt(central**2 + np.mean(f * (1 - f) / N))
    assert total["ratio"] == pytest.approx(math.sqrt(np.mean(population**2)) / central_total)
    assert 1 < total["ratio"] < 2  # sampling dominates both sides: about 1.2, not sqrt(n)
    for row, reported in zip(result["values"], noise):
        assert row["std_error_reported"] == pytest.approx(reported)
    assert result["target"] == "population"


def test_with_a_delta_the_central_mechanism_is_the_gaussian_at_l2_sqrt2():
    _, result = grr_estimate(delta=1e-6)
    block = result["central_dp"]
    sigma = analytic_gaussian_sigma(math.sqrt(2) / N, 4.0, 1e-6)
    assert block["std_error"] == pytest.approx(sigma) and block["mechanism"].startswith("Gaussian")
    assert block["laplace"]["std_error"] == pytest.approx(math.sqrt(2) * 2 / (N * 4.0))
    assert block["ldp_to_central_ratio"] == pytest.approx(block["ldp_std_error"] / sigma)


@pytest.mark.parametrize("mechanism", ["laplace", "piecewise", "hybrid"])
def test_the_mean_ratio_is_privacy_noise_against_replace_one(mechanism):
    spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 10]})
    rng = np.random.default_rng(7)
    values = rng.uniform(0, 10, size=N)
    result = estimate(spec, simulate(spec, values, rng)).to_dict()
    device = mechanism_from_spec(spec)
    t = 2 * values / 10 - 1
    noise = math.sqrt(np.mean([device.variance(x) for x in t[:2000]]) / N) * 5  # mean over users of v(t)
    central = math.sqrt(2) * 10 / N / 1.0  # Laplace, sensitivity w/n
    block = result["central_dp"]
    assert block["relation"] == "replace-one" and block["std_error"] == pytest.approx(central)
    # the noise-only SE is estimated from the reports: within a few per cent of the closed form at n = 1e4
    assert block["ldp_std_error"] == pytest.approx(noise, rel=0.06)
    assert result["std_error_reported"] < result["std_error"]
    assert block["ldp_to_central_ratio"] == pytest.approx(result["std_error_reported"] / central)


def test_the_planner_ratio_uses_replace_one():
    """OUE against central Laplace on one fraction of a histogram (L1 = 2): the noise RMS over the d values,
    sqrt([1/4 + (d-1) q(1-q)] / (d n)) / (1/2 - q), q = 1/(e^eps + 1), over sqrt(2) 2/(eps n); at f = 0 alone it
    would be sqrt(n) eps sqrt(2e)/(2(e-1))"""
    n, d = 1_000_000, 1024
    for epsilon in (1.0, 4.0):
        q = 1 / (math.exp(epsilon) + 1)
        noise = math.sqrt((0.25 + (d - 1) * q * (1 - q)) / (d * n)) / (0.5 - q)
        expected = noise / (math.sqrt(2) * 2 / (epsilon * n))
        assert plan("oue", epsilon, n, domain_size=d).ldp_to_central_ratio == pytest.approx(expected, rel=2e-3)


@pytest.mark.parametrize("mechanism", ["grr", "sue", "oue", "olh", "hadamard"])
@pytest.mark.parametrize("population", ["uniform", "one-hot", "skewed"])
def test_the_planner_and_the_estimate_give_one_ratio_for_one_cell(mechanism, population):
    "The issue's cell (epsilon 4, n 1e4, d 8): the planner's ratio is the estimate's, whatever the distribution"
    d = 8
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 4.0, "domain": list(range(d))})
    rng = np.random.default_rng(5)
    weights = {"uniform": np.full(d, 1 / d), "one-hot": np.eye(d)[0],
               "skewed": np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05, 0.0])}[population]
    truth = rng.choice(d, size=N, p=weights)
    block = estimate(spec, simulate(spec, truth, rng)).to_dict()["central_dp"]
    planned = plan(mechanism, 4.0, N, domain_size=d)
    assert block["ldp_to_central_ratio"] == pytest.approx(planned.ldp_to_central_ratio, rel=1e-12)
    assert block["ldp_std_error"] == pytest.approx(planned.noise_std_error, rel=1e-12)
    if mechanism == "grr":  # the figure: 26.5, not the 20.5 of a value at f = 0
        assert ratio_text(planned.ldp_to_central_ratio) == "26.5"


@pytest.mark.parametrize("kind", ["histogram", "count", "sum"])
@pytest.mark.parametrize("mode", ["gaussian", "laplace"])
def test_trust_models_under_one_relation(kind, mode):
    n, epsilon, delta, d = 50_000, 1.0, 1e-6, 16
    value_range = (0.0, 100.0) if kind == "sum" else None
    models = trust_models(kind, n=n, epsilon=epsilon, delta=delta, distributed_std_error=1e-4,
                          domain_size=d if kind == "histogram" else 2, value_range=value_range, noise_mode=mode)
    assert models["relation"] == "replace-one" and models["target"] == "reported"
    e = math.exp(epsilon)
    if kind == "sum":
        l1 = l2 = 100.0 / n
        worst = max(e_var for e_var in (  # the mean mechanisms' worst cases on [-1, 1], scaled by (w/2)^2
            mechanism_from_spec(load_spec({"name": "x", "mechanism": name, "epsilon": epsilon,
                                           "range": [0, 100]})).worst_case_variance()
            for name in ("hybrid",)))
        local = math.sqrt(worst * 50.0**2 / n)
    else:
        l1, l2 = (2 / n, math.sqrt(2) / n) if kind == "histogram" else (1 / n, 1 / n)
        size = d if kind == "histogram" else 2
        # fixed-data variance at f = 0: GRR (d-2+e)/(e-1)^2, OUE/OLH 4e/(e-1)^2 (quantized p*, q* move it a little)
        local = math.sqrt(min((size - 2 + e) / (e - 1) ** 2, 4 * e / (e - 1) ** 2) / n)
    assert models["local"]["std_error"] == pytest.approx(local, rel=1e-3)
    central = models["central"]
    if mode == "laplace":
        assert central["std_error"] == pytest.approx(math.sqrt(2) * l1 / epsilon) and central["delta"] == 0
    else:
        assert central["std_error"] == pytest.approx(analytic_gaussian_sigma(l2, epsilon, delta))
        assert central["delta"] == delta
    assert central["epsilon"] == epsilon and models["local"]["epsilon"] == epsilon


def test_the_estimate_and_its_trust_models_state_one_central_figure():
    noise = calibrate("gaussian", epsilon=1.0, delta=1e-6, sensitivity=1)
    result = estimate_distributed([500] * 8, kind="histogram", n=4000, noise=noise, epsilon=1.0,
                                  delta=1e-6).to_dict()
    assert result["central_dp"]["std_error"] == result["trust_models"]["central"]["std_error"]
    assert result["central_dp"]["mechanism"] == result["trust_models"]["central"]["mechanism"]
    assert result["central_dp"]["relation"] == result["trust_models"]["relation"] == "replace-one"


@pytest.mark.parametrize("mechanism", ["laplace", "hybrid"])
def test_the_planner_and_the_estimate_give_one_mean_ratio_where_the_noise_is_the_same_for_every_value(mechanism):
    """A mean's ratio is the estimate's noise at its data over central's; the planner's, the worst case over the
    range.  Where the noise does not depend on the value (Laplace; Hybrid at eps 1) the two are one figure"""
    spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 10]})
    device = mechanism_from_spec(spec)
    assert device.variance(0.0) == pytest.approx(device.variance(1.0), rel=1e-8)
    rng = np.random.default_rng(3)
    block = estimate(spec, simulate(spec, rng.uniform(0, 10, size=N), rng)).to_dict()["central_dp"]
    planned = plan(mechanism, 1.0, N, value_range=(0.0, 10.0))
    assert block["ldp_to_central_ratio"] == pytest.approx(planned.ldp_to_central_ratio, rel=1e-6)


@pytest.mark.parametrize("kind", ["histogram", "sum"])
def test_the_shuffled_row_buys_the_same_central_guarantee_at_a_larger_local_epsilon(kind):
    "One batch of n shuffled epsilon0-LDP reports is (epsilon, delta)-DP; the row's error is the local one at epsilon0"
    from estimators.shuffle import amplified_epsilon

    n, epsilon, delta, d = 50_000, 1.0, 1e-6, 16
    value_range = (0.0, 100.0) if kind == "sum" else None
    models = trust_models(kind, n=n, epsilon=epsilon, delta=delta, distributed_std_error=1e-4,
                          domain_size=d if kind == "histogram" else None, value_range=value_range)
    shuffled = models["shuffled"]
    epsilon0 = shuffled["epsilon0"]
    assert shuffled["batch_size"] == n and (shuffled["epsilon"], shuffled["delta"]) == (epsilon, delta)
    assert amplified_epsilon(epsilon0, n, delta) <= epsilon < amplified_epsilon(epsilon0 * (1 + 1e-5), n, delta)
    at_epsilon0 = trust_models(kind, n=n, epsilon=epsilon0, delta=delta, distributed_std_error=1e-4,
                               domain_size=d if kind == "histogram" else None, value_range=value_range)["local"]
    assert shuffled["std_error"] == pytest.approx(at_epsilon0["std_error"], rel=1e-12)
    assert models["central"]["std_error"] < shuffled["std_error"] < models["local"]["std_error"] / 2
    assert "do not collude" in shuffled["assumption"] and "Feldman" in shuffled["bound"]
    pure = trust_models(kind, n=n, epsilon=epsilon, delta=None, distributed_std_error=1e-4,
                        domain_size=d if kind == "histogram" else None, value_range=value_range)["shuffled"]
    assert pure["delta"] == 1e-6  # shuffling gives no pure epsilon-DP: the row states its delta
