"""The numbers behind the sqrt(n) plot: CI half-width against n under local and central DP, by formula and by
simulation.

Frequencies (Wang et al., USENIX Security 2017; Dwork et al., TCC 2006), for users drawn from the campaign's
estimated distribution f (Norm-Sub) and r_v = q* + f_v (p* - q*):

* local DP    z sqrt(mean_v r_v (1 - r_v) / n) / (p* - q*)     slope -1/2 on a log-log plot
* central DP  the estimate's ``central_dp`` interval scaled by n_now / n (its mechanism, Laplace or Gaussian,
              under replace-one: the sensitivity is proportional to 1/n), slope -1

The simulated points draw n users from f, perturb them with :func:`estimators.simulate.simulate` (the SDK's
distribution), estimate, and take z times the root-mean-square error; the central points take the
``confidence`` quantile of the central mechanism's |noise|.  Means use SE = sd(Z) / sqrt(n) with this campaign's
sd(Z) and the central mean's sensitivity (high - low) / n; their simulated users come from a two-point population
with the estimate's mean and spread (the population variance n (SE^2 - SE_reported^2): sampling and, through
E[t^2], the noise of a mechanism whose variance depends on t both match the line's).

A point is the RMS of K squared errors (K = trials x (d - 1) for frequencies, whose errors sum to about 0 within
a trial; trials for means), so it carries its Monte-Carlo interval (:func:`rms_interval`, the chi-square's with K
degrees of freedom): with the 3 to 40 trials a report affords, a point 20% off the line is within its noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from client_sdk.mechanisms import CategoricalMechanism, mechanism_from_spec
from client_sdk.spec import Spec, load_spec

from ..aggregation import aggregate
from ..estimates import Estimate, as_estimate, typed_as
from ..frequency import estimate_frequencies
from ..kinds.distributed import Prio3Release
from ..kinds.local import LocalFrequencies, LocalMean
from ..means import estimate_mean
from ..simulate import simulate
from .kinds.base import report_kind
from .model import EstimateLike, central_halfwidth, typical_ldp_halfwidth

SIMULATED_N = (100, 1_000, 10_000, 100_000)
SIMULATION_BUDGET = 1_000_000  # reports x domain values per simulated point
MIN_TRIALS, MAX_TRIALS = 3, 40
CENTRAL_SAMPLES = 20_000  # Laplace draws per central point: cheap, and enough for a steady 95% quantile
SPEC_FIELDS = ("name", "mechanism", "epsilon", "domain", "catch_all", "range", "rappor", "candidates", "delta")


@dataclass(frozen=True)
class ScalingCurves:
    "Formula curves, simulated points and the campaign's current position for the sqrt(n) plot"

    mechanism: str
    epsilon: float
    confidence_text: str
    quantity: str
    unit: str
    n: np.ndarray
    ldp_halfwidth: np.ndarray
    central_halfwidth: np.ndarray
    current_n: int
    current_ldp: float
    current_central: float
    simulated_n: np.ndarray
    simulated_ldp: np.ndarray
    simulated_central: np.ndarray
    trials_text: str
    central_mechanism: str = "Laplace"
    delta: float | None = None  # the central Gaussian's, when that is the baseline
    # each simulated local point's Monte-Carlo interval (rms_interval), low and high
    simulated_ldp_low: np.ndarray = field(default_factory=lambda: np.array([]))
    simulated_ldp_high: np.ndarray = field(default_factory=lambda: np.array([]))


def scaling_curves(result: EstimateLike, spec: dict | None = None, *, rng: np.random.Generator | None = None,
                   simulate_points: bool = True) -> ScalingCurves | None:
    """The curves for a local frequency oracle's or mean estimate; None for the types without a closed form here
    (RAPPOR's candidates)"""
    result = as_estimate(result)
    n_now = result.n or 0
    confidence = result.z_confidence
    current_ldp, current_central = typical_ldp_halfwidth(result), central_halfwidth(result)
    curves = _CURVES.get(type(result))
    if curves is None or n_now <= 0 or current_ldp is None or current_central is None:
        return None
    return curves(result, spec, confidence, n_now, current_ldp, current_central,
                  rng if rng is not None else np.random.default_rng(0), simulate_points)


def _grid(n_now: int) -> np.ndarray:
    high = max(10 ** math.ceil(math.log10(n_now) + 1), 1e6)
    return np.logspace(1, math.log10(high), 60)


def _frequency_curves(result: Estimate, spec_json: dict | None, confidence: float, n_now: int, current_ldp: float,
                      current_central: float, rng: np.random.Generator, simulate_points: bool) -> ScalingCurves:
    # the domain as the estimate wrote it (not as text)
    spec = _spec(result, spec_json, {"domain": [row["value"] for row in result.json.get("values", [])]})
    mechanism = mechanism_from_spec(spec)
    assert isinstance(mechanism, CategoricalMechanism)
    p, q = mechanism.p_star, mechanism.q_star
    truth = _estimated_distribution(result, spec.domain_size)
    r = q + truth * (p - q)
    per_report_sd = math.sqrt(float(np.mean(r * (1 - r)))) / (p - q)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    n = _grid(n_now)
    sim_n, sim_ldp, sim_central, trials = (np.array([]),) * 3 + (0,)
    if simulate_points:
        sim_n, sim_ldp, sim_central, trials = _simulate_frequencies(spec, truth, confidence, rng, result)
    low, high = rms_intervals(sim_n, sim_ldp, lambda n: _trials(n * spec.domain_size) * (spec.domain_size - 1),
                              confidence)
    return ScalingCurves(
        mechanism=spec.mechanism, epsilon=spec.epsilon, confidence_text=f"{100 * confidence:.4g}%",
        quantity="one value's fraction (averaged over the domain, at the estimated distribution)", unit="fraction",
        n=n, ldp_halfwidth=z * per_report_sd / np.sqrt(n), central_halfwidth=current_central * n_now / n,
        current_n=n_now, current_ldp=current_ldp, current_central=current_central,
        simulated_n=sim_n, simulated_ldp=sim_ldp, simulated_central=sim_central,
        trials_text=(f"simulated campaigns drawn from the estimated distribution, {trials}+ per n "
                     f"(local: z × RMS error of the unbiased estimates, with its {100 * confidence:.4g}% "
                     f"Monte-Carlo interval; central: quantile of {CENTRAL_SAMPLES:,} "
                     f"{central_mechanism_text(result)} draws)"
                     if simulate_points else "none (simulation turned off)"),
        central_mechanism=central_mechanism_text(result), delta=central_delta(result),
        simulated_ldp_low=low, simulated_ldp_high=high,
    )


def _trials(draws_per_trial: int) -> int:
    "Simulated campaigns per point: as many as the budget allows, at most MAX_TRIALS (below MIN_TRIALS: none)"
    return int(min(MAX_TRIALS, SIMULATION_BUDGET // draws_per_trial))


def rms_interval(rms: float, squares: int, confidence: float) -> tuple[float, float]:
    """The ``confidence`` interval for the true root mean square given an observed RMS of ``squares`` independent
    squared normal errors: K RMS^2 / sigma^2 is chi-square with K degrees of freedom"""
    # here, not at import: only figures with simulated points need scipy.special (0.25 s to import)
    from scipy.special import gammaincinv

    k = max(squares, 1)
    tail = (1 - confidence) / 2
    upper, lower = (2 * float(gammaincinv(k / 2, p)) for p in (1 - tail, tail))  # chi-square quantiles
    return rms * math.sqrt(k / upper), rms * math.sqrt(k / lower)


def rms_intervals(sizes: np.ndarray, points: np.ndarray, squares: Callable[[int], int],
                  confidence: float) -> tuple[np.ndarray, np.ndarray]:
    "Each simulated point's Monte-Carlo interval (:func:`rms_interval`), ``squares(n)`` squared errors behind it"
    bounds = [rms_interval(float(point), squares(int(n)), confidence) for n, point in zip(sizes, points)]
    return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


def _simulate_frequencies(spec: Spec, truth: np.ndarray, confidence: float, rng: np.random.Generator,
                          result: Estimate) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    d = spec.domain_size
    sizes, ldp, central, fewest = [], [], [], MAX_TRIALS
    for n in SIMULATED_N:
        trials = _trials(n * d)
        if trials < MIN_TRIALS:
            break
        fewest = min(fewest, trials)
        errors = []
        for _ in range(trials):
            users = rng.choice(d, size=n, p=truth)
            estimated = estimate_frequencies(spec, aggregate(spec, simulate(spec, users, rng)))
            errors.append(estimated.estimates - truth)
        sizes.append(n)
        ldp.append(z * math.sqrt(float(np.mean(np.square(errors)))))
        central.append(float(np.quantile(np.abs(_central_draws(result, n, rng)), confidence)))
    return np.array(sizes, dtype=float), np.array(ldp), np.array(central), fewest


def _mean_curves(estimate: Estimate, spec: dict | None, confidence: float, n_now: int, current_ldp: float,
                 current_central: float, rng: np.random.Generator, simulate_points: bool) -> ScalingCurves:
    result = typed_as(LocalMean, estimate)
    if result.epsilon is None:
        raise ValueError("the estimate states no epsilon")
    epsilon = result.epsilon
    n = _grid(n_now)
    sim_n, sim_ldp, sim_central, trials = (np.array([]),) * 3 + (0,)
    if simulate_points:
        rebuilt = {"range": list(result.range or (0.0, 1.0))}
        sim_n, sim_ldp, sim_central, trials = _simulate_means(_spec(result, spec, rebuilt), result, confidence, rng)
    low, high = rms_intervals(sim_n, sim_ldp, lambda n: _trials(n), confidence)
    return ScalingCurves(
        mechanism=result.mechanism or "", epsilon=epsilon, confidence_text=f"{100 * confidence:.4g}%",
        quantity="the mean", unit=result.unit or "value units",
        n=n, ldp_halfwidth=current_ldp * np.sqrt(n_now / n),
        central_halfwidth=current_central * n_now / n,
        current_n=n_now, current_ldp=current_ldp, current_central=current_central,
        simulated_n=sim_n, simulated_ldp=sim_ldp, simulated_central=sim_central,
        trials_text=(f"simulated campaigns of users with the estimate's mean and spread (two values), {trials}+ "
                     f"per n, with the local points' {100 * confidence:.4g}% Monte-Carlo interval; central: "
                     f"quantile of {CENTRAL_SAMPLES:,} {central_mechanism_text(result)} draws"
                     if simulate_points else "none (simulation turned off)"),
        central_mechanism=central_mechanism_text(result), delta=central_delta(result),
        simulated_ldp_low=low, simulated_ldp_high=high,
    )


def _simulate_means(spec: Spec, result: LocalMean, confidence: float, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    low, high = spec.range  # type: ignore[misc]
    mean = result.mean_clamped if result.mean_clamped is not None else result.mean
    value = min(max(mean if mean is not None else low, low), high)
    points, weights = two_point_population(value, population_variance(result), low, high)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    sizes, ldp, central, fewest = [], [], [], MAX_TRIALS
    for n in SIMULATED_N:
        trials = _trials(n)
        if trials < MIN_TRIALS:
            break
        fewest = min(fewest, trials)
        errors = [estimate_mean(spec, aggregate(spec, simulate(spec, rng.choice(points, size=n, p=weights), rng))).mean
                  - value for _ in range(trials)]
        sizes.append(n)
        ldp.append(z * math.sqrt(float(np.mean(np.square(errors)))))
        central.append(float(np.quantile(np.abs(_central_draws(result, n, rng)), confidence)))
    return np.array(sizes, dtype=float), np.array(ldp), np.array(central), fewest


def population_variance(result: LocalMean) -> float:
    """The variance of the users' values the estimate implies: n (SE^2 - SE_reported^2), its sampling part (0 when
    the estimate states no noise-only standard error)"""
    reported = result.json.get("std_error_reported")
    if result.std_error is None or not isinstance(reported, (int, float)) or not result.n:
        return 0.0
    return max(result.n * (result.std_error ** 2 - float(reported) ** 2), 0.0)


def two_point_population(mean: float, variance: float, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """Two values in [low, high] and their weights with this mean and variance (as much of it as the range allows:
    at most (mean - low)(high - mean)); mean +- sd when both fit, else one value at the nearer bound"""
    variance = min(variance, (mean - low) * (high - mean))
    sd = math.sqrt(variance)
    if sd == 0:
        return np.array([mean]), np.array([1.0])
    if mean - sd >= low and mean + sd <= high:
        return np.array([mean - sd, mean + sd]), np.array([0.5, 0.5])
    if mean - sd < low:  # a at the bound, b = mean + variance / (mean - a), weights from the mean
        a, b = low, mean + variance / (mean - low)
    else:
        a, b = mean - variance / (high - mean), high
    weight_a = (b - mean) / (b - a)
    return np.array([a, b]), np.array([weight_a, 1 - weight_a])


def central_delta(result: Estimate) -> float | None:
    "The delta of the estimate's central baseline when it is the Gaussian mechanism"
    block = result.central
    if block is not None and (block.mechanism or "").startswith("Gaussian"):
        return block.gaussian_delta
    return None


def central_mechanism_text(result: Estimate) -> str:
    "The central mechanism the estimate's ``central_dp`` block chose (Laplace, or Gaussian at its delta)"
    return (result.central.mechanism if result.central is not None else None) or "Laplace"


def _central_draws(result: Estimate, n: int, rng: np.random.Generator) -> np.ndarray:
    "Noise of the estimate's central mechanism at n reports: its scale is the block's times n_now / n"
    block = result.central
    factor = (result.n or n) / n
    if block is None:
        raise ValueError("the estimate has no central-DP baseline")
    if (block.mechanism or "").startswith("Gaussian"):
        assert block.std_error is not None, "a Gaussian baseline states its standard error"
        return rng.normal(0.0, block.std_error * factor, size=CENTRAL_SAMPLES)
    assert block.laplace_scale is not None, "a Laplace baseline states its scale"
    return rng.laplace(0.0, block.laplace_scale * factor, size=CENTRAL_SAMPLES)


def _spec(result: Estimate, spec: dict | None, rebuilt: dict) -> Spec:
    "The campaign's spec, or one rebuilt from the estimate (mechanism, epsilon, and ``rebuilt``: domain or range)"
    if spec is not None:  # stored specs may carry bookkeeping fields (created_day, ...): keep the spec's own
        return load_spec({key: value for key, value in spec.items() if key in SPEC_FIELDS})
    return load_spec({"name": result.campaign or "campaign", "mechanism": result.mechanism,
                      "epsilon": result.epsilon, **rebuilt})


def _estimated_distribution(result: Estimate, d: int) -> np.ndarray:
    "The Norm-Sub estimate as a probability vector (uniform when it is degenerate)"
    rows = result.values
    values = np.array([max(row.norm_sub if row.norm_sub is not None else row.estimate, 0.0) for row in rows])
    if len(values) != d or values.sum() <= 0:
        return np.full(d, 1 / d)
    return values / values.sum()


# The local kind's estimate types with a closed form here (RAPPOR's candidates have none)
_CURVES: dict[type[Estimate], Callable[..., ScalingCurves]] = {LocalFrequencies: _frequency_curves,
                                                                LocalMean: _mean_curves}


@dataclass(frozen=True)
class TrustModelCurves:
    "95% CI half-width against n under local, distributed and central DP, from a distributed campaign's estimate"

    quantity: str
    epsilon: float
    noise_mode: str
    local_mechanism: str
    central_mechanism: str
    n: np.ndarray
    local: np.ndarray
    distributed: np.ndarray
    central: np.ndarray
    current_n: int
    current: dict[str, float]
    delta: float | None = None
    shuffled: np.ndarray | None = None  # one batch of n shuffled reports at the epsilon0 the target allows
    shuffled_delta: float | None = None


SHUFFLED_POINTS = 7  # the shuffled line is computed at this many n (each a search over epsilon0), log-interpolated


def _shuffled_curve(result: Estimate, n: np.ndarray) -> np.ndarray | None:
    "The shuffled model's half-width over ``n``, computed by the kind at a few n and interpolated on log scales"
    points = np.unique(np.round(np.logspace(math.log10(n[0]), math.log10(n[-1]), SHUFFLED_POINTS)).astype(int))
    widths = report_kind(result).shuffled_halfwidths(result, [int(m) for m in points])
    if widths is None:
        return None
    return np.exp(np.interp(np.log(n), np.log(points), np.log(widths)))


def trust_model_curves(result: EstimateLike) -> TrustModelCurves | None:
    """The three lines of a distributed estimate's sqrt(n) figure, None without its ``trust_models`` block.

    For the same question, epsilon and delta: local DP's standard error falls as 1/sqrt(n) (the best oracle's
    variance is proportional to 1/n), distributed and central DP's as 1/n (their noise is on the sum, calibrated
    to one report under replace-one, so it does not grow with n)."""
    estimate = as_estimate(result)
    errors = report_kind(estimate).trust_model_halfwidths(estimate)
    n_now = estimate.n or 0
    if errors is None or n_now <= 0 or estimate.epsilon is None:
        return None
    result = typed_as(Prio3Release, estimate)  # the kind that states trust models
    models = result.trust_models
    assert models is not None, "the trust models' half-widths come from them"
    n = _grid(n_now)
    shuffled = models.get("shuffled")
    return TrustModelCurves(
        quantity=result.quantity, epsilon=estimate.epsilon,
        noise_mode=result.noise_mode or "?", local_mechanism=models["local"].mechanism or "?",
        central_mechanism=models["central"].mechanism or "?", n=n,
        local=errors["local"] * np.sqrt(n_now / n), distributed=errors["distributed"] * n_now / n,
        central=errors["central"] * n_now / n, current_n=n_now, current=errors, delta=result.delta,
        shuffled=None if shuffled is None or shuffled.std_error is None else _shuffled_curve(estimate, n),
        shuffled_delta=None if shuffled is None else shuffled.delta,
    )
