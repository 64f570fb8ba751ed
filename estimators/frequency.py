"""De-biased frequencies with standard errors and confidence intervals, for GRR, SUE, OUE, OLH and Hadamard.

A report supports value v with probability p* when the truth is v and q* otherwise (Wang et al. 2017).  With
``support(v)`` the number of supporting reports among n and r = support(v)/n:

* unbiased fraction  f(v) = (r - q*) / (p* - q*),  count n f(v)
* standard error     SE = sqrt(r (1 - r) / n) / (p* - q*)   (users as a sample; REFERENCE.md section 1)
* interval           f(v) +- z SE, z the normal quantile for ``confidence``

Support counts come from the aggregate: the reported-index histogram (GRR), the bit counts (SUE, OUE), the
per-value support counts (OLH), and for Hadamard n/2 + WHT(S)/2 with S the per-column signed sums, decoded by a
fast Walsh-Hadamard transform in O(n + d log d).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from client_sdk.mechanisms import CategoricalMechanism
from client_sdk.spec import Spec

from .central import NEIGHBOURING_FREQUENCY, central_block
from .errors import NoReports
from .mechanisms.base import mechanism_for
from .postprocess import base_cut, base_cut_z, norm_sub

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
    ci_low: np.ndarray
    ci_high: np.ndarray
    norm_sub: np.ndarray
    base_cut: np.ndarray
    central_dp: dict

    @property
    def values(self) -> tuple:
        return self.spec.domain or ()

    def to_dict(self) -> dict[str, Any]:
        rows = [
            {"value": value, "estimate": float(est), "count": float(est * self.n), "std_error": float(se),
             "ci_low": float(lo), "ci_high": float(hi), "norm_sub": float(ns), "base_cut": float(bc)}
            for value, est, se, lo, hi, ns, bc in zip(self.values, self.estimates, self.std_errors, self.ci_low,
                                                      self.ci_high, self.norm_sub, self.base_cut)
        ]
        return {
            "kind": "frequency", "campaign": self.spec.name, "mechanism": self.spec.mechanism,
            "epsilon": self.spec.epsilon, "fingerprint": self.spec.fingerprint, "n": int(self.n),
            "confidence": self.confidence, "values": rows,
            "postprocessing": {
                "norm_sub": "projection onto the probability simplex (T. Wang et al., NDSS 2020); biased",
                "base_cut": f"estimates below {base_cut_z(len(rows)):.3f} standard errors set to 0; biased",
            },
            "central_dp": self.central_dp,
        }


def support_counts(spec: Spec, aggregate: Aggregate) -> np.ndarray:
    "How many of the n reports support each domain value (the mechanism's server entry reads them off)"
    oracle: Any = mechanism_for(spec)  # an estimators.mechanisms.categorical.FrequencyOracle
    return oracle.support_counts(aggregate.n, aggregate.counts)


def estimate_frequencies(spec: Spec, aggregate: Aggregate, *, confidence: float = 0.95,
                         delta: float | None = None) -> FrequencyEstimate:
    "Unbiased frequencies with standard errors, intervals, Norm-Sub and Base-Cut, and the central-DP baseline"
    n = aggregate.n
    if n <= 0:
        raise NoReports(f"campaign {spec.name!r} has no reports in this window")
    mechanism = mechanism_for(spec).device
    assert isinstance(mechanism, CategoricalMechanism)
    p, q = mechanism.p_star, mechanism.q_star
    r = support_counts(spec, aggregate) / n
    estimates = (r - q) / (p - q)
    std_errors = np.sqrt(np.clip(r * (1 - r), 0.0, None) / n) / (p - q)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    central = central_block(
        sensitivity=1.0 / n, epsilon=spec.epsilon, confidence=confidence,
        delta=delta if delta is not None else spec.delta, ldp_std_error=float(np.mean(std_errors)),
        neighbouring=NEIGHBOURING_FREQUENCY,
    )
    return FrequencyEstimate(
        spec=spec, n=n, confidence=confidence, estimates=estimates, std_errors=std_errors,
        ci_low=estimates - z * std_errors, ci_high=estimates + z * std_errors,
        norm_sub=norm_sub(estimates), base_cut=base_cut(estimates, std_errors), central_dp=central,
    )
