"""De-biased frequencies with standard errors and confidence intervals, for GRR, SUE, OUE, OLH and Hadamard.

A report supports value v with probability p* when the truth is v and q* otherwise (Wang et al. 2017).  With
``support(v)`` the number of supporting reports among n and r = support(v)/n:

* unbiased fraction  f(v) = (r - q*) / (p* - q*),  count n f(v)
* standard error     two targets (``central.TARGETS``), at f clipped to [0, 1] (so a support count of 0 or n
                     does not give SE = 0) and pi = q* + f (p* - q*) the support probability there:
                     ``std_error`` (target "population", the default: users as a sample from a population) =
                     sqrt(pi (1 - pi) / n) / (p* - q*), the binomial variance of the support count;
                     ``std_error_reported`` (target "reported": the users who reported, privacy noise only) =
                     sqrt([f p*(1-p*) + (1-f) q*(1-q*)] / n) / (p* - q*), the fixed-data variance of Wang et al.
                     2017 (section 4).  The two differ by the sampling variance f (1 - f) / n
* interval           for target "population": the Wilson score interval for the support probability with Brown,
                     Cai & DasGupta's boundary correction (``estimators.intervals``), mapped through
                     f = (pi - q*)/(p* - q*).  It has positive width at every count and holds its coverage when
                     n q* is small (a few expected supports), where plain Wilson and the normal interval undercover

Support counts come from the aggregate: the reported-index histogram (GRR), the bit counts (SUE, OUE), the
per-value support counts (OLH), and for Hadamard n/2 + WHT(S)/2 with S the per-column signed sums, decoded by a
fast Walsh-Hadamard transform in O(n + d log d).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from client_sdk.mechanisms import CategoricalMechanism
from client_sdk.spec import Spec

from .central import TARGET_POPULATION, TARGETS, central_block, histogram_noise_std_error, histogram_sensitivity
from .errors import NoReports
from .intervals import frequency_interval, support_std_errors
from .postprocess import base_cut, base_cut_z, norm_sub
from .registry import mechanism_for

if TYPE_CHECKING:  # the aggregate's module goes through the mechanism registry, which builds on this one
    from .aggregation import Aggregate


@dataclass
class FrequencyEstimate:
    "Per-value frequency estimates of one categorical campaign, with uncertainty and post-processed versions"

    spec: Spec
    n: int
    confidence: float
    estimates: np.ndarray
    std_errors: np.ndarray
    reported_std_errors: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    norm_sub: np.ndarray
    base_cut: np.ndarray
    central_dp: dict
    defence: dict | None = None  # the test that refused reports at ingestion (``max_ones``), if the spec has one

    @property
    def values(self) -> tuple:
        return self.spec.domain or ()

    def to_dict(self) -> dict[str, Any]:
        rows = [
            {"value": value, "estimate": float(est), "count": float(est * self.n), "std_error": float(se),
             "std_error_reported": float(reported), "ci_low": float(lo), "ci_high": float(hi),
             "norm_sub": float(ns), "base_cut": float(bc)}
            for value, est, se, reported, lo, hi, ns, bc in zip(
                self.values, self.estimates, self.std_errors, self.reported_std_errors, self.ci_low, self.ci_high,
                self.norm_sub, self.base_cut)
        ]
        return {
            "kind": "frequency", "campaign": self.spec.name, "mechanism": self.spec.mechanism,
            "epsilon": self.spec.epsilon, "fingerprint": self.spec.fingerprint, "n": int(self.n),
            "confidence": self.confidence, "target": TARGET_POPULATION, "targets": TARGETS, "values": rows,
            "postprocessing": {
                "norm_sub": "projection onto the probability simplex (T. Wang et al., NDSS 2020); biased",
                "base_cut": f"estimates below {base_cut_z(len(rows)):.3f} standard errors set to 0; biased",
            },
            "central_dp": self.central_dp, **({"defence": self.defence} if self.defence is not None else {}),
        }

    def to_json(self) -> dict[str, Any]:
        "The shape every kind shares (estimators/report/report.schema.json): :meth:`to_dict` already is"
        return self.to_dict()


def support_counts(spec: Spec, aggregate: Aggregate) -> np.ndarray:
    "How many of the n reports support each domain value (the mechanism's server entry reads them off)"
    oracle: Any = mechanism_for(spec)  # an estimators.mechanisms.categorical.FrequencyOracle
    return oracle.support_counts(aggregate.n, aggregate.counts)


def reported_std_errors(r: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    "Standard errors of the frequencies, target reported: the fixed-data variance at the estimate clipped to [0, 1]"
    f = np.clip((r - q) / (p - q), 0.0, 1.0)
    return np.sqrt((f * p * (1 - p) + (1 - f) * q * (1 - q)) / n) / abs(p - q)


def root_mean_square(values: np.ndarray) -> float:
    "How one figure summarises the per-value standard errors of a histogram"
    return float(np.sqrt(np.mean(np.square(values))))


def estimate_frequencies(spec: Spec, aggregate: Aggregate, *, confidence: float = 0.95,
                         delta: float | None = None) -> FrequencyEstimate:
    "Unbiased frequencies with standard errors, intervals, Norm-Sub and Base-Cut, and the central-DP baseline"
    n = aggregate.n
    if n <= 0:
        raise NoReports(f"campaign {spec.name!r} has no reports in this window")
    oracle: Any = mechanism_for(spec)  # an estimators.mechanisms.categorical.FrequencyOracle
    assert isinstance(oracle.device, CategoricalMechanism)
    p, q = oracle.support_probabilities()  # a unary spec's max_ones: those of the accepted reports
    support = support_counts(spec, aggregate)
    r = support / n
    estimates = (r - q) / (p - q)
    std_errors = support_std_errors(r, n, p, q)
    reported = reported_std_errors(r, n, p, q)
    ci_low, ci_high = frequency_interval(support, n, p, q, confidence)
    f = np.clip(estimates, 0.0, 1.0)
    central = central_block(
        sensitivity=histogram_sensitivity(n), epsilon=spec.epsilon, confidence=confidence,
        delta=delta if delta is not None else spec.delta,
        ldp_noise_std_error=histogram_noise_std_error(p, q, len(estimates), n),
        ldp_total_std_error=root_mean_square(std_errors), sampling_std_error=root_mean_square(np.sqrt(f * (1 - f) / n)),
    )
    return FrequencyEstimate(
        spec=spec, n=n, confidence=confidence, estimates=estimates, std_errors=std_errors,
        reported_std_errors=reported, ci_low=ci_low, ci_high=ci_high,
        norm_sub=norm_sub(estimates), base_cut=base_cut(estimates, std_errors), central_dp=central,
        defence=oracle.defence(),
    )
