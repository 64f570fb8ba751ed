"""Vectorised simulation of heavy_hitters reports, with the device's keys and hashes (for tests and benchmarks).

Each distinct string's keys come from ``client_sdk.kinds.heavy_hitters.group_key`` (the device's function), the
OLH and sketch hashes from the same multiply-add-shift formula (``olh_hash_array``), and the keep draws compare a
uniform 32-bit integer with the quantized keep probability, as ``bernoulli`` does: the reports have the device's
distribution exactly (a test compares them with ``make_report``'s).
"""

from __future__ import annotations

import hashlib

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams, encode_value, group_key
from client_sdk.kinds.heavy_hitters.encoding import PREFIX_LABEL, olh_seeds, sketch_seeds
from client_sdk.kinds.heavy_hitters.planning import oracle
from client_sdk.randomness import PROB_DENOMINATOR

from .aggregate import PemAggregate, SfpAggregate

_SHIFT = np.uint64(32)


def olh_hash_array(a: np.ndarray, b: np.ndarray, x: np.ndarray, g: int) -> np.ndarray:
    "``hashing.olh_hash`` elementwise (uint64 arithmetic wraps mod 2**64 as the formula's mask does)"
    with np.errstate(over="ignore"):
        mixed = (a * x + b) >> _SHIFT
    return (mixed * np.uint64(g)) >> _SHIFT


def olh_hash_into(seeds: np.ndarray, keys: np.ndarray, g: int) -> np.ndarray:
    """hashed[j, c] = h_j(keys[c]) for each (a, b) row of ``seeds`` (``olh_hash_array``, computed in place: one
    buffer, no temporaries; call it on chunks that fit in the cache)"""
    with np.errstate(over="ignore"):
        out = np.multiply(seeds[:, :1], keys[None, :].astype(np.uint64))
        out += seeds[:, 1:]
    out >>= _SHIFT
    out *= np.uint64(g)
    out >>= _SHIFT
    return out


def prefix_keys(symbols: np.ndarray) -> np.ndarray:
    """``encoding.prefix_key`` of each row of a (count, length) symbol matrix, as uint64: the messages are laid out
    by numpy and only SHA-256 runs per row"""
    count, length = symbols.shape
    header = np.frombuffer(PREFIX_LABEL + b"\x00" + length.to_bytes(2, "big"), np.uint8)
    body = np.ascontiguousarray(symbols, dtype=">u2").view(np.uint8).reshape(count, 2 * length)
    messages = np.hstack([np.broadcast_to(header, (count, len(header))), body]).tobytes()
    width = len(header) + 2 * length
    view = memoryview(messages)
    digests = b"".join([hashlib.sha256(view[start:start + width]).digest()[:4]
                        for start in range(0, count * width, width)])
    return np.frombuffer(digests, dtype=">u4").astype(np.uint64)


def padded_rows(symbols: np.ndarray) -> np.ndarray:
    "``encoding.is_padded`` of each row: nothing but END (0) after the first END"
    ended = np.maximum.accumulate(symbols == 0, axis=1) if symbols.shape[1] else symbols.astype(bool)
    return ~(ended & (symbols != 0)).any(axis=1)


def sign_bits(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    "``hadamard_sign_bit`` elementwise: the parity of popcount(row & column)"
    return (np.bitwise_count(rows & columns) & 1).astype(np.int64)


def _kept(rng: np.random.Generator, keep_numerator: int, keep_denominator: int, size: int) -> np.ndarray:
    threshold = keep_numerator * (PROB_DENOMINATOR // keep_denominator)
    return rng.integers(0, PROB_DENOMINATOR, size=size, dtype=np.uint64) < np.uint64(threshold)


def group_keys(params: HeavyHittersParams, strings: list[tuple[int, ...]]) -> np.ndarray:
    "keys[s, group]: the key string s reports in each group (the device's ``group_key``)"
    return np.array([[group_key(params, s, group) for group in range(params.groups)] for s in strings],
                    dtype=np.uint64).reshape(len(strings), params.groups)


def simulate_reports(params: HeavyHittersParams, strings: list[tuple[int, ...]], counts: np.ndarray,
                     rng: np.random.Generator, keys: np.ndarray | None = None) -> np.ndarray:
    """The payloads (each report's cell, ``device.report_cell``: PEM's (group, hash, y), SFP's (group, row, column,
    bit)) of sum(counts) devices, counts[s] of them holding the encoded string strings[s], each making one report
    (group drawn uniformly, as on the device); ``keys``: ``group_keys(params, strings)`` if known"""
    owner = np.repeat(np.arange(len(strings)), counts)
    n = len(owner)
    keys = group_keys(params, strings) if keys is None else keys
    group = rng.integers(0, params.groups, size=n)
    key = keys[owner, group]
    constants = oracle(params)
    kept = _kept(rng, constants.keep.numerator, constants.keep.denominator, n)
    if params.algorithm == "pem":
        g = constants.g  # type: ignore[union-attr]
        assert params.hash_count is not None
        family = np.array(olh_seeds(params.hash_count), dtype=np.uint64)
        index = rng.integers(0, params.hash_count, size=n)
        hashed = olh_hash_array(family[index, 0], family[index, 1], key, g)
        other = rng.integers(0, g - 1, size=n, dtype=np.uint64)
        y = np.where(kept, hashed, np.where(other < hashed, other, other + np.uint64(1))).astype(np.int64)
        return (group * params.hash_count + index) * g + y
    assert params.sketch_depth is not None and params.sketch_width is not None
    seeds = np.array(sketch_seeds(params.sketch_depth), dtype=np.uint64)
    row = rng.integers(0, params.sketch_depth, size=n)
    column = rng.integers(0, params.sketch_width, size=n)
    hashed = olh_hash_array(seeds[row, 0], seeds[row, 1], key, params.sketch_width).astype(np.int64)
    bit = sign_bits(hashed, column) ^ (~kept).astype(np.int64)
    return ((group * params.sketch_depth + row) * params.sketch_width + column) * 2 + bit


def simulate_aggregate(params: HeavyHittersParams, strings: list[tuple[int, ...]], counts: np.ndarray,
                       rng: np.random.Generator, keys: np.ndarray | None = None) -> PemAggregate | SfpAggregate:
    "The aggregate of ``simulate_reports``"
    table = PemAggregate if params.algorithm == "pem" else SfpAggregate
    return table.from_cells(params, simulate_reports(params, strings, counts, rng, keys))


def interval_coverage(params: HeavyHittersParams, words: list[str], n: int, datasets: int, top_k: int,
                      rng: np.random.Generator, exponent: float = 1.1,
                      shape: np.ndarray | None = None) -> tuple[int, int]:
    """Over ``datasets`` datasets of ``n`` devices and their decodes: how many found strings of the data have a 95%
    interval holding their true frequency, and how many were found (a spurious string, truth 0, is a false
    discovery, not an interval's miss).  A dataset's counts are multinomial over ``words`` with the relative
    frequencies ``shape`` by rank (default Zipf(exponent)), the ranks given to the words in a fresh random order:
    each dataset draws its strings' collisions in the fixed hash family anew, so the datasets are independent"""
    # the package imports this module at load time: its decoder is imported here, when the package is loaded
    from . import estimate_heavy_hitters

    symbols = [encode_value(params, word) for word in words]
    keys = group_keys(params, symbols)
    weights = 1 / np.arange(1, len(words) + 1) ** exponent if shape is None else np.asarray(shape, np.float64)
    covered = found = 0
    for _ in range(datasets):
        order = rng.permutation(len(words))
        counts = np.zeros(len(words), np.int64)
        counts[order] = np.bincount(rng.choice(len(words), size=n, p=weights / weights.sum()), minlength=len(words))
        truth = dict(zip(words, counts / n))
        estimate = estimate_heavy_hitters(params, simulate_aggregate(params, symbols, counts, rng, keys), top_k=top_k)
        for hitter in estimate.hitters:
            if hitter.value in truth:
                found += 1
                covered += hitter.ci_low <= truth[hitter.value] <= hitter.ci_high
    return covered, found
