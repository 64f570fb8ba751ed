"""SFP's decoder: Apple's Sequence Fragment Puzzle over Hadamard Count Mean Sketches ("Learning with Privacy at
Scale", Apple's Differential Privacy Team, 2017).

Each position's sketch estimates every (puzzle hash r, fragment) pair: the sketch's rows are Walsh-Hadamard
transformed once (T = S H), and the estimate of key x is (m/(m-1)) (sum_j T[j, h_j(x)] / (N (2p-1)) - 1/m).  A
position keeps the pairs above its threshold (``planning.level_threshold``), at most ``top_k`` per r; for each r
the puzzle joins one kept fragment per position into strings, keeps those that are padded (END only at the end)
and whose own puzzle hash is r, and ranks them by their smallest fragment estimate (the ``top_k`` best are the
discovered strings).  Their frequencies come from the estimation group's sketch of whole strings.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams
from client_sdk.kinds.heavy_hitters.encoding import PUZZLE_BITS, is_padded, prefix_key, puzzle_hash, sketch_seeds
from client_sdk.kinds.heavy_hitters.oracles import SketchConstants
from client_sdk.kinds.heavy_hitters.planning import (
    DEFAULT_FALSE_DISCOVERY_BUDGET,
    DEFAULT_TOP_K,
    detection_threshold,
    level_threshold,
)

from ...errors import NoReports
from .aggregate import SfpAggregate
from .result import HeavyHittersEstimate, LevelSummary, collision_variance, hitter, null_keys, sketch_corrected
from .simulate import olh_hash_array

_CHUNK = 1 << 20  # keys per numpy pass
MAX_COMBINATIONS = 4096  # puzzle strings tried per puzzle hash (the best fragments first)


def transformed(sums: np.ndarray) -> np.ndarray:
    "Each row of a sketch times the Sylvester Hadamard matrix (fast Walsh-Hadamard transform, rows at once)"
    out = sums.astype(np.float64)
    depth, width = out.shape
    half = 1
    while half < width:
        blocks = out.reshape(depth, -1, 2, half)
        top = blocks[:, :, 0, :].copy()
        blocks[:, :, 0, :] += blocks[:, :, 1, :]
        blocks[:, :, 1, :] = top - blocks[:, :, 1, :]
        half *= 2
    return out


def sketch_estimates(transform: np.ndarray, reports: int, keys: np.ndarray,
                     constants: SketchConstants) -> np.ndarray:
    "The de-biased frequency of each key from one group's transformed sketch (0 with no reports)"
    if reports == 0:
        return np.zeros(len(keys))
    depth, width = transform.shape
    seeds = np.array(sketch_seeds(depth), dtype=np.uint64)
    total = np.zeros(len(keys))
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[None, start:start + _CHUNK].astype(np.uint64)
        columns = olh_hash_array(seeds[:, :1], seeds[:, 1:], chunk, width).astype(np.int64)
        total[start:start + _CHUNK] = transform[np.arange(depth)[:, None], columns].sum(axis=0)
    mean = total / (reports * constants.signal)  # E = f + (1 - f)/m
    return (mean - 1 / width) * width / (width - 1)


def decode_sfp(params: HeavyHittersParams, aggregate: SfpAggregate, top_k: int = DEFAULT_TOP_K,
               budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET, confidence: float = 0.95) -> HeavyHittersEstimate:
    "The discovered strings, ranked, with the detection threshold and the expected false discoveries"
    assert params.sketch_width is not None and params.sketch_depth is not None
    assert params.fragment_length is not None
    devices = int(aggregate.counts.sum())
    if devices == 0:
        raise NoReports("no heavy_hitters reports to decode")
    constants = SketchConstants(params.epsilon, params.sketch_width, params.sketch_depth)
    per_fragment = params.symbol_count**params.fragment_length
    keys = np.arange((1 << PUZZLE_BITS) * per_fragment, dtype=np.uint64)
    kept: list[dict[int, list[tuple[float, tuple[int, ...]]]]] = []
    levels = []
    for position in range(params.discovery_groups):
        reports = int(aggregate.counts[position])
        estimates = sketch_estimates(transformed(aggregate.cells[position]), reports, keys, constants)
        threshold = level_threshold(constants, max(1, reports), len(keys), budget)
        found: dict[int, list[tuple[float, tuple[int, ...]]]] = defaultdict(list)
        for key in np.flatnonzero(estimates > threshold):
            fragment = _digits(int(key) % per_fragment, params.symbol_count, params.fragment_length)
            if is_padded(fragment):
                found[int(key) // per_fragment].append((float(estimates[key]), fragment))
        for puzzle in found:
            found[puzzle] = sorted(found[puzzle], reverse=True)[:top_k]
        kept.append(found)
        levels.append(LevelSummary(reports, len(keys), float(threshold), sum(map(len, found.values()))))
    strings, combinations = _puzzle(params, kept)
    strings = sorted(strings, key=lambda item: -item[0])[:top_k]
    estimation = int(aggregate.counts[params.estimation_group])
    string_keys = np.array([prefix_key(symbols) for _, symbols in strings], dtype=np.uint64)
    query = np.concatenate([string_keys, null_keys()])
    estimates = sketch_estimates(transformed(aggregate.cells[params.estimation_group]), estimation, query, constants)
    seeds = np.array(sketch_seeds(params.sketch_depth), dtype=np.uint64)
    columns = olh_hash_array(seeds[:, :1], seeds[:, 1:], query[None, :], params.sketch_width)
    estimates = sketch_corrected(estimates, columns, len(strings), params.sketch_width)
    frequencies = estimates[:len(strings)]
    residual = collision_variance(estimates[len(strings):], constants, estimation)
    hitters = [hitter(params, constants, symbols, float(f), max(1, estimation), devices, score, confidence, residual)
               for (score, symbols), f in zip(strings, frequencies)]
    hitters.sort(key=lambda h: -h.frequency)
    return HeavyHittersEstimate(
        algorithm="sfp", reports=devices, hitters=tuple(hitters),
        detection_threshold=detection_threshold(params, devices, top_k, budget),
        expected_false_discoveries=combinations, levels=tuple(levels), confidence=confidence,
        tested=tuple(symbols for _, symbols in strings))


def _digits(value: int, base: int, length: int) -> tuple[int, ...]:
    out = []
    for _ in range(length):
        value, digit = divmod(value, base)
        out.append(digit)
    return tuple(reversed(out))


def _puzzle(params: HeavyHittersParams, kept: list[dict[int, list[tuple[float, tuple[int, ...]]]]]
            ) -> tuple[list[tuple[float, tuple[int, ...]]], float]:
    """The padded strings whose puzzle hash matches, with their smallest fragment estimate; and the expected number
    of them that join fragments of different strings: a combination that is no true string passes the 8-bit hash
    check w.p. 2**-8, and r's combinations beyond its largest fragment set are not true strings (an estimate: it
    assumes r's true strings differ at every position)"""
    out, spurious = [], 0.0
    for puzzle in set.intersection(*(set(found) for found in kept)) if kept else set():
        choices = [found[puzzle] for found in kept]
        while math.prod(map(len, choices)) > MAX_COMBINATIONS:
            longest = max(range(len(choices)), key=lambda i: len(choices[i]))
            choices[longest] = choices[longest][:-1]
        spurious += (math.prod(map(len, choices)) - max(map(len, choices))) / (1 << PUZZLE_BITS)
        for combination in itertools.product(*choices):
            symbols = tuple(s for _, fragment in combination for s in fragment)[:params.max_length]
            if is_padded(symbols) and puzzle_hash(symbols) == puzzle:
                out.append((min(score for score, _ in combination), symbols))
    return out, spurious
