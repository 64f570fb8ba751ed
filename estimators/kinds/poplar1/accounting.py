"""The poplar1 walk's noise and its accounting.

Neighbouring relation: replace-one (n public), as every release of the project.  At one level of the walk a
device's string is under at most one candidate prefix, so replacing it moves at most two of the level's counts by
one each: ``Shift(coordinates=2, size=1)`` (L2 sqrt 2).  Each aggregator adds discrete Gaussian noise N_Z(0,
sigma2) to every count of every level, with one sigma2 for the walk, calibrated so that ONE aggregator's noise
alone gives the collection's (epsilon, delta) over the walk's ``L = bits / stride`` levels: the smallest sigma2 on
a grid of spacing 2**-10 sigma2 (rounded up to the sampler's rationals) for which the exact composition of the L
levels' privacy loss distributions (dp-accounting, ``estimators.composition.pld_composition``; discrete Gaussian
of sensitivity 1 on each of 2 coordinates per level) has epsilon at most the spec's at its delta.  The aggregators
enforce that a batch is walked over at most those L levels (levels strictly increasing, each one of the spec's),
so the walk's guarantee is that composition, whatever prefixes the leader asks for.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from estimators.central import analytic_gaussian_sigma
from estimators.composition import DiscreteGaussianRelease, Spent, pld_composition
from estimators.distributed.accounting import Shift
from estimators.distributed.noise import AggregatorNoise

LEVEL_SHIFT = Shift(coordinates=2, size=1)  # replace-one at one level: one prefix's count down, another's up
GRID_BITS = 10  # sigma2's grid: a relative spacing of 2**-10


def level_release(sigma2: Fraction | float, delta: float) -> DiscreteGaussianRelease:
    "One level's release, from one aggregator's noise"
    return DiscreteGaussianRelease(sigma2, delta, LEVEL_SHIFT)


def walk_guarantee(sigma2: Fraction | float, levels: int, delta: float) -> Spent:
    "The exact composition of ``levels`` levels' releases at ``delta`` (one aggregator's noise)"
    return pld_composition([level_release(sigma2, delta)] * levels, delta=delta)


@lru_cache(maxsize=64)
def calibrate_walk(epsilon: float, delta: float, levels: int) -> Fraction:
    """The per-level sigma2 of each aggregator's noise: the smallest on the grid whose walk meets (epsilon, delta).

    Bisection between half and twice the continuous Gaussian's sigma^2 at L2 sensitivity sqrt(2 levels) (the
    composition of L Gaussian levels is one Gaussian of sqrt(L) times the sensitivity); the upper end, which
    passes, is returned."""
    if levels < 1:
        raise ValueError("levels must be at least 1")
    continuous = analytic_gaussian_sigma(math.sqrt(LEVEL_SHIFT.l2 ** 2 * levels), epsilon, delta) ** 2
    step = Fraction(2) ** (math.floor(math.log2(continuous)) - GRID_BITS)
    step = max(step, Fraction(1, 1 << GRID_BITS))

    def passes(sigma2: Fraction) -> bool:
        return walk_guarantee(sigma2, levels, delta).epsilon <= epsilon

    low = max(step, math.floor(Fraction(continuous) / 2 / step) * step)
    high = math.ceil(Fraction(continuous) * 2 / step) * step
    while not passes(high):
        low, high = high, high * 2
    while high - low > step:
        middle = math.floor((low + high) / 2 / step) * step
        low, high = (low, middle) if passes(middle) else (middle, high)
    return high


def walk_noise(epsilon: float, delta: float, levels: int) -> AggregatorNoise:
    "Each aggregator's noise on a level's counts (``share_noise``; the release's pmf ``noise_pmf``)"
    return AggregatorNoise("gaussian", calibrate_walk(float(epsilon), float(delta), int(levels)), LEVEL_SHIFT)
