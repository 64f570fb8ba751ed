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
