"""Estimates from a distributed campaign's noisy release, in the shape of the local estimates, with three trust models.

A release is the sum of the valid reports' measurements (a histogram's counts, a count, or a sum of integers in
[0, bound]) plus the noise of one mode (``estimators.distributed.noise``).  The noise is independent of the data,
integer and symmetric about its mean, and its pmf is known exactly, so:

* estimate     release - noise mean (coins: the known mean subset_size * coins_per_report / 2), over n for a
               fraction, or mapped to the value range for a mean (a value v in [low, high] is sent as an integer in
               [0, bound] by randomized rounding of bound (v - low)/(high - low): unbiased)
* std_error    sqrt(exact variance of the release's noise) on the estimate's scale: the error of the release as an
               estimate of the sum over the reports (the population is the reporting devices).  A mean adds the
               randomized rounding's variance at its worst, (high - low)^2 / (4 bound^2 n): the aggregate carries
               no sum of squares to estimate it from
* interval     estimate +- q, q the smallest integer with P(|noise| <= q) >= confidence under the exact noise pmf
               (the convolution of both aggregators' noises, or the binomial): coverage is at least nominal.  A
               mean widens it by z times the rounding's worst-case standard error

``trust_models`` puts, for the same question, n, epsilon and delta, under one relation (replace-one, n public) and
one target (the users who reported: privacy noise only), the standard error under local DP (the best frequency
oracle or mean mechanism of the registry, ``estimators.planner``), shuffled DP (the same best mechanism at the
largest local epsilon0 whose n reports, shuffled in one batch, are (epsilon, delta)-DP by the numerical bound of
Feldman, McMillan, Talwar 2021, ``estimators.shuffle.local_epsilon_for``), distributed DP (this noise), and central
DP (a trusted curator: the analytic Gaussian at delta, Balle & Wang 2018, or Laplace; the other beside it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from client_sdk.kinds.shuffle_params import DEFAULT_DELTA

from ..central import (
    RELATION,
    TARGET_REPORTED,
    central_block,
    central_noise,
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity,
)
from ..errors import NoReports
from ..planner import compare_mechanisms
from .noise import NEIGHBOURING, NoiseMode, noise_halfwidth

KINDS = ("histogram", "count", "sum")


@dataclass
class DistributedEstimate:
    "Per-value fractions (histogram, count) or a mean (sum) from one noisy release, with the three trust models"

    kind: str
    n: int
    epsilon: float
    delta: float | None
    confidence: float
    values: list[Any]
    estimates: np.ndarray
    std_errors: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    scale: float  # from the release's units to the estimate's: 1/n, or (high - low)/(bound n)
    noise: dict
    guarantee: dict
    central_dp: dict
    trust_models: dict
    value_range: tuple[float, float] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        common = {"trust": "distributed", "target": TARGET_REPORTED, "epsilon": self.epsilon, "delta": self.delta,
                  "n": int(self.n),
                  "confidence": self.confidence, "noise": self.noise, "guarantee": self.guarantee,
                  "central_dp": self.central_dp, "trust_models": self.trust_models}
        if self.kind == "sum":
            assert self.value_range is not None
            low, high = self.value_range
            mean = float(self.estimates[0])
            return {"kind": "mean", "range": [low, high], "mean": mean, "mean_clamped": min(max(mean, low), high),
                    "std_error": float(self.std_errors[0]), "ci_low": float(self.ci_low[0]),
                    "ci_high": float(self.ci_high[0]), **common}
        rows = [{"value": value, "estimate": float(est), "count": float(est * self.n), "std_error": float(se),
                 "count_std_error": float(se * self.n), "ci_low": float(lo), "ci_high": float(hi)}
                for value, est, se, lo, hi in zip(self.values, self.estimates, self.std_errors, self.ci_low,
                                                  self.ci_high)]
        return {"kind": "frequency", "values": rows, **common}


def estimate_distributed(release: Sequence[float] | float, *, kind: str, n: int, noise: NoiseMode, epsilon: float,
                         delta: float | None, confidence: float = 0.95, domain: Sequence[Any] | None = None,
                         value_range: tuple[float, float] | None = None, bound: int | None = None,
                         rounded: bool = True) -> DistributedEstimate:
    """De-noise a release: ``release`` is the sum the aggregators published (counts per bucket, a count, or a sum
    of integers in [0, bound]) with the noise in it, its known mean included.

    ``rounded=False`` for a sum of measurements that are integers already (Prio3 Sum): no rounding variance.
    ``delta`` may be None for pure-epsilon (Laplace) noise: central DP is then the Laplace mechanism."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be strictly between 0 and 1")
    if n <= 0:
        raise NoReports("the release holds no reports")
    sums = np.atleast_1d(np.asarray(release, dtype=np.float64)) - noise.mean()
    if kind == "sum":
        if value_range is None or bound is None or bound < 1 or sums.size != 1:
            raise ValueError("a sum needs one released value, value_range and an integer bound >= 1")
        low, high = value_range
        scale = (high - low) / (bound * n)
        estimates = low + sums * scale
        values: list[Any] = ["mean"]
    else:
        if kind == "count" and sums.size != 1:
            raise ValueError("a count release has one value")
        values = list(domain) if domain is not None else list(range(sums.size))
        if len(values) != sums.size:
            raise ValueError(f"the release has {sums.size} counts for a domain of {len(values)} values")
        scale = 1.0 / n
        estimates = sums * scale
    offsets, pmf = noise.noise_pmf()
    rounding_variance = 0.0
    if kind == "sum" and rounded:
        assert value_range is not None and bound is not None
        rounding_variance = (value_range[1] - value_range[0]) ** 2 / (4 * bound * bound * n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    halfwidth = noise_halfwidth(offsets, pmf, confidence) * scale + z * math.sqrt(rounding_variance)
    std_error = math.sqrt(noise.variance() * scale * scale + rounding_variance)
    std_errors = np.full(sums.size, std_error)
    models = trust_models(kind, n=n, epsilon=epsilon, delta=delta, distributed_std_error=std_error,
                          domain_size=max(2, len(values)) if kind != "sum" else None, value_range=value_range,
                          noise_mode=noise.mode, confidence=confidence)
    models["distributed"]["ci_halfwidth"] = float(halfwidth)
    if kind == "sum":
        assert value_range is not None
        sensitivity = mean_sensitivity(value_range[0], value_range[1], n)
    else:
        sensitivity = count_sensitivity(n) if kind == "count" else histogram_sensitivity(n)
    central = central_block(sensitivity=sensitivity, epsilon=epsilon, confidence=confidence, delta=delta,
                            ldp_noise_std_error=models["local"]["std_error"], family=noise.mode)
    achieved_epsilon, achieved_delta = noise.privacy(epsilon)
    guarantee = {"epsilon": achieved_epsilon, "delta": achieved_delta, "relation": RELATION,
                 "neighbouring": NEIGHBOURING, "assumption": noise.describe()["assumption"]}
    return DistributedEstimate(
        kind=kind, n=n, epsilon=epsilon, delta=delta, confidence=confidence, values=values, estimates=estimates,
        std_errors=std_errors, ci_low=estimates - halfwidth, ci_high=estimates + halfwidth, scale=scale,
        noise=noise.describe(), guarantee=guarantee, central_dp=central, trust_models=models,
        value_range=value_range if kind == "sum" else None,
    )


def shuffled_model(epsilon: float, n: int, delta: float | None, z: float, *, domain_size: int | None = None,
                   value_range: tuple[float, float] | None = None) -> dict:
    "The shuffled row of :func:`trust_models`: the best local mechanism at the epsilon0 n shuffled reports allow"
    # imported here: estimators.shuffle loads scipy, which `ldp-telemetry report` of a local campaign never needs
    from ..shuffle import BOUND, local_epsilon_for

    shuffle_delta = float(delta) if delta else DEFAULT_DELTA
    epsilon0 = local_epsilon_for(epsilon, n, shuffle_delta) if n >= 2 else float(epsilon)
    if value_range is not None:
        best = compare_mechanisms(epsilon0, n, value_range=value_range, target=TARGET_REPORTED)[0]
    else:
        best = compare_mechanisms(epsilon0, n, domain_size=domain_size or 2, target=TARGET_REPORTED)[0]
    return {"std_error": best.std_error, "ci_halfwidth": z * best.std_error, "mechanism": best.mechanism,
            "epsilon": epsilon, "delta": shuffle_delta, "epsilon0": epsilon0, "batch_size": n, "bound": BOUND,
            "assumption": "the shuffler and the collector do not collude (the shuffler sees who sent each report, "
                          "the collector only the shuffled batch)"}


def trust_models(kind: str, *, n: int, epsilon: float, delta: float | None, distributed_std_error: float,
                 domain_size: int | None = None, value_range: tuple[float, float] | None = None,
                 noise_mode: str | None = None, confidence: float = 0.95) -> dict:
    """Standard errors of the same estimate (a fraction, or a mean) under local, shuffled, distributed and central DP.

    One neighbouring relation for all three, replace-one (n public), and one target, "reported" (the privacy
    noise, the error as an estimate for the users who reported; the sampling variance would be the same under
    all three).  Local: the planner's best mechanism (fixed-data variance at f = 0 for a fraction, the worst case
    over the range for a mean).  Central: :func:`estimators.central.central_noise` for the query's replace-one
    sensitivity (a histogram's L1 = 2/n, L2 = sqrt(2)/n; a count's 1/n; a mean's (high - low)/n), Laplace for
    discrete Laplace noise or without delta, the analytic Gaussian at delta otherwise.  Each model states the
    (epsilon, delta) it gives under replace-one: the distributed row's is the release's (filled in by
    ``estimators.distributed.release``); the shuffled row's is the target at delta (``DEFAULT_DELTA`` without
    one: shuffling gives no pure epsilon-DP), its local ``epsilon0`` and ``batch_size`` n beside it."""
    if kind == "sum":
        if value_range is None:
            raise ValueError("a mean needs value_range")
        best = compare_mechanisms(epsilon, n, value_range=value_range, target=TARGET_REPORTED)[0]
        sensitivity = mean_sensitivity(value_range[0], value_range[1], n)
    else:
        best = compare_mechanisms(epsilon, n, domain_size=domain_size or 2, target=TARGET_REPORTED)[0]
        sensitivity = count_sensitivity(n) if kind == "count" else histogram_sensitivity(n)
    central = central_noise(sensitivity, epsilon, delta, confidence, family=noise_mode)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return {
        "relation": RELATION,
        "target": TARGET_REPORTED,
        "scale": "mean" if kind == "sum" else "fraction (times n for a count)",
        "local": {"std_error": best.std_error, "ci_halfwidth": z * best.std_error, "mechanism": best.mechanism,
                  "epsilon": epsilon, "delta": 0.0,
                  "assumption": "none: each device randomizes its own report"},
        "shuffled": shuffled_model(epsilon, n, delta, z, domain_size=domain_size,
                                   value_range=value_range if kind == "sum" else None),
        "distributed": {"std_error": distributed_std_error,
                        "assumption": "the noise mode's (see noise.assumption); Prio3: the aggregators do not both "
                                      "collude"},
        "central": {"std_error": central["std_error"], "ci_halfwidth": central["ci_halfwidth"],
                    "mechanism": central["mechanism"], "sensitivity": sensitivity.describe(),
                    "laplace_std_error": central["laplace"]["std_error"],
                    "gaussian_std_error": (central["gaussian"] or {}).get("std_error"),
                    "epsilon": epsilon, "delta": float(delta or 0.0) if "Gaussian" in central["mechanism"] else 0.0,
                    "assumption": "a trusted curator sees every raw value"},
    }
