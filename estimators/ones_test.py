"""The ones test: a defence against crafted SUE/OUE reports (Cao, Jia, Gong, "Data Poisoning Attacks to Local
Differential Privacy Protocols", USENIX Security 2021, section 6).

An honest unary report sets its true value's bit with probability p* and each of the d - 1 others with q*, so its
number of ones is ``Bernoulli(p*) + Binomial(d - 1, q*)`` whatever the true value.  A fake report that lifts many
values at once sets many bits (all d for the largest gain, docs/privacy.md "Poisoning").  A campaign whose spec
has ``max_ones`` K makes the collector refuse reports with more than K ones (``check_payload`` of the server
mechanism), so a fake report lifts at most K values.

* false rejection   an honest report is refused with probability P(ones > K) (:func:`false_rejection_rate`),
                    the same for every true value, so the accepted reports are still a uniform sample of them
* de-biasing        among accepted reports a value's bit is set with p' when it is the true value and q'
                    otherwise (:func:`accepted_probabilities`), with B ~ Binomial(d - 1, q*),
                    C ~ Binomial(d - 2, q*) and A = P(accepted) = p* P(B <= K - 1) + (1 - p*) P(B <= K):
                    p' = p* P(B <= K - 1) / A,   q' = q* [p* P(C <= K - 2) + (1 - p*) P(C <= K - 1)] / A.
                    The estimate of the accepted reports, de-biased with p' and q', is unbiased again
* choosing K        :func:`max_ones_for` gives the smallest K whose false-rejection rate is at most a target

No I/O; numpy only (binomial probabilities in log space, exact for any d the specs allow).
"""

from __future__ import annotations

import math

import numpy as np


def binomial_pmf(trials: int, probability: float) -> np.ndarray:
    "P(Binomial(trials, probability) = k) for k = 0..trials (an empty array for trials < 0), from log space"
    if trials < 0:
        return np.zeros(0)
    k = np.arange(trials + 1, dtype=np.float64)
    log_gamma = np.vectorize(math.lgamma)
    log_choose = math.lgamma(trials + 1) - log_gamma(k + 1) - log_gamma(trials - k + 1)
    return np.exp(log_choose + k * math.log(probability) + (trials - k) * math.log1p(-probability))


def binomial_cdf(trials: int, probability: float) -> np.ndarray:
    "P(Binomial(trials, probability) <= k) for k = 0..trials"
    return np.minimum(np.cumsum(binomial_pmf(trials, probability)), 1.0)


def _cdf_at(cdf: np.ndarray, k: int) -> float:
    "P(X <= k) from a cdf array (0 below its support, 1 above it)"
    if k < 0:
        return 0.0
    return 1.0 if k >= len(cdf) - 1 else float(cdf[k])


def ones_distribution(d: int, p: float, q: float) -> np.ndarray:
    "P(an honest report has exactly k ones), k = 0..d"
    rest = binomial_pmf(d - 1, q)
    return np.concatenate([(1 - p) * rest, [0.0]]) + np.concatenate([[0.0], p * rest])


def acceptance_probability(d: int, p: float, q: float, max_ones: int) -> float:
    "P(an honest report has at most ``max_ones`` ones)"
    cdf = binomial_cdf(d - 1, q)
    return p * _cdf_at(cdf, max_ones - 1) + (1 - p) * _cdf_at(cdf, max_ones)


def false_rejection_rate(d: int, p: float, q: float, max_ones: int) -> float:
    "P(an honest report has more than ``max_ones`` ones): the share of honest reports the collector refuses"
    return float(math.fsum(ones_distribution(d, p, q)[max_ones + 1:]))


def accepted_probabilities(d: int, p: float, q: float, max_ones: int) -> tuple[float, float]:
    "(p', q'): the probabilities that an accepted honest report sets its true value's bit and another value's bit"
    accepted = acceptance_probability(d, p, q, max_ones)
    others = binomial_cdf(d - 1, q)
    true_one = p * _cdf_at(others, max_ones - 1)
    rest = binomial_cdf(d - 2, q)
    other_one = q * (p * _cdf_at(rest, max_ones - 2) + (1 - p) * _cdf_at(rest, max_ones - 1))
    return true_one / accepted, other_one / accepted


def max_ones_for(d: int, p: float, q: float, false_rejection: float) -> int:
    "The smallest K whose false-rejection rate is at most ``false_rejection`` (d when none below d is)"
    if not 0 < false_rejection < 1:
        raise ValueError("false_rejection must be strictly between 0 and 1")
    tail = np.cumsum(ones_distribution(d, p, q)[::-1])[::-1]  # tail[k] = P(ones >= k)
    for k in range(d):
        if tail[k + 1] <= false_rejection:
            return k
    return d
