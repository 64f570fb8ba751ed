"""What a trusted curator would get at the same epsilon: the central-DP baselines, under one neighbouring relation.

The relation, everywhere in the project: **replace-one (n public)**, named ``"replace-one"`` in JSON.  Two datasets
are neighbours when one person's value is replaced by another; n is the same in both and published.  A local
estimate publishes n and divides by it, so this is the relation its central counterpart must use (Dwork & Roth,
The Algorithmic Foundations of Differential Privacy, 2014, ch. 2-3):

* a histogram (fractions over n): one count falls by 1 and another rises by 1, so L1 sensitivity 2/n and L2
  sensitivity sqrt(2)/n on the fraction scale;
* a single count (or one bucket read alone): sensitivity 1, 1/n on the fraction scale;
* a mean of values in [low, high] over n: sensitivity (high - low)/n (L1 = L2).

One central mechanism per estimate (:func:`central_mechanism`): the Gaussian mechanism at the estimate's delta,
calibrated exactly for any eps with the analytic Gaussian mechanism (Balle & Wang, ICML 2018: the smallest sigma
with Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) <= delta, D the L2 sensitivity), or the Laplace mechanism
(Dwork, McSherry, Nissim, Smith 2006: Lap(b), b = L1 sensitivity/eps, standard error sqrt(2) b, interval +- b
ln(1/(1 - confidence))) for pure epsilon (no delta).  The block shows the other beside it.

The ratio compares like with like, and :func:`ldp_to_central_ratio` is its one definition (the estimates, the
planner, the reports and the docs all call it).  It is the privacy-noise price: the local estimate's noise-only
standard error (its error as an estimate for the users who reported, target "reported") over the central
mechanism's noise standard error.  For a histogram the local side is :func:`histogram_noise_std_error`, the root
mean square over the d values, which is the same for every distribution of the users' values.  It grows as
sqrt(n).  ``total`` states the ratio with the sampling variance on both sides (target "population": users as a
sample from a population), which depends on the distribution (at the estimated frequencies in an estimate) and
does not grow as sqrt(n) once sampling dominates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

RELATION = "replace-one"
RELATION_TEXT = "replace-one (n public)"
TARGET_POPULATION = "population"
TARGET_REPORTED = "reported"
TARGETS = {
    TARGET_POPULATION: "the population the reporting users are sampled from (privacy noise and sampling)",
    TARGET_REPORTED: "the users who reported (privacy noise only)",
}
RATIO_OF = ("privacy noise only: local-DP standard error over central DP's, same epsilon, replace-one (n public); "
            "for a histogram the root mean square over its values, the same for every distribution")
TOTAL_RATIO_OF = ("total error: privacy noise and sampling users from a population, on both sides, at the estimated "
                  "frequencies (it depends on the distribution)")


@dataclass(frozen=True)
class Sensitivity:
    "L1 and L2 sensitivity of a query under replace-one, on the scale of the estimate"

    l1: float
    l2: float
    query: str

    def describe(self) -> dict:
        return {"relation": RELATION, "query": self.query, "l1": self.l1, "l2": self.l2}


def histogram_sensitivity(n: int) -> Sensitivity:
    "Fractions of a histogram over n public: one count down by 1, another up by 1"
    return Sensitivity(2.0 / n, math.sqrt(2.0) / n, "histogram of fractions over n")


def count_sensitivity(n: int) -> Sensitivity:
    "One fraction (a single count over n): replacing a value moves it by at most 1"
    return Sensitivity(1.0 / n, 1.0 / n, "a single count's fraction over n")


def mean_sensitivity(low: float, high: float, n: int) -> Sensitivity:
    "A mean of values in [low, high] over n public"
    width = (high - low) / n
    return Sensitivity(width, width, "mean over n of values in the range")


def histogram_noise_std_error(p_star: float, q_star: float, domain_size: int, n: int) -> float:
    """The local side of a histogram's ratio: the root mean square over the d values of the privacy-noise standard
    error (target "reported").  Value v's fixed-data variance is [f_v p*(1-p*) + (1-f_v) q*(1-q*)] / (n (p*-q*)^2)
    (Wang et al. 2017, section 4); the f_v sum to 1, so its mean over the values is
    [p*(1-p*) + (d-1) q*(1-q*)] / (d n (p*-q*)^2) whatever the distribution."""
    variance = (p_star * (1 - p_star) + (domain_size - 1) * q_star * (1 - q_star)) / (domain_size * n)
    return math.sqrt(variance) / abs(p_star - q_star)


def ldp_to_central_ratio(ldp_noise_std_error: float, central_std_error: float) -> float | None:
    """The LDP/central ratio, the one definition: local-DP privacy-noise standard error over central DP's at the same
    epsilon, replace-one (``None`` where central DP has no noise)"""
    return ldp_noise_std_error / central_std_error if central_std_error > 0 else None


def ratio_text(ratio: float) -> str:
    "The LDP/central ratio as every format (the reports, the planner, the demo) prints it"
    return f"{ratio:,.1f}"


def central_mechanism(delta: float | None, family: str | None = None) -> str:
    """The one central mechanism an estimate's pages show: "gaussian" at the estimate's delta, "laplace" for pure
    epsilon (no delta) or when the compared noise is Laplace (``family``)"""
    return "gaussian" if delta and family != "laplace" else "laplace"


def laplace_baseline(sensitivity: float, epsilon: float, confidence: float) -> dict:
    "Laplace mechanism for an L1 sensitivity: scale, standard error, the interval holding ``confidence`` of it"
    scale = sensitivity / epsilon
    return {"mechanism": "Laplace", "scale": scale, "std_error": math.sqrt(2) * scale,
            "ci_halfwidth": scale * math.log(1 / (1 - confidence))}


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
    "Gaussian mechanism for an L2 sensitivity, calibrated with the analytic Gaussian mechanism"
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return {"mechanism": "Gaussian", "sigma": sigma, "std_error": sigma, "ci_halfwidth": z * sigma, "delta": delta,
            "calibration": "analytic Gaussian mechanism (Balle & Wang 2018)"}


def mechanism_name(mechanism: str, delta: float | None) -> str:
    "How every page names the central mechanism"
    if mechanism == "gaussian":
        return f"Gaussian, analytic (Balle & Wang 2018), delta {delta:.3g}"
    return "Laplace"


def central_noise(sensitivity: Sensitivity, epsilon: float, delta: float | None, confidence: float,
                  family: str | None = None) -> dict:
    "Both mechanisms' figures and the chosen one's (``std_error``, ``ci_halfwidth``, ``mechanism``)"
    laplace = laplace_baseline(sensitivity.l1, epsilon, confidence)
    gaussian = gaussian_baseline(sensitivity.l2, epsilon, delta, confidence) if delta else None
    chosen = central_mechanism(delta, family)
    figures = gaussian if chosen == "gaussian" and gaussian is not None else laplace
    return {"mechanism": mechanism_name(chosen, delta), "std_error": figures["std_error"],
            "ci_halfwidth": figures["ci_halfwidth"], "laplace": laplace, "gaussian": gaussian}


def central_block(*, sensitivity: Sensitivity, epsilon: float, confidence: float, delta: float | None,
                  ldp_noise_std_error: float, ldp_total_std_error: float | None = None,
                  sampling_std_error: float | None = None, family: str | None = None) -> dict:
    """The ``central_dp`` block of an estimate: the central mechanism's error under replace-one and the ratios.

    ``ldp_noise_std_error`` is the local estimate's privacy-noise standard error (target "reported");
    ``ldp_total_std_error`` its standard error with sampling (target "population") and ``sampling_std_error`` the
    sampling part alone, which a central estimate carries too: the total ratio divides by
    sqrt(central noise^2 + sampling^2)."""
    noise = central_noise(sensitivity, epsilon, delta, confidence, family)
    central = noise["std_error"]
    block = {
        "relation": RELATION,
        "relation_text": RELATION_TEXT,
        "sensitivity": sensitivity.describe(),
        **noise,
        "ldp_std_error": ldp_noise_std_error,
        "ldp_to_central_ratio": ldp_to_central_ratio(ldp_noise_std_error, central),
        "ratio_of": RATIO_OF,
    }
    if ldp_total_std_error is not None and sampling_std_error is not None:
        central_total = math.sqrt(central * central + sampling_std_error * sampling_std_error)
        block["total"] = {"ldp_std_error": ldp_total_std_error, "central_std_error": central_total,
                          "ratio": ldp_total_std_error / central_total if central_total > 0 else None,
                          "ratio_of": TOTAL_RATIO_OF}
    return block
