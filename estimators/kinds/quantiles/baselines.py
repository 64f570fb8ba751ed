"""What other answers to the same question would give, beside a quantiles estimate: a trusted curator's quantiles
(central DP) and a local mean mechanism's mean.

* Central DP, replace-one (``estimators.central``).  A curator releasing the CDF at the boundary of one quantile
  answers one count over n: sensitivity 1/n (``count_sensitivity``).  Releasing k quantiles at once splits epsilon
  over them (basic composition: epsilon/k each; the local tree answers every range at the full epsilon).  The
  curator's rank interval is +-h (the chosen mechanism's ``ci_halfwidth``, noise only), shown in values by
  inverting this campaign's estimated monotone CDF at p - h and p + h.
* A mean mechanism at the same epsilon over the spec's range (the ``auto`` numeric mechanism, Hybrid): each
  report's unbiased Z on [-1, 1] has Var(Z) = E[Var(Z | t)] + Var(t), both read off the estimated distribution at
  the buckets' midpoints; its mean's standard error is (high - low)/2 sqrt(Var(Z) / n).  A wide range (latencies
  up to a minute, most under a second) costs a mean mechanism what the buckets do not cost the tree.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from client_sdk.errors import PrivacyWarning
from client_sdk.mechanisms import mechanism_from_spec
from client_sdk.mechanisms.numeric import NumericMechanism
from estimators.central import central_noise, count_sensitivity
from estimators.intervals import z_value

from .estimate import QuantilesEstimate, invert_cdf


def central_quantiles(estimate: QuantilesEstimate, delta: float | None = None) -> dict[str, Any]:
    "The ``central_dp`` block: the curator's rank half-width per quantile and its interval in values"
    params = estimate.params
    k = max(len(estimate.quantiles), 1)
    noise = central_noise(count_sensitivity(estimate.n), params.epsilon / k, delta, estimate.confidence)
    half = float(noise["ci_halfwidth"])
    boundaries = estimate.boundaries
    cdf = estimate.cdf if estimate.monotone_cdf is None else estimate.monotone_cdf  # what the quantiles read
    rows = [{"p": row.p, "rank_halfwidth": half,
             "ci_low": invert_cdf(boundaries, cdf, max(row.p - half, 0.0)),
             "ci_high": invert_cdf(boundaries, cdf, min(row.p + half, 1.0))} for row in estimate.quantiles]
    return {"relation": "replace-one", "mechanism": noise["mechanism"], "epsilon_each": params.epsilon / k,
            "query": "the CDF at each quantile's boundary (one count over n), epsilon split over the quantiles",
            "std_error": noise["std_error"], "quantiles": rows}


def mean_mechanism(estimate: QuantilesEstimate) -> dict[str, Any]:
    "The ``mean_mechanism`` block: what a local mean mechanism at the same epsilon would give (module docstring)"
    params = estimate.params
    with warnings.catch_warnings():  # the campaign's spec has warned about a large epsilon already
        warnings.simplefilter("ignore", PrivacyWarning)
        mechanism = mechanism_from_spec({"name": "quantiles-mean", "mechanism": "auto", "epsilon": params.epsilon,
                                         "range": [params.low, params.high]})
    assert isinstance(mechanism, NumericMechanism)  # "auto" over a range resolves to a mean mechanism
    boundaries = estimate.boundaries
    midpoints = (boundaries[:-1] + boundaries[1:]) / 2
    shares = np.clip(estimate.frequencies, 0.0, None)
    shares = shares / shares.sum() if shares.sum() > 0 else np.full(len(shares), 1.0 / len(shares))
    units = 2 * (midpoints - params.low) / (params.high - params.low) - 1
    noise = float(sum(s * mechanism.variance(float(t)) for s, t in zip(shares, units)))
    spread = float(shares @ units**2 - (shares @ units) ** 2)
    std_error = (params.high - params.low) / 2 * math.sqrt((noise + spread) / estimate.n)
    half = z_value(estimate.confidence) * std_error
    mean = estimate.mean.estimate
    return {"mechanism": mechanism.spec.mechanism, "std_error": std_error, "ci_low": mean - half,
            "ci_high": mean + half, "ci_halfwidth": half}
