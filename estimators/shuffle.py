"""Privacy amplification by shuffling: the central (epsilon, delta) of n shuffled epsilon0-LDP reports.

The bound is the one of Feldman, McMillan, Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal Analysis
of Privacy Amplification by Shuffling" (FOCS 2021), Theorem 3.2, the general one: it holds for **any**
epsilon0-LDP local randomizer (each device's, even chosen adaptively from the earlier reports), for n reports
shuffled uniformly at random by a party that strips who sent which, under replace-one neighbours (two datasets of
the same, public, size n differing in one person's value: the project's relation, ``estimators.central``).  It is
not specialised to one randomizer (the paper's tighter variants for k-ary randomized response are not used), so it
is an upper bound for every mechanism of the project at its local epsilon0.

The theorem: the shuffled views of the two neighbouring datasets are post-processings of the pair

    P = (A + D, C - A + 1 - D),   Q = (A + 1 - D, C - A + D),
    C ~ Bin(n - 1, e^-epsilon0),  A ~ Bin(C, 1/2),  D ~ Bernoulli(e^epsilon0 / (1 + e^epsilon0)),

(every other report is, with probability e^-epsilon0, a "clone" of the differing person's report under one
dataset or the other), so the shuffled mechanism is (epsilon, delta)-DP for every epsilon with
delta >= D_{e^epsilon}(P || Q), the hockey-stick divergence.  :func:`shuffle_delta` computes that divergence
**exactly** (no step blocks, no early stop; the sum over C leaves out a lower tail below 1e-12 delta, added in
full, and bounds the part above its window as below): given C = c the first coordinate K = A + D has
P(K = k) = a b(k - 1) + (1 - a) b(k), Q(K = k) = (1 - a) b(k - 1) + a b(k), a = e^epsilon0 / (1 + e^epsilon0),
b the Bin(c, 1/2) pmf; their ratio increases in k,
so the divergence given c is A_e b(t) - (e^epsilon - 1) P(Bin(c, 1/2) > t) with t = floor(R (c + 1) / (1 + R)),
R = (e^epsilon a - (1 - a)) / (a - e^epsilon (1 - a)), A_e = a - e^epsilon (1 - a).  It falls with c (one more
clone is an independent fair coin added, a post-processing), so the part of Bin(n - 1, e^-epsilon0) above the
summed window is bounded by its mass times the divergence at the window's top.  P and Q are mirror images
(swap the coordinates), so D(P || Q) = D(Q || P).  The sum is one vectorised pass over c (scipy's ``bdtrc``).

:func:`amplified_epsilon` is the smallest epsilon with that divergence at most delta (Brent's method on log
delta, then stepped up until it passes: the figure returned passes, so it is an upper bound on the shuffled
mechanism's epsilon), never above epsilon0 (shuffling is a post-processing of the epsilon0-DP reports).  The
paper's numerical method (the binary search of apple/ml-shuffling-amplification) bounds the same divergence from
above and below in blocks of ``step`` values of c, visited outward from C's mean until the mass not yet visited
falls below the delta summed so far: its lower bound leaves that mass out, its upper bound adds it in full (at
divergence 1), so even at ``step`` 1 its upper bound sees up to twice the divergence and lies 0.1-5% above this
figure, which lies between its two bounds up to their search resolution and, at ``step`` 1, within a relative
1e-3 of its lower bound (benchmarks/shuffle_amplification.py measures it; tests/estimators/test_shuffle.py checks
the vendored figures).  This is the same theorem's bound, computed without the early stop: a valid upper bound.

:func:`closed_form_epsilon` is the paper's Theorem 3.1: for epsilon0 <= ln(n / (16 ln(4/delta))),
a = 8 sqrt(e^epsilon0 ln(4/delta) / n), c = 8 e^epsilon0 / n, epsilon' = ln(1 + a + c) and
epsilon = ln(1 + (1 - e^-epsilon0) / (1 + e^(-epsilon0 - epsilon')) (a + c)); it is looser than the numerical
figure (0.5378 against 0.17 at n = 1e5, epsilon0 = 4, delta = 1e-6), and outside its range it states epsilon0.
:func:`local_epsilon_for` inverts the numerical bound: the largest epsilon0 whose amplified epsilon at n and delta
is at most a target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

BOUND = "Feldman, McMillan, Talwar (FOCS 2021), Theorem 3.2: exact hockey-stick divergence of its clone pair"
HOLDS_FOR = ("any epsilon0-LDP local randomizer (adaptive ones too), n reports shuffled uniformly at random with "
             "the senders stripped, replace-one neighbours (n public)")
CLOSED_FORM = "Feldman, McMillan, Talwar (FOCS 2021), Theorem 3.1, valid for epsilon0 <= ln(n / (16 ln(4/delta)))"
TAIL_FRACTION = 1e-12  # the mass of C left out of the sum is at most this fraction of delta (and is added in full)
ANCHOR = 64  # the Bin(c, 1/2) tails: one bdtrc call per 64 values of c, the exact recurrence between
LOG2 = math.log(2)
EPSILON_TOLERANCE = 1e-9  # relative: Brent's method stops within it, then steps up until the divergence passes


def _check_count(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("n must be an integer (the number of shuffled reports)")
    if n < 1:
        raise ValueError("n must be at least 1")


def _check_positive(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be positive and finite")


def _check_delta(delta: float) -> None:
    if not isinstance(delta, (int, float)) or isinstance(delta, bool):
        raise TypeError("delta must be a number")
    if not 0 < delta < 1:
        raise ValueError("delta must be strictly between 0 and 1")


class ClonePair:
    """The clone pair (P, Q) of Theorem 3.2 for epsilon0 and n, with the distribution of C summed once.

    ``window`` holds the values of C summed, ``weights`` their Bin(n - 1, e^-epsilon0) probabilities; ``below``
    the mass left out below (at most ``tail``: it enters the divergence in full) and above (it enters at the
    divergence of the window's top, an upper bound as the divergence falls with c)."""

    def __init__(self, epsilon0: float, n: int, *, tail: float = 1e-30) -> None:
        _check_positive("epsilon0", epsilon0)
        _check_count(n)
        self.epsilon0 = float(epsilon0)
        self.n = n
        self.alpha = 1 / (1 + math.exp(-self.epsilon0))  # e^eps0 / (1 + e^eps0) without overflow
        trials, p = n - 1, math.exp(-self.epsilon0)
        mean, sd = trials * p, math.sqrt(trials * p * (1 - p))
        # above the window the divergence is at most its value at the top (it falls with c), so the window reaches
        # 6 sd up (the mass beyond, below 1e-9, enters at that value); below it, until the mass left is below tail
        reach = 6.0
        high = min(trials, math.ceil(mean + 6 * sd) + 2)
        above = float(special.bdtrc(high, trials, p)) if high < trials else 0.0
        while True:
            low = max(0, math.floor(mean - reach * sd) - 2)
            below = float(special.bdtr(low - 1, trials, p)) if low > 0 else 0.0
            if below <= tail or low == 0:
                break
            reach += 1.0
        self.window = np.arange(low, high + 1, dtype=np.int64)
        c = self.window
        log_weights = (special.gammaln(trials + 1) - special.gammaln(c + 1) - special.gammaln(trials - c + 1)
                       + special.xlogy(c, p) + special.xlog1py(trials - c, -p))
        self.weights = np.exp(log_weights)
        self.below, self.above = below, above
        self._log_factorial = special.gammaln(c + 1)

    def conditional_delta(self, epsilon: float) -> np.ndarray:
        "D_{e^epsilon}(P_c || Q_c) for every c of the window (falls with c)"
        if epsilon >= self.epsilon0:
            return np.zeros(len(self.window))
        e = math.exp(epsilon)
        a = self.alpha
        # a - e^eps (1 - a) = a (1 - e^(eps - eps0)) and e^eps a - (1 - a) = (1 - a) (e^(eps + eps0) - 1), through
        # expm1: as eps nears eps0 the plain differences cancel (the reference's onestep loses digits there)
        weight_low = -a * math.expm1(epsilon - self.epsilon0)
        ratio = (1 - a) * math.expm1(epsilon + self.epsilon0) / weight_low
        c = self.window
        # k > t with t = floor(ratio (c + 1) / (1 + ratio)) in 0..c; t + 1 rises by 0 or 1 from one c to the next
        t = np.minimum(np.floor(ratio / (1 + ratio) * (c + 1)).astype(np.int64), c)
        pmf_t = self._half_pmf(c, t)
        # sum over k > t of P(k) - e^eps Q(k) = a' b(t) - (e^eps - 1) P(Bin(c, 1/2) > t), a' = a - e^eps (1 - a)
        return np.clip(weight_low * pmf_t - (e - 1) * self._half_tail(c, t, pmf_t), 0.0, None)

    def _half_pmf(self, c: np.ndarray, t: np.ndarray) -> np.ndarray:
        "P(Bin(c, 1/2) = t)"
        return np.exp(self._log_factorial - special.gammaln(t + 1) - special.gammaln(c - t + 1) - c * LOG2)

    @staticmethod
    def _half_tail(c: np.ndarray, t: np.ndarray, pmf_t: np.ndarray) -> np.ndarray:
        """P(Bin(c, 1/2) > t) along consecutive c: ``bdtrc`` every ANCHOR values of c, and between them the exact
        recurrence of adding one fair coin, P(Bin(c + 1) > t) = P(Bin(c) > t) + P(Bin(c) = t) / 2, less
        P(Bin(c + 1) = t + 1) where t steps up (a cumulative sum within each block: rounding stays that of 64 terms)"""
        size = len(c)
        if size <= ANCHOR:
            return np.asarray(special.bdtrc(t, c, 0.5), dtype=np.float64)
        step_up = np.diff(t)
        # P(Bin(c + 1) = t + 1) = P(Bin(c) = t) (c + 1) / (2 (t + 1)), c and t consecutive values
        next_pmf = pmf_t[:-1] * (c[:-1] + 1) / (2 * (t[:-1] + 1))
        increments = pmf_t[:-1] / 2 - step_up * next_pmf
        blocks = -(-size // ANCHOR)
        padded = np.zeros(blocks * ANCHOR)
        padded[1:size] = increments
        grid = padded.reshape(blocks, ANCHOR)
        grid[:, 0] = special.bdtrc(t[::ANCHOR], c[::ANCHOR], 0.5)
        return np.cumsum(grid, axis=1).ravel()[:size]

    def delta(self, epsilon: float) -> float:
        "D_{e^epsilon}(P || Q): an upper bound on the shuffled mechanism's delta at epsilon (the tails added)"
        given_c = self.conditional_delta(epsilon)
        return float(np.dot(self.weights, given_c) + self.below + self.above * given_c[-1])


def shuffle_delta(epsilon: float, *, epsilon0: float, n: int) -> float:
    "The delta at ``epsilon`` of n shuffled epsilon0-LDP reports (Theorem 3.2's divergence, computed exactly)"
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError("epsilon must be a finite number of at least 0")
    return ClonePair(epsilon0, n).delta(float(epsilon))


def amplified_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """The central epsilon, at ``delta``, of n shuffled reports of any epsilon0-LDP randomizer (an upper bound).

    Parameters: ``epsilon0`` the local epsilon of each report; ``n`` the number of reports shuffled together;
    ``delta`` the central delta.  Returns the smallest epsilon (within a relative 1e-9, rounded up) for which
    Theorem 3.2's clone pair is (epsilon, delta)-indistinguishable, at most epsilon0.  See the module docstring."""
    _check_delta(delta)
    pair = ClonePair(epsilon0, n, tail=TAIL_FRACTION * delta)
    return _smallest_epsilon(pair, delta)


def _smallest_epsilon(pair: ClonePair, delta: float) -> float:
    if pair.delta(0.0) <= delta:
        return 0.0
    high = pair.epsilon0
    start = closed_form_epsilon(pair.epsilon0, pair.n, delta)
    if start < high and pair.delta(start) <= delta:
        high = start  # usually; the search then needs fewer steps

    def excess(epsilon: float) -> float:
        return math.log(max(pair.delta(epsilon), 1e-300)) - math.log(delta)

    if high == pair.epsilon0 and excess(high * (1 - 1e-12)) > 0:
        return pair.epsilon0
    root = optimize.brentq(excess, 0.0, high, xtol=1e-12, rtol=EPSILON_TOLERANCE)
    step = EPSILON_TOLERANCE * max(root, 1e-12)
    epsilon = min(root + step, pair.epsilon0)
    while epsilon < pair.epsilon0 and pair.delta(epsilon) > delta:  # the figure returned passes
        epsilon = min(epsilon + step, pair.epsilon0)
        step *= 2
    return epsilon


def closed_form_applies(epsilon0: float, n: int, delta: float) -> bool:
    "Whether Theorem 3.1's closed form covers epsilon0: epsilon0 <= ln(n / (16 ln(4/delta)))"
    _check_positive("epsilon0", epsilon0)
    _check_count(n)
    _check_delta(delta)
    return n > 16 * math.log(4 / delta) and epsilon0 <= math.log(n / (16 * math.log(4 / delta)))


def closed_form_epsilon(epsilon0: float, n: int, delta: float) -> float:
    "Theorem 3.1's closed-form amplified epsilon (module docstring); epsilon0 where it does not apply"
    if not closed_form_applies(epsilon0, n, delta):
        return float(epsilon0)
    a = 8 * math.sqrt(math.exp(epsilon0) * math.log(4 / delta) / n)
    c = 8 * math.exp(epsilon0) / n
    inner = math.log(1 + a + c)
    return min(float(epsilon0),
               math.log(1 + (1 - math.exp(-epsilon0)) / (1 + math.exp(-epsilon0 - inner)) * (a + c)))


def local_epsilon_for(target_epsilon: float, n: int, delta: float) -> float:
    """The largest epsilon0 (within a relative 1e-7, rounded down) whose reports, n of them shuffled, are
    (target_epsilon, delta)-DP by :func:`amplified_epsilon`: the local budget that buys a central target."""
    _check_positive("target_epsilon", target_epsilon)
    _check_count(n)
    _check_delta(delta)

    def excess(epsilon0: float) -> float:
        return amplified_epsilon(epsilon0, n, delta) - target_epsilon

    low = float(target_epsilon)  # amplified <= epsilon0, so epsilon0 = target always passes
    if excess(low) > 0:  # only when the bound gives no amplification at all (n = 1 and delta tiny): epsilon0 = target
        return low
    high = 2 * low
    while excess(high) <= 0:
        low, high = high, 2 * high
        if high > 1e4:
            raise ValueError("no epsilon0 below 1e4 reaches the target: is delta too large for the target?")
    while high - low > 1e-7 * low:  # bisection: amplified_epsilon is non-decreasing in epsilon0
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) <= 0 else (low, middle)
    return low


@dataclass(frozen=True)
class Amplification:
    "One shuffled batch's guarantee: the local epsilon0, the batch size, and the central (epsilon, delta)"

    epsilon0: float
    n: int
    delta: float
    epsilon: float
    closed_form_epsilon: float

    def describe(self) -> dict:
        return {"epsilon0": self.epsilon0, "batch_size": self.n, "epsilon": self.epsilon, "delta": self.delta,
                "closed_form_epsilon": self.closed_form_epsilon,
                "closed_form_applies": closed_form_applies(self.epsilon0, self.n, self.delta),
                "bound": BOUND, "holds_for": HOLDS_FOR, "closed_form": CLOSED_FORM, "relation": "replace-one"}


def amplification(epsilon0: float, n: int, delta: float) -> Amplification:
    "The numerical bound and the closed form for a batch of n shuffled epsilon0-LDP reports at ``delta``"
    return Amplification(float(epsilon0), n, float(delta), amplified_epsilon(epsilon0, n, delta),
                         closed_form_epsilon(epsilon0, n, delta))
