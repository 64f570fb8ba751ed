"""What a trusted curator would get at the same epsilon: the central-DP baselines.

Neighbouring relations (Dwork & Roth, The Algorithmic Foundations of Differential Privacy, 2014, ch. 2-3):

* Frequencies: add or remove one person.  The histogram then has L1 and L2 sensitivity 1, so each count gets
  Laplace noise of scale 1/eps (standard error sqrt(2)/eps) and the fraction c/n an error n times smaller.
* Means of a value in [low, high] over n people with n public: replace one person's value.  The mean then has
  sensitivity (high - low)/n.

Laplace mechanism (Dwork, McSherry, Nissim, Smith 2006): noise Lap(b) with b = sensitivity/eps; standard error
sqrt(2) b; the central interval holding ``confidence`` of the noise is +- b ln(1/(1 - confidence)).
``ldp_to_central_ratio`` divides the LDP standard error (for frequencies, the mean of the per-value standard
errors) by the central Laplace standard error; it grows as sqrt(n) (docs/mechanisms.md, "Central DP baselines").

Gaussian mechanism, calibrated exactly for any eps with the analytic Gaussian mechanism (Balle & Wang, ICML 2018):
the smallest sigma with Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) <= delta.
"""

from __future__ import annotations

import math
from statistics import NormalDist

NEIGHBOURING_FREQUENCY = "add/remove one person: histogram L1 = L2 sensitivity 1"
NEIGHBOURING_MEAN = "replace one person's value, n public: mean sensitivity (high - low) / n"


def laplace_baseline(sensitivity: float, epsilon: float, confidence: float) -> dict:
    scale = sensitivity / epsilon
    return {"scale": scale, "std_error": math.sqrt(2) * scale, "ci_halfwidth": scale * math.log(1 / (1 - confidence))}


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    "The smallest sigma for which the Gaussian mechanism is (epsilon, delta)-DP (Balle & Wang 2018, Theorem 8)"

    def excess(sigma: float) -> float:
        a = sensitivity / (2 * sigma)
        b = epsilon * sigma / sensitivity
        return normal_cdf(a - b) - math.exp(epsilon) * normal_cdf(-a - b) - delta

    high = sensitivity
    while excess(high) > 0:
        high *= 2
    low = high / 2
    while excess(low) <= 0 and low > 1e-12 * sensitivity:
        low /= 2
    # bisection: excess falls as sigma grows; stop at a relative width of 1e-12
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        if excess(middle) > 0:
            low = middle
        else:
            high = middle
    return high


def normal_cdf(x: float) -> float:
    "Phi(x) through erfc, accurate in the lower tail where 1 + erf(x) would cancel"
    return 0.5 * math.erfc(-x / math.sqrt(2))


def gaussian_baseline(sensitivity: float, epsilon: float, delta: float, confidence: float) -> dict:
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return {"sigma": sigma, "std_error": sigma, "ci_halfwidth": z * sigma, "delta": delta,
            "calibration": "analytic Gaussian mechanism (Balle & Wang 2018)"}


def central_block(*, sensitivity: float, epsilon: float, confidence: float, delta: float | None,
                  ldp_std_error: float, neighbouring: str) -> dict:
    "The ``central_dp`` block of an estimate: Laplace (and Gaussian) errors and the LDP/central ratio"
    laplace = laplace_baseline(sensitivity, epsilon, confidence)
    block = {
        "neighbouring": neighbouring,
        "sensitivity": sensitivity,
        "std_error": laplace["std_error"],
        "ci_halfwidth": laplace["ci_halfwidth"],
        "laplace": laplace,
        "gaussian": gaussian_baseline(sensitivity, epsilon, delta, confidence) if delta is not None else None,
        "ldp_std_error": ldp_std_error,
        "ldp_to_central_ratio": ldp_std_error / laplace["std_error"] if laplace["std_error"] > 0 else None,
    }
    return block
