import math

import pytest

from estimators.central import analytic_gaussian_sigma, central_block, laplace_baseline, mean_sensitivity
from estimators.planner import compare_mechanisms, expected_std_error, n_for_halfwidth, plan
from estimators.postprocess import base_cut, norm_sub


def test_laplace_baseline_of_a_count():
    "Dwork et al. 2006: count variance 2/eps^2, 95% CI +- ln(20)/eps"
    baseline = laplace_baseline(1.0, 0.5, 0.95)
    assert math.isclose(baseline["std_error"] ** 2, 2 / 0.25)
    assert math.isclose(baseline["ci_halfwidth"], math.log(20) / 0.5)


@pytest.mark.parametrize("epsilon, delta", [(0.5, 1e-6), (1.0, 1e-6), (4.0, 1e-5)])
def test_analytic_gaussian_is_tight_and_below_the_classical_bound(epsilon, delta):
    from scipy.stats import norm

    sigma = analytic_gaussian_sigma(1.0, epsilon, delta)
    excess = norm.cdf(0.5 / sigma - epsilon * sigma) - math.exp(epsilon) * norm.cdf(-0.5 / sigma - epsilon * sigma)
    assert abs(excess - delta) < 1e-3 * delta
    if epsilon < 1:
        assert sigma <= math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def test_reference_gaussian_count_figure():
    "Dwork & Roth 2014, Theorem A.1: at eps=1, delta=1e-6 a count's central Gaussian sd is about 5.3 (classical bound)"
    classical = math.sqrt(2 * math.log(1.25 / 1e-6)) / 1.0
    assert abs(classical - 5.3) < 0.05
    assert analytic_gaussian_sigma(1.0, 1.0, 1e-6) < classical


def test_local_penalty_matches_reference():
    "OUE vs central Laplace on one frequency of a histogram, replace-one (L1 = 2): 0.68 sqrt(n) at eps=1, 0.39 at 4"
    for epsilon, factor in [(1.0, 0.68), (4.0, 0.39)]:
        p = plan("oue", epsilon, 1_000_000, domain_size=1024)
        assert abs(p.ldp_to_central_ratio / 1000 - factor) < 0.01
    assert abs(expected_std_error("oue", 1.0, 1_000_000, domain_size=1024) - 1.9e-3) < 0.05e-3


def test_planner_orders_mechanisms_and_inverts():
    plans = compare_mechanisms(1.0, 10_000, domain_size=1024)
    assert plans[0].mechanism in ("oue", "olh") and plans[-1].mechanism == "grr"
    n = n_for_halfwidth("oue", 1.0, 0.01, domain_size=1024)
    assert plan("oue", 1.0, n, domain_size=1024).ci_halfwidth <= 0.01
    assert plan("oue", 1.0, n - 1, domain_size=1024).ci_halfwidth > 0.01
    numeric = compare_mechanisms(4.0, 1000, value_range=(0, 10))
    assert numeric[0].mechanism == "hybrid" and numeric[-1].mechanism == "duchi"


def test_central_block_ratio():
    block = central_block(sensitivity=mean_sensitivity(0, 1, 1000), epsilon=1.0, confidence=0.95, delta=None,
                          ldp_noise_std_error=0.01)
    assert math.isclose(block["ldp_to_central_ratio"], 0.01 / (math.sqrt(2) * 0.001))
    assert block["gaussian"] is None and block["relation"] == "replace-one"
    with_delta = central_block(sensitivity=mean_sensitivity(0, 1, 1000), epsilon=1.0, confidence=0.95, delta=1e-6,
                               ldp_noise_std_error=0.01)
    assert math.isclose(with_delta["ldp_to_central_ratio"], 0.01 / with_delta["gaussian"]["sigma"])


def test_norm_sub_projects_onto_the_simplex():
    raw = [0.5, 0.3, -0.1, 0.25, 0.05]
    projected = norm_sub(raw)
    assert math.isclose(projected.sum(), 1.0) and (projected >= 0).all()
    # the iterative definition: clip negatives, subtract equally from positives until sum is 1
    x = list(raw)
    for _ in range(100):
        x = [max(v, 0.0) for v in x]
        positives = [v for v in x if v > 0]
        shift = (sum(positives) - 1) / len(positives)
        x = [v - shift if v > 0 else 0.0 for v in x]
    assert all(abs(a - b) < 1e-9 for a, b in zip(projected, [max(v, 0.0) for v in x]))


def test_base_cut_zeroes_what_is_not_significant():
    cut = base_cut([0.5, 0.01, -0.02], [0.01, 0.01, 0.01])
    assert cut.tolist() == [0.5, 0.0, 0.0]


def test_analytic_gaussian_matches_scipy_root_finding():
    "The stdlib bisection (no scipy at import) against scipy's brentq on the same equation, to 1e-9 relative"
    import math

    from scipy import optimize, stats

    from estimators.central import analytic_gaussian_sigma

    for sensitivity, epsilon, delta in [(1.0, 1.0, 1e-6), (1e-3, 0.1, 1e-9), (5.0, 8.0, 1e-5), (1.0, 0.01, 1e-12)]:
        def excess(s, d=sensitivity, e=epsilon, t=delta):
            return stats.norm.cdf(d / (2 * s) - e * s / d) - math.exp(e) * stats.norm.cdf(-d / (2 * s) - e * s / d) - t

        expected = optimize.brentq(excess, 1e-6 * sensitivity, 1e4 * sensitivity, xtol=1e-14 * sensitivity)
        assert analytic_gaussian_sigma(sensitivity, epsilon, delta) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 0.61, 1.0, 2.0, 4.0, 8.0, 10.0])
def test_auto_with_a_range_picks_the_planners_best_mean_mechanism(epsilon):
    "A numeric 'auto' resolves in the spec (the device cannot import the planner) to what the planner ranks first"
    from client_sdk import load_spec

    spec = load_spec({"name": "t", "mechanism": "auto", "epsilon": epsilon, "range": [0, 10]})
    best = compare_mechanisms(epsilon, 1000, value_range=(0, 10))[0]  # at eps <= 0.61 Hybrid is Duchi: a tie
    chosen = plan(spec.mechanism, epsilon, 1000, value_range=(0, 10))
    assert chosen.noise_std_error == pytest.approx(best.noise_std_error, rel=1e-12)
    assert plan("auto", epsilon, 1000, value_range=(0, 10)).mechanism == spec.mechanism
