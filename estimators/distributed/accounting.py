"""Privacy accounting of the noise added to a secret-shared sum: exact (epsilon, delta) of each noise and calibration.

Neighbouring relation: replace-one (n public).  Every release publishes its exact report count, so "add or remove
one report" has no finite epsilon; two neighbouring batches hold the same number of reports and differ in one
person's value.  One report then moves the released vector by at most ``size`` in each of at most ``coordinates``
coordinates (a :class:`Shift`):

* count                  1 coordinate by 1                         (L1 = L2 = 1)
* sum of [0, M]          1 coordinate by M                         (L1 = L2 = M)
* histogram              2 coordinates by 1 (old bucket -1, new +1) (L1 = 2, L2 = sqrt 2)
* multihot, weight w     2w coordinates by 1                        (L1 = 2w, L2 = sqrt(2w))
* sumvec, length l, [0, M] l coordinates by M                       (L1 = l M, L2 = sqrt(l) M)

Every noise here is integer-valued, independent per coordinate, symmetric, and its pmf is log-concave, so the
privacy loss is monotone in each coordinate's shift and the full shift of every coordinate is the worst case; with
independent coordinates the shifts compose, and by symmetry a shift by -size is as private as one by +size.  Each
(epsilon, delta) below is the exact privacy profile of that worst case, not a bound (up to tail mass below 1e-30,
added to delta where the sum is truncated).

* Discrete Gaussian N_Z(0, sigma2): Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy"
  (NeurIPS 2020), Theorem 7 for one coordinate shifted by D: (eps, delta)-DP iff
  delta >= P[Y > eps sigma2/D - D/2] - e^eps P[Y > eps sigma2/D + D/2], Y ~ N_Z(0, sigma2).  For k coordinates
  each shifted by D the privacy loss, (k D^2 - 2 D S)/(2 sigma2), depends on the noises only through their sum S,
  so delta = sum_s max(0, P(S = s) - e^eps P(S = s - k D)) with the pmf of S the k-fold convolution (exact).
  delta is not monotone in sigma2 (the tail sets jump as eps sigma2/D crosses integers), so calibration scans a
  grid of relative spacing 2**-11 to 2**-10 upward from below the continuous analytic Gaussian's sigma^2 at
  L2 = sqrt(k) D (Balle & Wang, ICML 2018; ``estimators.central.analytic_gaussian_sigma``) and returns the first
  grid point that passes: never one that fails.  The gap to the continuous sigma is reported (``gaussian_gap``);
  it can be negative (the discrete Gaussian's variance is below sigma2, and its lattice helps at small sigma).
* Discrete Laplace with P(y) ~ exp(-|y|/t): pure (L1/t)-DP, so t = L1/eps (rounded up to a multiple of 2**-10 so
  the sampler's rational scale never falls below it).
* Centred Binomial noise Bin(N, 1/2) - N/2 (the mechanism of Dwork, Kenthapadi, McSherry, Mironov, Naor, "Our
  Data, Ourselves", EUROCRYPT 2006): the hockey-stick divergence of the noise and its shift, summed exactly over
  the product of the coordinates' pmfs (one coordinate: delta(eps) = sum_k max(0, P(Z = k) - e^eps P(Z = k - D));
  two: over every pair), and the smallest even N meeting the target (even so that N/2 is an integer; delta does
  not grow with N, adding a fair coin being post-processing).  This is tighter than the closed-form sufficient
  conditions of Dwork et al. 2006 (N >= 64 ln(2/delta)/eps^2, Lemma 2 of section 3, for one coordinate) and of
  Agarwal, Suresh, Yu, Kumar, McMahan, "cpSGD" (NeurIPS 2018, Theorem 1), both of which it satisfies.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from client_sdk.spec import Prio3Params

from ..central import analytic_gaussian_sigma

RATIONAL_DENOMINATOR = 1 << 10
LARGE_SIGMA2 = 1 << 12  # discrete Gaussian calibration: above, the scan starts close below the continuous sigma^2
TAIL_SIGMAS = 40  # exp(-40^2/2) ~ 1e-348: the discrete Gaussian beyond 40 sigma is below double precision
BINOMIAL_TAIL = 1e-30  # the pairwise Binomial sum leaves out at most this much mass per coordinate (added to delta)
DIRECT_CONVOLUTION = 1 << 12  # shorter pmfs are convolved directly (exact sums), longer ones through the FFT


@dataclass(frozen=True)
class Shift:
    "How far one replaced report can move the released vector: ``size`` in each of ``coordinates`` coordinates"

    coordinates: int = 1
    size: int = 1

    def __post_init__(self) -> None:
        for name in ("coordinates", "size"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{name} must be an integer of at least 1 (the aggregates are integers)")

    @property
    def l1(self) -> int:
        return self.coordinates * self.size

    @property
    def l2(self) -> float:
        return math.sqrt(self.coordinates) * self.size

    def describe(self) -> dict:
        return {"relation": "replace-one", "coordinates": self.coordinates, "size": self.size, "l1": self.l1,
                "l2": self.l2}


def replace_one_shift(prio3: str, *, max_measurement: int | None = None, length: int | None = None,
                      max_weight: int | None = None) -> Shift:
    "The worst move of one replaced report in a Prio3 type's release (the spec's table, ``Prio3Params.shift``)"
    return Shift(*Prio3Params(prio3, length=length, max_measurement=max_measurement, max_weight=max_weight).shift)


def as_shift(sensitivity: int | Shift) -> Shift:
    "An integer sensitivity D is one coordinate shifted by D"
    if isinstance(sensitivity, Shift):
        return sensitivity
    if not (isinstance(sensitivity, int) and not isinstance(sensitivity, bool) and sensitivity >= 1):
        raise ValueError("sensitivity must be an integer of at least 1 (the aggregates are integers)")
    return Shift(1, sensitivity)


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pmf of the sum of two independent noises from theirs (on consecutive integer grids): direct for short
    ones, through numpy's real FFT for long ones (O(n log n); its rounding can leave tiny negatives, clipped to 0)"""
    if min(len(a), len(b)) <= DIRECT_CONVOLUTION:
        return np.convolve(a, b)
    size = len(a) + len(b) - 1
    padded = 1 << (size - 1).bit_length()
    product = np.fft.irfft(np.fft.rfft(a, padded) * np.fft.rfft(b, padded), padded)[:size]
    return np.clip(product, 0.0, None)


def convolve_power(pmf: np.ndarray, times: int) -> np.ndarray:
    "The pmf of the sum of ``times`` independent copies (repeated squaring)"
    result: np.ndarray | None = None
    base = pmf
    while times:
        if times & 1:
            result = base if result is None else convolve(result, base)
        times >>= 1
        if times:
            base = convolve(base, base)
    assert result is not None
    return result


def round_up(value: float | Fraction) -> Fraction:
    "The smallest multiple of 2**-10 at or above ``value`` (exact: floats are binary rationals)"
    return Fraction(math.ceil(Fraction(value) * RATIONAL_DENOMINATOR), RATIONAL_DENOMINATOR)


def _check(epsilon: float, delta: float | None, sensitivity: int | Shift) -> Shift:
    shift = as_shift(sensitivity)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon must be positive and finite")
    if delta is not None and not 0 < delta < 1:
        raise ValueError("delta must be strictly between 0 and 1")
    return shift


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


def discrete_gaussian_delta(sigma2: float, epsilon: float, sensitivity: int | Shift) -> float:
    "The exact delta of N_Z(0, sigma2) noise per coordinate at ``epsilon`` for a shift (see the module doc)"
    shift = as_shift(sensitivity)
    size = shift.size
    if shift.coordinates == 1:  # CKS 2020, Theorem 7
        half = int(math.ceil(TAIL_SIGMAS * math.sqrt(sigma2) + epsilon * sigma2 / size + size)) + 1
        grid = np.arange(-half, half + 1)
        pmf = discrete_gaussian_pmf(sigma2, grid)
        a = epsilon * sigma2 / size - size / 2
        b = epsilon * sigma2 / size + size / 2
        # P[Y > a] - e^eps P[Y > b] = P[a < Y <= b] + (1 - e^eps) P[Y > b]: no cancellation between two tails
        between = pmf[(grid > a) & (grid <= b)].sum()
        above = pmf[grid > b].sum()
        return float(max(between + (1 - math.exp(epsilon)) * above, 0.0))
    half = int(math.ceil(TAIL_SIGMAS * math.sqrt(sigma2))) + 1
    one = discrete_gaussian_pmf(sigma2, np.arange(-half, half + 1))
    total = convolve_power(one / one.sum(), shift.coordinates)  # S on -k half .. k half
    moved = shift.coordinates * size
    shifted = np.zeros_like(total)
    shifted[moved:] = total[:-moved]  # P(S + k D = s): the neighbour's sum
    return float(np.clip(total - math.exp(epsilon) * shifted, 0.0, None).sum())


@functools.lru_cache(maxsize=256)
def calibrate_discrete_gaussian(epsilon: float, delta: float, sensitivity: int | Shift) -> Fraction:
    """The smallest variance parameter sigma2 on a fine grid for which the discrete Gaussian meets (epsilon, delta).

    delta is not monotone in sigma2 (the tail sets of Theorem 7 jump as eps sigma2 / D crosses integers: at
    eps 4, D 1, delta is 4.76e-7 at sigma2 = 1.4245 and 5.84e-7 at 1.5, so at a target of 5e-7 the first passes
    and the second fails; at 1e-6 the crossing is one point, 1.36896), so no bisection or upward ladder finds
    the smallest.  The grid: multiples of h = 2**(floor(log2 s) - 10), s the continuous analytic
    Gaussian's sigma^2 at L2 = sqrt(k) D, and never finer than 2**-10 (the sampler's rationals): a relative
    spacing between 2**-11 and 2**-10.  Every grid point from a start below s upward is checked in turn and the
    first that passes is returned, so it passes and no grid point between the start and it does.  One coordinate:
    the start is s / 2 for s <= 2**12 (below s / 2 none has passed in any case we measured: the smallest ratio was
    0.85, at eps 10), and s (1 - 2**-6) above: there the sawtooth's period in sigma2, D / eps, is a relative 1e-4
    or less of s and the discrete Gaussian's privacy curve is the continuous one's up to its lattice term
    exp(-2 pi^2 sigma2), so the start lies hundreds of periods below the crossing.  Several coordinates (each
    delta a convolution): the start is s (1 - 2**-6)."""
    shift = _check(epsilon, delta, sensitivity)
    sigma = analytic_gaussian_sigma(shift.l2, epsilon, delta)
    continuous = Fraction(sigma * sigma)
    step = Fraction(2) ** max(math.floor(math.log2(sigma * sigma)) - 10, -10)
    small = continuous <= LARGE_SIGMA2 and shift.coordinates == 1
    start = continuous / 2 if small else continuous * (1 - Fraction(1, 64))
    sigma2 = max(step, math.floor(start / step) * step)
    while discrete_gaussian_delta(float(sigma2), epsilon, shift) > delta:
        sigma2 += step
    return sigma2


def gaussian_gap(epsilon: float, delta: float, sensitivity: int | Shift) -> float:
    "sigma of the calibrated discrete Gaussian over the continuous analytic Gaussian's, minus 1"
    shift = as_shift(sensitivity)
    continuous = analytic_gaussian_sigma(shift.l2, epsilon, delta)
    return math.sqrt(float(calibrate_discrete_gaussian(epsilon, delta, shift))) / continuous - 1


# -- discrete Laplace ----------------------------------------------------------------------------------------------

def calibrate_discrete_laplace(epsilon: float, sensitivity: int | Shift) -> Fraction:
    "The scale t of P(y) ~ exp(-|y|/t) that makes the release eps-DP: t = L1/eps, rounded up"
    shift = _check(epsilon, None, sensitivity)
    return round_up(Fraction(shift.l1) / Fraction(epsilon))


def discrete_laplace_epsilon(scale: Fraction, sensitivity: int | Shift) -> float:
    "The pure epsilon of discrete Laplace noise of ``scale``: L1/t (the pmf ratio at the full shift)"
    return float(Fraction(as_shift(sensitivity).l1) / scale)


def discrete_laplace_variance(scale: Fraction) -> float:
    "2a/(1-a)^2 with a = exp(-1/t) (CKS 2020, section 2)"
    a = math.exp(-1 / float(scale))
    return 2 * a / (1 - a) ** 2


# -- centred Binomial ----------------------------------------------------------------------------------------------

def binomial_delta(coins: int, epsilon: float, sensitivity: int | Shift) -> float:
    """The exact delta of Bin(coins, 1/2) noise per coordinate at ``epsilon`` for a shift of one or two coordinates
    (hockey-stick divergence; the pair's sum leaves out at most 1e-30 of mass per coordinate, added)"""
    shift = as_shift(sensitivity)
    size = shift.size
    if coins < 1:
        return 1.0
    # imported here: scipy.stats costs 1.7 s of import (640 modules), and only the coins noise needs it
    from scipy import stats  # here, not at import: only Binomial noise needs it, and scipy.stats costs a second of CPU

    if shift.coordinates == 1:
        reach = 60 * math.isqrt(coins) + 60  # beyond 60 sd of the mean the pmf is below exp(-7200)
        k = np.arange(max(0, coins // 2 - reach), min(coins, coins // 2 + reach) + size + 1)
        log_p = stats.binom.logpmf(k, coins, 0.5)
        log_q = stats.binom.logpmf(k - size, coins, 0.5) + epsilon
        excess = np.exp(log_p) - np.exp(np.minimum(log_q, 700.0))
        return float(excess[excess > 0].sum())
    if shift.coordinates != 2:
        raise ValueError("Binomial accounting covers a shift of one or two coordinates (a count, a histogram)")
    # Hoeffding: P(|Z - N/2| > t) <= 2 exp(-2 t^2 / N); every y outside the window is left out, its mass added
    reach = math.ceil(math.sqrt(coins * math.log(2 / BINOMIAL_TAIL) / 2))
    k = np.arange(max(0, coins // 2 - reach), min(coins, coins // 2 + reach) + size + 1)
    log_p = stats.binom.logpmf(k, coins, 0.5)
    log_q = stats.binom.logpmf(k - size, coins, 0.5)
    total = 0.0
    for lp, lq in zip(log_p, log_q):  # one row of the pair's grid at a time: memory O(window)
        excess = np.exp(lp + log_p) - np.exp(np.minimum(lq + log_q + epsilon, 700.0))
        total += float(excess[excess > 0].sum())
    return total + 2 * BINOMIAL_TAIL


def dwork_2006_coins(epsilon: float, delta: float) -> int:
    "The closed-form sufficient number of coins of Dwork et al. 2006 for sensitivity 1: 64 ln(2/delta)/eps^2"
    return math.ceil(64 * math.log(2 / delta) / epsilon**2)


def calibrate_coins(epsilon: float, delta: float, sensitivity: int | Shift) -> int:
    "The smallest even N for which Bin(N, 1/2) noise is (epsilon, delta)-DP (delta does not grow with N)"
    shift = _check(epsilon, delta, sensitivity)
    sigma = analytic_gaussian_sigma(shift.l2, epsilon, delta)
    low, high = 0, max(1, math.ceil(2 * sigma * sigma))  # in pairs of coins: N = 2 * pairs
    while binomial_delta(2 * high, epsilon, shift) > delta:
        low, high = high, high * 2
    while high - low > 1:  # invariant: delta(2 low) > target or low is the start; delta(2 high) <= target
        middle = (low + high) // 2
        if binomial_delta(2 * middle, epsilon, shift) > delta:
            low = middle
        else:
            high = middle
    return 2 * high
