"""PEM's decoder (Wang, Li, Jha, "Locally Differentially Private Heavy Hitter Identification", IEEE TDSC 2019).

Level 0 tests every prefix of its length; each later level tests the extensions of the prefixes the previous level
kept (by ``segment_length`` symbols; a prefix ended by END extends only by END).  A level keeps at most ``top_k``
candidates whose OLH estimate from that level's reports exceeds its threshold (``planning.level_threshold``); the
last level's survivors are the discovered strings, whose frequencies come from the estimation group.  Every group's
aggregate is a count table over PEM's public OLH family, so each estimate costs hash_count look-ups per candidate
whatever n, and the collisions between the largest candidates are corrected for exactly (``olh_estimates``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams
from client_sdk.kinds.heavy_hitters.encoding import END, olh_seeds
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
from .result import HeavyHittersEstimate, LevelSummary, collision_variance, hitter, null_keys
from .simulate import olh_hash_into, padded_rows, prefix_keys

_CHUNK = 1 << 16  # hash x candidate cells per numpy pass (512 KiB of uint64: the passes stay in the cache)
INTERFERERS = 2  # times top_k: the candidates (by raw estimate) whose collisions a level corrects for


def _cells(seeds: np.ndarray, keys: np.ndarray, g: int) -> np.ndarray:
    "cells[j, c] = j * g + h_j(keys[c]): where each function of the family puts each key in the flat table"
    hash_count = len(seeds)
    offsets = (np.arange(hash_count, dtype=np.uint64) * np.uint64(g))[:, None]
    out = np.empty((hash_count, len(keys)), np.int32)
    step = max(1, _CHUNK // hash_count)
    for start in range(0, len(keys), step):
        hashed = olh_hash_into(seeds, keys[start:start + step], g)
        hashed += offsets
        out[:, start:start + step] = hashed
    return out


def _collisions(hashed: np.ndarray) -> np.ndarray:
    "c[v, w]: the fraction of the family's functions under which keys v and w collide"
    return (hashed[:, :, None] == hashed[:, None, :]).mean(axis=0)


def _lookup(flat: np.ndarray, cells: np.ndarray) -> np.ndarray:
    "sum_j flat[cells[j, c]] for each key c (a group's table read at each function's hash of the key)"
    out = np.zeros(cells.shape[1])
    step = max(1, _CHUNK // cells.shape[0])
    for start in range(0, cells.shape[1], step):
        out[start:start + step] = flat.take(cells[:, start:start + step]).sum(axis=0)
    return out


def olh_estimates(table: np.ndarray, reports: int, keys: Sequence[int] | np.ndarray, constants: OlhConstants,
                  interferers: int = 0, probes: np.ndarray | None = None) -> np.ndarray:
    """The de-biased frequency (S/N - q*)/(p* - q*) of each key from one group's hash_count x g count table
    (S = sum_j table[j, h_j(key)]; 0 with no reports), corrected for the collisions of the ``interferers`` keys
    with the largest raw estimates: a report of v != x supports x w.p. 1/g + (c_xv - 1/g) d, d = p* - (1-p*)/(g-1)
    (c_xv the fraction of the public family in which x and v collide), so E raw_x = f_x + sum_v A_xv f_v with
    A_xv = (c_xv - 1/g) d / (p* - q*).  The interferers' f solve (I + A) f = raw, and every key's raw estimate loses
    sum_v A_xv f_v over the interferers v != x, read like the support from the table W[j, y] = sum of the f_v with
    h_j(v) = y (what remains is the other strings' collisions, which average to zero over the family).  With
    ``probes`` (keys no device reports), their estimates follow the keys', corrected alike; they are never
    interferers"""
    chosen_from = len(keys)
    keys_array = np.asarray(keys, dtype=np.uint64)
    if probes is not None:
        keys_array = np.concatenate([keys_array, np.asarray(probes, dtype=np.uint64)])
    if not reports or not len(keys_array):
        return np.zeros(len(keys_array))
    hash_count, g = table.shape
    seeds = np.array(olh_seeds(hash_count), dtype=np.uint64)
    cells = _cells(seeds, keys_array, g)
    support = _lookup(table.ravel().astype(np.float64), cells)
    raw = (support / reports - constants.q_star) / (constants.p_star - constants.q_star)
    chosen = np.argsort(-raw[:chosen_from], kind="stable")[:interferers]
    if not len(chosen):
        return raw
    scale = (constants.p_star - (1 - constants.p_star) / (g - 1)) / (constants.p_star - constants.q_star)
    others = cells[:, chosen].astype(np.int64)
    mix = (_collisions(others) - 1 / g) * scale  # A[v, w] among the interferers (same cell = same hash)
    np.fill_diagonal(mix, 0.0)
    found = np.linalg.solve(np.eye(len(chosen)) + mix, raw[chosen])
    weights = np.broadcast_to(found, others.shape)
    predicted = np.bincount(others.ravel(), weights=weights.ravel(), minlength=hash_count * g)
    mine = np.zeros(len(keys_array))
    mine[chosen] = found  # c_xx = 1: an interferer's own share is not a collision
    collided = _lookup(predicted, cells) / hash_count - mine
    return raw - scale * (collided - (found.sum() - mine) / g)


@lru_cache(maxsize=16)
def _padded_tails(symbol_count: int, added: int) -> np.ndarray:
    "Every padded sequence of ``added`` symbols, in itertools.product order"
    grid = np.indices((symbol_count,) * added).reshape(added, -1).T
    return grid[padded_rows(grid)]


def extensions(params: HeavyHittersParams, prefixes: np.ndarray, length: int) -> np.ndarray:
    """The padded extensions to ``length`` symbols of each row of ``prefixes`` (padded, all one length), in order:
    a prefix ended by END extends only by END; any other (it holds no END) by every padded tail"""
    added = length - prefixes.shape[1]
    tails = _padded_tails(params.symbol_count, added)
    blocks = []
    for prefix in prefixes:
        if len(prefix) and prefix[-1] == END:
            blocks.append(np.concatenate([prefix, np.full(added, END)])[None, :])
        else:
            blocks.append(np.hstack([np.broadcast_to(prefix, (len(tails), len(prefix))), tails]))
    return np.concatenate(blocks) if blocks else np.zeros((0, length), np.int64)


def decode_pem(params: HeavyHittersParams, aggregate: PemAggregate, top_k: int = DEFAULT_TOP_K,
               budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET, confidence: float = 0.95) -> HeavyHittersEstimate:
    "The discovered strings, ranked, with the detection threshold and the expected false discoveries"
    devices = int(aggregate.counts.sum())
    if devices == 0:
        raise NoReports("no heavy_hitters reports to decode")
    constants = oracle(params)
    assert isinstance(constants, OlhConstants)
    kept = np.zeros((1, 0), np.int64)  # the empty prefix
    levels, scores, tail = [], np.zeros(0), 0.0
    candidates = kept
    for level in range(params.discovery_groups):
        candidates = extensions(params, kept, params.prefix_length(level))
        reports = int(aggregate.counts[level])
        threshold = level_threshold(constants, max(1, reports), len(candidates), budget)
        estimates = olh_estimates(aggregate.cells[level], reports, prefix_keys(candidates), constants,
                                  INTERFERERS * top_k)
        tail = min(0.5, budget / max(1, len(candidates)))
        ranked = np.argsort(-estimates, kind="stable")
        order = ranked[estimates[ranked] > threshold][:top_k]
        kept, scores = candidates[order], estimates[order]
        levels.append(LevelSummary(reports, len(candidates), float(threshold), len(kept)))
    reports = int(aggregate.counts[params.estimation_group])
    probes = null_keys()
    estimates = olh_estimates(aggregate.cells[params.estimation_group], reports, prefix_keys(kept), constants,
                              len(kept), probes)
    frequencies, residual = estimates[:len(kept)], collision_variance(estimates[len(kept):], constants, reports)
    hitters = [hitter(params, constants, symbols, float(f), max(1, reports), devices, float(score), confidence,
                      residual) for symbols, f, score in zip(map(tuple, kept.tolist()), frequencies, scores)]
    hitters.sort(key=lambda h: -h.frequency)
    return HeavyHittersEstimate(
        algorithm="pem", reports=devices, hitters=tuple(hitters),
        detection_threshold=detection_threshold(params, devices, top_k, budget),
        # each candidate of frequency 0 at the last level passes w.p. tail: at most len(candidates) * tail
        expected_false_discoveries=len(candidates) * tail, levels=tuple(levels), confidence=confidence,
        tested=tuple(map(tuple, candidates.tolist())))
