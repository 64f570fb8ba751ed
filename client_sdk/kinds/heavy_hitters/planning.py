"""What a heavy_hitters campaign can find: level thresholds, the detection threshold, the planner.

Discovery keeps a candidate at a level (PEM) or position (SFP) when its de-biased frequency exceeds
tau = sigma_0 z(1 - b/C): sigma_0 the estimator's standard error at frequency 0 from that group's N reports, C the
candidates the level tests and b the *false-discovery budget* (so a candidate of frequency 0 passes w.p. b/C and a
level passes b of them in expectation, in the normal approximation).  A string of frequency f (its prefixes, or its
fragments, at least f) passes every level with probability at least

    P(found | f) = prod_l Phi((f - tau_l) / sigma_l(f)),

provided the level's ``top_k`` cap does not bind (fewer than top_k other candidates pass).  The **detection
threshold** is the smallest f with P(found | f) >= 0.9 (``detection_threshold``, by bisection), computed with
N = n / groups reports per group and the sampling term of a group's subset of the n devices.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from .limits import (
    DEFAULT_OLH_CELLS,
    DEFAULT_SKETCH_DEPTH,
    DEFAULT_SKETCH_WIDTH,
    HASH_FAMILIES,
    MAX_FRAGMENT_CANDIDATES,
    MAX_LEVEL_BRANCHING,
)
from .oracles import OlhConstants, SketchConstants

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from .params import HeavyHittersParams

DEFAULT_TOP_K = 20
DEFAULT_FALSE_DISCOVERY_BUDGET = 0.05
DETECTION_POWER = 0.9
_NORMAL = NormalDist()


def valid_extensions(alphabet_size: int, length: int) -> int:
    "Symbol sequences of ``length`` with END only as a suffix: sum_{j<=length} A**j"
    return sum(alphabet_size**j for j in range(length + 1))


def default_hash_count(epsilon: float) -> int:
    "PEM's default hash_count at ``epsilon``: hash_count * g ~ DEFAULT_OLH_CELLS"
    return max(1, DEFAULT_OLH_CELLS // OlhConstants(epsilon).g)


def oracle(params: HeavyHittersParams) -> OlhConstants | SketchConstants:
    "The frequency oracle of every group of the campaign"
    if params.algorithm == "pem":
        return OlhConstants(params.epsilon)
    assert params.sketch_width is not None and params.sketch_depth is not None
    return SketchConstants(params.epsilon, params.sketch_width, params.sketch_depth)


def level_threshold(constants: OlhConstants | SketchConstants, reports: int, candidates: int,
                    budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET) -> float:
    "tau: the de-biased frequency a candidate must exceed, from ``reports`` reports testing ``candidates``"
    tail = min(0.5, budget / max(1, candidates))
    return math.sqrt(constants.variance(0.0, reports)) * _NORMAL.inv_cdf(1 - tail)


def planned_candidates(params: HeavyHittersParams, top_k: int = DEFAULT_TOP_K) -> list[int]:
    "The candidates each discovery group tests, at most (pem: top_k kept prefixes times their extensions)"
    alphabet = params.symbol_count - 1
    if params.algorithm == "sfp":
        assert params.fragment_length is not None
        return [256 * params.symbol_count**params.fragment_length] * params.discovery_groups
    counts: list[int] = []
    previous = 0
    for level in range(params.discovery_groups):
        length = params.prefix_length(level)
        added = valid_extensions(alphabet, length - previous)
        counts.append(added if level == 0 else min(top_k, counts[-1]) * added)
        previous = length
    return counts


def detection_probability(params: HeavyHittersParams, devices: int, frequency: float,
                          top_k: int = DEFAULT_TOP_K, budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET) -> float:
    "P(found | f) for n = ``devices`` (N = n / groups reports per group)"
    constants = oracle(params)
    reports = max(1, devices // params.groups)
    probability = 1.0
    for candidates in planned_candidates(params, top_k):
        tau = level_threshold(constants, reports, candidates, budget)
        sigma = math.sqrt(constants.variance(frequency, reports, devices))
        probability *= _NORMAL.cdf((frequency - tau) / sigma)
    return probability


def detection_threshold(params: HeavyHittersParams, devices: int, top_k: int = DEFAULT_TOP_K,
                        budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET, power: float = DETECTION_POWER) -> float:
    "The smallest frequency found with probability >= ``power`` (1.0 when even f = 1 is not: n too small)"
    if detection_probability(params, devices, 1.0, top_k, budget) < power:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(50):
        middle = (low + high) / 2
        if detection_probability(params, devices, middle, top_k, budget) >= power:
            high = middle
        else:
            low = middle
    return high


def reports_needed(params: HeavyHittersParams, frequency: float, top_k: int = DEFAULT_TOP_K,
                   budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET, power: float = DETECTION_POWER) -> int:
    "The smallest n (within 1%) at which strings of ``frequency`` are found with probability >= ``power``"
    low, high = params.groups, params.groups
    while detection_probability(params, high, frequency, top_k, budget) < power:
        low, high = high, high * 2
        if high > 1 << 50:
            raise ValueError(f"no n finds frequency {frequency} (it is below what any number of reports reaches)")
    while high - low > max(1, low // 100):
        middle = (low + high) // 2
        if detection_probability(params, middle, frequency, top_k, budget) >= power:
            high = middle
        else:
            low = middle
    return high


def options(base: HeavyHittersParams) -> list[HeavyHittersParams]:
    "Every algorithm and parameters ``auto`` chooses among: each valid PEM segment and SFP fragment length"
    found = []
    for length in range(1, base.max_length + 1):
        if base.symbol_count**length <= MAX_LEVEL_BRANCHING:
            found.append(base._replace(algorithm="pem", segment_length=length,
                                       hash_count=default_hash_count(base.epsilon)))
        if 256 * base.symbol_count**length <= MAX_FRAGMENT_CANDIDATES:
            found.append(base._replace(algorithm="sfp", sketch_width=DEFAULT_SKETCH_WIDTH,
                                       sketch_depth=DEFAULT_SKETCH_DEPTH, fragment_length=length,
                                       hash_family=HASH_FAMILIES[0]))
    return found


def plan(base: HeavyHittersParams, devices: int) -> HeavyHittersParams:
    """The algorithm and parameters with the smallest detection threshold at n = ``devices`` and base's epsilon
    (among :func:`options`; ties to PEM)"""
    return min(options(base), key=lambda option: detection_threshold(option, devices))
