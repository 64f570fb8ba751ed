"""PEM's decoder (Wang, Li, Jha, "Locally Differentially Private Heavy Hitter Identification", IEEE TDSC 2019).

Level 0 tests every prefix of its length; each later level tests the extensions of the prefixes the previous level
kept (by ``segment_length`` symbols; a prefix ended by END extends only by END).  A level keeps at most ``top_k``
candidates whose OLH estimate from that level's reports exceeds its threshold (``planning.level_threshold``); the
last level's survivors are the discovered strings, whose frequencies come from the estimation group.  Every group's
aggregate is a count table over PEM's public OLH family, so each estimate costs hash_count look-ups per candidate
whatever n, and the collisions between the largest candidates are corrected for exactly (``olh_estimates``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams
from client_sdk.kinds.heavy_hitters.encoding import END, is_padded, olh_seeds, prefix_key
from client_sdk.kinds.heavy_hitters.oracles import OlhConstants
from client_sdk.kinds.heavy_hitters.planning import (
    DEFAULT_FALSE_DISCOVERY_BUDGET,
    DEFAULT_TOP_K,
    detection_threshold,
    level_threshold,
    oracle,
)

from ...errors import NoReports
from .aggregate import PemAggregate
from .result import HeavyHittersEstimate, LevelSummary, hitter
from .simulate import olh_hash_array

_CHUNK = 1 << 22  # hash x candidate cells per numpy pass (32 MiB of uint64)
INTERFERERS = 2  # times top_k: the candidates (by raw estimate) whose collisions a level corrects for


def _hashed(seeds: np.ndarray, keys: np.ndarray, g: int) -> np.ndarray:
    "hashed[j, c] = h_j(keys[c]) for every function j of the family"
    return olh_hash_array(seeds[:, :1], seeds[:, 1:], keys[None, :].astype(np.uint64), g).astype(np.int64)


def _collisions(hashed: np.ndarray) -> np.ndarray:
    "c[v, w]: the fraction of the family's functions under which keys v and w collide"
    return (hashed[:, :, None] == hashed[:, None, :]).mean(axis=0)


def _lookup(flat: np.ndarray, hashed: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    "sum_j flat[j * g + hashed[j, c]] for each key c (a group's table read at each function's hash of the key)"
    out = np.zeros(hashed.shape[1])
    step = max(1, _CHUNK // hashed.shape[0])
    for start in range(0, hashed.shape[1], step):
        out[start:start + step] = flat.take(hashed[:, start:start + step] + offsets).sum(axis=0)
    return out


def olh_estimates(table: np.ndarray, reports: int, keys: Sequence[int], constants: OlhConstants,
                  interferers: int = 0) -> np.ndarray:
    """The de-biased frequency (S/N - q*)/(p* - q*) of each key from one group's hash_count x g count table
    (S = sum_j table[j, h_j(key)]; 0 with no reports), corrected for the collisions of the ``interferers`` keys
    with the largest raw estimates: a report of v != x supports x w.p. 1/g + (c_xv - 1/g) d, d = p* - (1-p*)/(g-1)
    (c_xv the fraction of the public family in which x and v collide), so E raw_x = f_x + sum_v A_xv f_v with
    A_xv = (c_xv - 1/g) d / (p* - q*).  The interferers' f solve (I + A) f = raw, and every key's raw estimate loses
    sum_v A_xv f_v over the interferers v != x, read like the support from the table W[j, y] = sum of the f_v with
    h_j(v) = y (what remains is the other strings' collisions, which average to zero over the family)"""
    keys_array = np.array(keys, dtype=np.uint64)
    if not reports or not len(keys_array):
        return np.zeros(len(keys_array))
    hash_count, g = table.shape
    seeds = np.array(olh_seeds(hash_count), dtype=np.uint64)
    hashed = np.empty((hash_count, len(keys_array)), np.int64)
    step = max(1, _CHUNK // hash_count)
    for start in range(0, len(keys_array), step):
        hashed[:, start:start + step] = _hashed(seeds, keys_array[start:start + step], g)
    offsets = (np.arange(hash_count) * g)[:, None]
    support = _lookup(table.ravel().astype(np.float64), hashed, offsets)
    raw = (support / reports - constants.q_star) / (constants.p_star - constants.q_star)
    chosen = np.argsort(-raw, kind="stable")[:interferers]
    if not len(chosen):
        return raw
    scale = (constants.p_star - (1 - constants.p_star) / (g - 1)) / (constants.p_star - constants.q_star)
    others = hashed[:, chosen]
    mix = (_collisions(others) - 1 / g) * scale  # A[v, w] among the interferers
    np.fill_diagonal(mix, 0.0)
    found = np.linalg.solve(np.eye(len(chosen)) + mix, raw[chosen])
    weights = np.broadcast_to(found, others.shape)
    predicted = np.bincount((others + offsets).ravel(), weights=weights.ravel(), minlength=hash_count * g)
    mine = np.zeros(len(keys_array))
    mine[chosen] = found  # c_xx = 1: an interferer's own share is not a collision
    collided = _lookup(predicted, hashed, offsets) / hash_count - mine
    return raw - scale * (collided - (found.sum() - mine) / g)


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
    constants = oracle(params)
    assert isinstance(constants, OlhConstants)
    kept: list[tuple[int, ...]] = [()]
    levels, scores, tail = [], np.zeros(0), 0.0
    candidates: list[tuple[int, ...]] = []
    for level in range(params.discovery_groups):
        length = params.prefix_length(level)
        candidates = [c for prefix in kept for c in extensions(params, prefix, length)]
        reports = int(aggregate.counts[level])
        threshold = level_threshold(constants, max(1, reports), len(candidates), budget)
        estimates = olh_estimates(aggregate.cells[level], reports, [prefix_key(c) for c in candidates], constants,
                                  INTERFERERS * top_k)
        tail = min(0.5, budget / max(1, len(candidates)))
        order = [i for i in np.argsort(-estimates, kind="stable") if estimates[i] > threshold][:top_k]
        kept, scores = [candidates[i] for i in order], estimates[order]
        levels.append(LevelSummary(reports, len(candidates), float(threshold), len(kept)))
    reports = int(aggregate.counts[params.estimation_group])
    frequencies = olh_estimates(aggregate.cells[params.estimation_group], reports, [prefix_key(c) for c in kept],
                                constants, len(kept))
    hitters = [hitter(params, constants, symbols, float(f), max(1, reports), devices, float(score), confidence)
               for symbols, f, score in zip(kept, frequencies, scores)]
    hitters.sort(key=lambda h: -h.frequency)
    return HeavyHittersEstimate(
        algorithm="pem", reports=devices, hitters=tuple(hitters),
        detection_threshold=detection_threshold(params, devices, top_k, budget),
        # each candidate of frequency 0 at the last level passes w.p. tail: at most len(candidates) * tail
        expected_false_discoveries=len(candidates) * tail, levels=tuple(levels), confidence=confidence,
        tested=tuple(candidates))
