"""The poplar1 walk's pruning rule: which candidates a level keeps, and which of the last level's are released.

A level's released count is the true count plus N, both aggregators' discrete Gaussian noise (its exact pmf:
``AggregatorNoise.noise_pmf``).  Keeping a prefix when its noisy count reaches the threshold T (threshold x the
batch's reports) would prune a prefix whose true count is exactly T at each level with probability 1/2.  The rule
keeps a prefix when its noisy count reaches ``T - margin``, the margin the smallest integer m >= 0 with
``P(N < -m) <= beta / L`` (L the walk's levels, beta ``MISS_PROBABILITY``): a prefix whose true count is at least T
at every level (every prefix of a string counted at least T times) survives each level but with probability at
most beta / L, so the whole walk (a union over its L levels) with probability at least 1 - beta.  The last level's
kept prefixes are the released heavy hitters, so a string of true count >= T is released with probability >= 1 -
beta.  The price is false discoveries: a string of true count c < T is released with probability at most
``P(N >= T - margin - c)`` (at most beta / L once c <= T - 2 margin); each release says whether its interval
clears T (``clears_threshold``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .accounting import walk_noise

MISS_PROBABILITY = 0.1  # beta: the most probable a string of true count >= T is pruned somewhere in the walk
# A candidate of true count 0 (noise only) is kept with probability m0 = P(N >= keep count); its 2**stride
# extensions are the next level's candidates, so the kept noise prefixes are a branching process of mean m = m0 x
# 2**stride, fed at each level by the extensions of the true prefixes kept (at most 1 / threshold).  Over a walk of
# L levels a true prefix's extensions bring in expectation m + m**2 + ... + m**(L-1) noise prefixes: a handful while
# m < 1, geometrically many from m = 1 on (600 reports at threshold 0.05, epsilon 1, 8 levels: m = 13.6, the walk
# never ends in practice).  A walk is refused below the reports that bring that sum to MAX_NOISE_GROWTH: its work
# at most about 1 + MAX_NOISE_GROWTH times the true prefixes' alone.
MAX_NOISE_GROWTH = 10.0


@lru_cache(maxsize=64)
def pruning_margin(epsilon: float, delta: float, levels: int, beta: float = MISS_PROBABILITY) -> int:
    "The smallest integer m >= 0 with P(N < -m) <= beta / levels, N the release's noise at one level (exact pmf)"
    offsets, pmf = walk_noise(epsilon, delta, levels).noise_pmf()
    at_most = np.cumsum(pmf)  # P(N <= offsets[i])
    below = np.flatnonzero(at_most <= beta / levels)
    return 0 if len(below) == 0 else max(0, int(-offsets[below[-1]]) - 1)


@dataclass(frozen=True)
class PruningRule:
    "Keep a candidate when its noisy count reaches ``threshold_count - margin`` (the module docstring)"

    threshold_count: float
    margin: int
    miss_probability: float
    levels: int

    @property
    def keep_count(self) -> float:
        return self.threshold_count - self.margin

    def keeps(self, count: int) -> bool:
        return count >= self.keep_count

    def describe(self) -> dict:
        return {"threshold_count": self.threshold_count, "keep_count": self.keep_count, "margin": self.margin,
                "miss_probability": self.miss_probability, "per_level_miss_probability":
                    self.miss_probability / self.levels}


def pruning_rule(epsilon: float, delta: float, levels: int, threshold: float, reports: int,
                 beta: float = MISS_PROBABILITY) -> PruningRule:
    "The rule of a walk over ``reports`` reports of a spec's (epsilon, delta, levels, threshold)"
    return PruningRule(threshold * reports, pruning_margin(float(epsilon), float(delta), int(levels), beta), beta,
                       int(levels))


@lru_cache(maxsize=64)
def _at_least(epsilon: float, delta: float, levels: int) -> tuple[np.ndarray, np.ndarray]:
    "(offsets, P(N >= offset)) of the release's noise at one level (exact pmf)"
    offsets, pmf = walk_noise(epsilon, delta, levels).noise_pmf()
    return offsets, np.cumsum(pmf[::-1])[::-1]


def noise_branching(epsilon: float, delta: float, levels: int, threshold: float, reports: int, stride: int,
                    beta: float = MISS_PROBABILITY) -> float:
    "m: the mean number of kept extensions of a kept noise prefix (MAX_NOISE_GROWTH's comment)"
    keep = pruning_rule(epsilon, delta, levels, threshold, reports, beta).keep_count
    offsets, at_least = _at_least(float(epsilon), float(delta), int(levels))
    above = np.flatnonzero(offsets >= keep)
    kept = float(at_least[above[0]]) if len(above) else 0.0  # the counts are integers: P(N >= ceil(keep))
    return kept * 2 ** int(stride)


def noise_growth(branching: float, levels: int) -> float:
    "m + m**2 + ... + m**(levels - 1): a true prefix's expected noise descendants over the walk"
    return sum(branching**k for k in range(1, int(levels)))


@lru_cache(maxsize=64)
def minimum_walk_reports(epsilon: float, delta: float, levels: int, threshold: float, stride: int,
                         beta: float = MISS_PROBABILITY) -> int:
    """The fewest reports whose walk's noise growth is at most MAX_NOISE_GROWTH (the keep count grows with the
    reports, the margin does not, so the growth falls as they rise): below it a walk is refused"""
    def grows(reports: int) -> bool:
        return noise_growth(noise_branching(epsilon, delta, levels, threshold, reports, stride, beta),
                            levels) > MAX_NOISE_GROWTH

    low, high = 0, 1  # grows(low) or low = 0; not grows(high)
    while grows(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if grows(middle) else (low, middle)
    return high
