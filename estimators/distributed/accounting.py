"""Privacy accounting of the noise added to a secret-shared sum: exact (epsilon, delta) of each noise and calibration.

Neighbouring relations (Dwork & Roth 2014, ch. 2):

* Histogram and count: add or remove one person.  One coordinate changes by 1, so L1 = L2 sensitivity 1, and with
  independent noise per coordinate the release is exactly as private as one coordinate shifted by 1.  The exact
  number of reports must then not be released beside the noisy counts (the total of the noisy counts replaces it).
* Sum of integers in [0, bound] (a bounded mean): replace one person's value, n public.  The sum changes by at most
  ``bound``: L1 = L2 sensitivity ``bound``.

Every noise here is integer-valued and symmetric, and its pmf is log-concave, so the privacy loss of a shift by s
is monotone in s and the shift by the full sensitivity is the worst case: each (epsilon, delta) below is the exact
privacy profile of that shift, not a bound.

* Discrete Gaussian N_Z(0, sigma2): Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy"
  (NeurIPS 2020), Theorem 7: for an integer sensitivity D the mechanism is (eps, delta)-DP iff
  delta >= P[Y > eps sigma2/D - D/2] - e^eps P[Y > eps sigma2/D + D/2], Y ~ N_Z(0, sigma2).
  delta is not monotone in sigma2 (the tail sets jump as eps sigma2/D crosses integers), so calibration scans a
  grid of relative spacing 2**-11 to 2**-10 upward from below the continuous analytic Gaussian's sigma^2 (Balle
  & Wang, ICML 2018; ``estimators.central.analytic_gaussian_sigma``) and returns the first grid point that
  passes: the smallest there, and never one that fails.  The gap to the continuous sigma is reported (``gaussian_gap``);
  it can be negative (the discrete Gaussian's variance is below sigma2, and its lattice helps at small sigma).
* Discrete Laplace with P(y) ~ exp(-|y|/t): pure (D/t)-DP for L1 sensitivity D, so t = D/eps (rounded up to a
  multiple of 2**-10 so the sampler's rational scale never falls below it).
* Binomial coin noise Bin(N, 1/2) (the "Our Data, Ourselves" construction of Dwork, Kenthapadi, McSherry, Mironov,
  Naor, EUROCRYPT 2006): we compute the hockey-stick divergence of Bin(N, 1/2) and its shift by D exactly,
  delta(eps) = sum_k max(0, P(Z = k) - e^eps P(Z = k - D)) (the reverse direction is equal, Bin(N, 1/2) being
  symmetric), and take the smallest N meeting the target.  This is tighter than the closed-form sufficient
  conditions of Dwork et al. 2006 (N >= 64 ln(2/delta)/eps^2, Lemma 2 of section 3) and of Agarwal, Suresh, Yu,
  Kumar, McMahan, "cpSGD" (NeurIPS 2018, Theorem 1), both of which it satisfies (tests check the 2006 bound).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from ..central import analytic_gaussian_sigma

RATIONAL_DENOMINATOR = 1 << 10
LARGE_SIGMA2 = 1 << 12  # discrete Gaussian calibration: above, the scan starts close below the continuous sigma^2
TAIL_SIGMAS = 40  # exp(-40^2/2) ~ 1e-348: the discrete Gaussian beyond 40 sigma is below double precision


def round_up(value: float | Fraction) -> Fraction:
    "The smallest multiple of 2**-10 at or above ``value`` (exact: floats are binary rationals)"
    return Fraction(math.ceil(Fraction(value) * RATIONAL_DENOMINATOR), RATIONAL_DENOMINATOR)


def _check(epsilon: float, delta: float | None, sensitivity: int) -> None:
    if not (isinstance(sensitivity, int) and sensitivity >= 1):
        raise ValueError("sensitivity must be an integer of at least 1 (the aggregates are integers)")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon must be positive and finite")
    if delta is not None and not 0 < delta < 1:
        raise ValueError("delta must be strictly between 0 and 1")


# -- discrete Gaussian ---------------------------------------------------------------------------------------------

def discrete_gaussian_pmf(sigma2: float, support: np.ndarray) -> np.ndarray:
    "P(Y = y) of N_Z(0, sigma2) at the integers ``support``, normalised over +-40 sigma"
    half = int(math.ceil(TAIL_SIGMAS * math.sqrt(sigma2))) + 1
    grid = np.arange(-half, half + 1, dtype=np.float64)
    normaliser = np.exp(-grid * grid / (2 * sigma2)).sum()
    values = np.asarray(support, dtype=np.float64)
    return np.exp(-values * values / (2 * sigma2)) / normaliser


def discrete_gaussian_variance(sigma2: float) -> float:
    "E[Y^2] of N_Z(0, sigma2): at most sigma2 (CKS 2020, Proposition 5), by direct summation"
    half = int(math.ceil(TAIL_SIGMAS * math.sqrt(sigma2))) + 1
    grid = np.arange(-half, half + 1, dtype=np.float64)
    weights = np.exp(-grid * grid / (2 * sigma2))
    return float((grid * grid * weights).sum() / weights.sum())


def discrete_gaussian_delta(sigma2: float, epsilon: float, sensitivity: int) -> float:
    "The exact delta of N_Z(0, sigma2) noise at ``epsilon`` for an integer sensitivity (CKS 2020, Theorem 7)"
    half = int(math.ceil(TAIL_SIGMAS * math.sqrt(sigma2) + epsilon * sigma2 / sensitivity + sensitivity)) + 1
    grid = np.arange(-half, half + 1)
    pmf = discrete_gaussian_pmf(sigma2, grid)
    a = epsilon * sigma2 / sensitivity - sensitivity / 2
    b = epsilon * sigma2 / sensitivity + sensitivity / 2
    # P[Y > a] - e^eps P[Y > b] = P[a < Y <= b] + (1 - e^eps) P[Y > b]: no cancellation between two tails
    between = pmf[(grid > a) & (grid <= b)].sum()
    above = pmf[grid > b].sum()
    return float(max(between + (1 - math.exp(epsilon)) * above, 0.0))


@functools.lru_cache(maxsize=256)
def calibrate_discrete_gaussian(epsilon: float, delta: float, sensitivity: int) -> Fraction:
    """The smallest variance parameter sigma2 on a fine grid for which the discrete Gaussian meets (epsilon, delta).

    delta is not monotone in sigma2 (the tail sets of Theorem 7 jump as eps sigma2 / D crosses integers: at
    eps 4, delta 1e-6, D 1, sigma2 = 1.37 passes and 1.4245 fails just below), so no bisection or upward ladder
    finds the smallest.  The grid: multiples of h = 2**(floor(log2 s) - 10), s the continuous analytic
    Gaussian's sigma^2, and never finer than 2**-10 (the sampler's rationals): a relative spacing between 2**-11
    and 2**-10.  Every grid point from a start below s upward is checked in turn and the first that passes is
    returned, so it passes and no grid point between the start and it does.  The start is s / 2 for s <= 2**12
    (below s / 2 none has passed in any case we measured: the smallest ratio was 0.85, at eps 10), and
    s (1 - 2**-6) above: there the sawtooth's period in sigma2, D / eps, is a relative 1e-4 or less of s and the
    discrete Gaussian's privacy curve is the continuous one's up to its lattice term exp(-2 pi^2 sigma2), so the
    start lies hundreds of periods below the crossing."""
    _check(epsilon, delta, sensitivity)
    sigma = analytic_gaussian_sigma(float(sensitivity), epsilon, delta)
    continuous = Fraction(sigma * sigma)
    step = Fraction(2) ** max(math.floor(math.log2(sigma * sigma)) - 10, -10)
    start = continuous / 2 if continuous <= LARGE_SIGMA2 else continuous * (1 - Fraction(1, 64))
    sigma2 = max(step, math.floor(start / step) * step)
    while discrete_gaussian_delta(float(sigma2), epsilon, sensitivity) > delta:
        sigma2 += step
    return sigma2


def gaussian_gap(epsilon: float, delta: float, sensitivity: int) -> float:
    "sigma of the calibrated discrete Gaussian over the continuous analytic Gaussian's, minus 1"
    continuous = analytic_gaussian_sigma(float(sensitivity), epsilon, delta)
    return math.sqrt(float(calibrate_discrete_gaussian(epsilon, delta, sensitivity))) / continuous - 1


# -- discrete Laplace ----------------------------------------------------------------------------------------------

def calibrate_discrete_laplace(epsilon: float, sensitivity: int) -> Fraction:
    "The scale t of P(y) ~ exp(-|y|/t) that makes an L1-sensitivity-D query eps-DP: t = D/eps, rounded up"
    _check(epsilon, None, sensitivity)
    return round_up(Fraction(sensitivity) / Fraction(epsilon))


def discrete_laplace_epsilon(scale: Fraction, sensitivity: int) -> float:
    "The pure epsilon of discrete Laplace noise of ``scale``: D/t (the pmf ratio at a shift of D)"
    return float(Fraction(sensitivity) / scale)


def discrete_laplace_variance(scale: Fraction) -> float:
    "2a/(1-a)^2 with a = exp(-1/t) (CKS 2020, section 2)"
    a = math.exp(-1 / float(scale))
    return 2 * a / (1 - a) ** 2


# -- binomial coins ------------------------------------------------------------------------------------------------

def binomial_delta(coins: int, epsilon: float, sensitivity: int) -> float:
    "The exact delta of Bin(coins, 1/2) noise at ``epsilon`` for an integer sensitivity (hockey-stick divergence)"
    if coins < 1:
        return 1.0
    from scipy import stats  # here, not at import: only coin noise needs it, and scipy.stats costs a second of CPU

    reach = 60 * math.isqrt(coins) + 60  # beyond 60 sd of the mean the pmf is below exp(-7200)
    k = np.arange(max(0, coins // 2 - reach), min(coins, coins // 2 + reach) + sensitivity + 1)
    log_p = stats.binom.logpmf(k, coins, 0.5)
    log_q = stats.binom.logpmf(k - sensitivity, coins, 0.5) + epsilon
    excess = np.exp(log_p) - np.exp(np.minimum(log_q, 700.0))
    return float(excess[excess > 0].sum())


def dwork_2006_coins(epsilon: float, delta: float) -> int:
    "The closed-form sufficient number of coins of Dwork et al. 2006 for sensitivity 1: 64 ln(2/delta)/eps^2"
    return math.ceil(64 * math.log(2 / delta) / epsilon**2)


def calibrate_coins(epsilon: float, delta: float, sensitivity: int) -> int:
    "The smallest N for which Bin(N, 1/2) noise is (epsilon, delta)-DP (delta falls as N grows: post-processing)"
    _check(epsilon, delta, sensitivity)
    sigma = analytic_gaussian_sigma(float(sensitivity), epsilon, delta)
    low, high = 1, max(2, math.ceil(4 * sigma * sigma))
    while binomial_delta(high, epsilon, sensitivity) > delta:
        low, high = high, high * 2
    while high - low > 1:  # invariant: delta(low) > target or low is the start; delta(high) <= target
        middle = (low + high) // 2
        if binomial_delta(middle, epsilon, sensitivity) > delta:
            low = middle
        else:
            high = middle
    return high
