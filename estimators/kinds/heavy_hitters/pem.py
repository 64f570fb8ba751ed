"""PEM's decoder (Wang, Li, Jha, "Locally Differentially Private Heavy Hitter Identification", IEEE TDSC 2019).

Level 0 tests every prefix of its length; each later level tests the extensions of the prefixes the previous level
kept (by ``segment_length`` symbols; a prefix ended by END extends only by END).  A level keeps at most ``top_k``
candidates whose OLH estimate from that level's reports exceeds its threshold (``planning.level_threshold``); the
last level's survivors are the discovered strings, whose frequencies come from the estimation group.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams
from client_sdk.kinds.heavy_hitters.encoding import END, is_padded, prefix_key
from client_sdk.kinds.heavy_hitters.oracles import OlhConstants
from client_sdk.kinds.heavy_hitters.planning import (
    DEFAULT_FALSE_DISCOVERY_BUDGET,
    DEFAULT_TOP_K,
    detection_threshold,
    level_threshold,
)

from ...errors import NoReports
from .aggregate import PemAggregate
from .result import HeavyHittersEstimate, LevelSummary, hitter
from .simulate import olh_hash_array

_CHUNK = 1 << 22  # report x candidate cells per numpy pass (32 MiB of uint64)


def olh_estimates(group: tuple[np.ndarray, np.ndarray, np.ndarray], keys: Sequence[int],
                  constants: OlhConstants) -> np.ndarray:
    "The de-biased frequency (S/N - q*)/(p* - q*) of each key among one group's reports (0 with no reports)"
    a, b, y = group
    keys_array = np.array(keys, dtype=np.uint64)
    support = np.zeros(len(keys_array), np.int64)
    if not len(y) or not len(keys_array):
        return support.astype(np.float64)
    step = max(1, _CHUNK // len(y))
    for start in range(0, len(keys_array), step):
        chunk = keys_array[None, start:start + step]
        hashed = olh_hash_array(a[:, None], b[:, None], chunk, constants.g)
        support[start:start + step] = (hashed == y[:, None].astype(np.uint64)).sum(axis=0)
    return (support / len(y) - constants.q_star) / (constants.p_star - constants.q_star)


def extensions(params: HeavyHittersParams, prefix: tuple[int, ...], length: int) -> list[tuple[int, ...]]:
    "The padded extensions of ``prefix`` to ``length`` symbols"
    added = length - len(prefix)
    if prefix and prefix[-1] == END:
        return [prefix + (END,) * added]
    tails = itertools.product(range(params.symbol_count), repeat=added)
    return [prefix + tail for tail in tails if is_padded(prefix + tail)]


def decode_pem(params: HeavyHittersParams, aggregate: PemAggregate, top_k: int = DEFAULT_TOP_K,
               budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET, confidence: float = 0.95) -> HeavyHittersEstimate:
    "The discovered strings, ranked, with the detection threshold and the expected false discoveries"
    devices = int(aggregate.counts.sum())
    if devices == 0:
        raise NoReports("no heavy_hitters reports to decode")
    constants = OlhConstants(params.epsilon)
    kept: list[tuple[int, ...]] = [()]
    levels, scores, tail = [], np.zeros(0), 0.0
    candidates: list[tuple[int, ...]] = []
    for level in range(params.discovery_groups):
        length = params.prefix_length(level)
        candidates = [c for prefix in kept for c in extensions(params, prefix, length)]
        group = aggregate.groups[level]
        estimates = olh_estimates(group, [prefix_key(c) for c in candidates], constants)
        threshold = level_threshold(constants, max(1, len(group[2])), len(candidates), budget)
        tail = min(0.5, budget / max(1, len(candidates)))
        order = [i for i in np.argsort(-estimates, kind="stable") if estimates[i] > threshold][:top_k]
        kept, scores = [candidates[i] for i in order], estimates[order]
        levels.append(LevelSummary(len(group[2]), len(candidates), float(threshold), len(kept)))
    estimation = aggregate.groups[params.estimation_group]
    reports = len(estimation[2])
    frequencies = olh_estimates(estimation, [prefix_key(c) for c in kept], constants)
    hitters = [hitter(params, constants, symbols, float(f), max(1, reports), devices, float(score), confidence)
               for symbols, f, score in zip(kept, frequencies, scores)]
    hitters.sort(key=lambda h: -h.frequency)
    return HeavyHittersEstimate(
        algorithm="pem", reports=devices, hitters=tuple(hitters),
        detection_threshold=detection_threshold(params, devices, top_k, budget),
        # each candidate of frequency 0 at the last level passes w.p. tail: at most len(candidates) * tail
        expected_false_discoveries=len(candidates) * tail, levels=tuple(levels), confidence=confidence,
        tested=tuple(candidates))
