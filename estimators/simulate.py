"""A vectorised simulator: a million users' reports in seconds, with exactly the SDK's output distribution.

``simulate(spec, true_values, rng)`` returns a :class:`~estimators.batch.ReportBatch` for numpy arrays of true
values (domain indices for categorical campaigns, numbers for numeric ones).  It uses the SDK's quantized
probabilities (``client_sdk.mechanisms``), so the two agree draw for draw in distribution; the tests compare
them with chi-square tests.  Comparisons of a uniform double with a probability that is a multiple of 2**-32
are exact; the randomized rounding of the numeric mechanisms uses a double where the SDK uses an exact
fraction, a difference below 2**-53.

This is simulation code (numpy's generator, seedable); the device path never uses it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from client_sdk.mechanisms import mechanism_from_spec
from client_sdk.mechanisms.categorical import GRR, OLH, Hadamard, _UnaryEncoding
from client_sdk.mechanisms.numeric import GRID, PM_CELLS, Duchi, Hybrid, Laplace, NumericMechanism, Piecewise
from client_sdk.spec import Spec, load_spec

from .batch import ReportBatch

BITS_CHUNK = 1 << 24  # unary-encoding bits simulated per numpy step


def simulate(spec: Any, true_values: Any, rng: np.random.Generator) -> ReportBatch:
    "Reports for every entry of ``true_values`` (domain indices, or numbers for numeric campaigns)"
    spec = load_spec(spec)
    mechanism = mechanism_from_spec(spec)
    values = np.asarray(true_values)
    if spec.is_categorical:
        index = values.astype(np.int64)
        if index.size and (index.min() < 0 or index.max() >= spec.domain_size):
            raise ValueError("true_values must be domain indices in [0, d)")
        return _simulate_categorical(spec, mechanism, index, rng)
    if spec.is_numeric:
        assert isinstance(mechanism, NumericMechanism)
        low, high = spec.range  # type: ignore[misc]
        clamped = np.clip(values.astype(np.float64), low, high)
        t = np.clip(2 * (clamped - low) / (high - low) - 1, -1.0, 1.0)
        return _simulate_numeric(mechanism, t, rng)
    from .rappor import simulate_rappor

    return simulate_rappor(spec, values, rng)


def _simulate_categorical(spec: Spec, mechanism: Any, index: np.ndarray, rng: np.random.Generator) -> ReportBatch:
    n = len(index)
    m = spec.mechanism
    if isinstance(mechanism, GRR):
        return ReportBatch(m, n, {"index": _grr(index, float(mechanism.keep), mechanism.d, rng)})
    if isinstance(mechanism, _UnaryEncoding):
        return ReportBatch(m, n, {"bits": _unary(index, mechanism, rng)})
    if isinstance(mechanism, OLH):
        seeds = rng.integers(0, np.iinfo(np.uint64).max, size=(n, 2), dtype=np.uint64, endpoint=True)
        a, b = seeds[:, 0].copy(), seeds[:, 1].copy()
        with np.errstate(over="ignore"):
            hashed = (((a * index.astype(np.uint64) + b) >> np.uint64(32)) * np.uint64(mechanism.g)) >> np.uint64(32)
        y = _grr(hashed.astype(np.int64), float(mechanism.keep), mechanism.g, rng)
        return ReportBatch(m, n, {"a": a, "b": b, "y": y})
    if isinstance(mechanism, Hadamard):
        column = rng.integers(0, mechanism.size, size=n, dtype=np.int64)
        bit = _parity(index & column)
        flip = rng.random(n) >= float(mechanism.keep)
        return ReportBatch(m, n, {"column": column, "bit": bit ^ flip.astype(np.int64)})
    raise ValueError(f"cannot simulate {m!r}")


def _grr(index: np.ndarray, keep: float, d: int, rng: np.random.Generator) -> np.ndarray:
    n = len(index)
    other = rng.integers(0, d - 1, size=n, dtype=np.int64)
    other += other >= index
    return np.where(rng.random(n) < keep, index, other)


def _unary(index: np.ndarray, mechanism: _UnaryEncoding, rng: np.random.Generator) -> np.ndarray:
    """Every bit Bernoulli(q*) by comparing a uniform 32-bit integer with q* 2^32, then the true bit redrawn.

    The comparison is done a byte at a time: the top byte decides unless it equals the threshold's top byte
    (probability 1/256), and only then are the low 24 bits drawn.  Exact, with a quarter of the random bytes."""
    n, d = len(index), mechanism.d
    threshold = int(mechanism.other_bit_one * (1 << 32))
    high, low = threshold >> 24, threshold & 0xFFFFFF
    nbytes = (d + 7) // 8
    out = np.empty((n, nbytes), dtype=np.uint8)
    rows = max(1, BITS_CHUNK // d)
    p_true = float(mechanism.true_bit_one)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        top = np.frombuffer(rng.bytes((stop - start) * d), dtype=np.uint8).reshape(stop - start, d)
        bits = top < high
        ties = np.flatnonzero(top == high)
        if len(ties):
            bits.reshape(-1)[ties] = rng.integers(0, 1 << 24, size=len(ties)) < low
        bits[np.arange(stop - start), index[start:stop]] = rng.random(stop - start) < p_true
        out[start:stop] = np.packbits(bits, axis=1)
    return out


def _parity(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    for shift in (32, 16, 8, 4, 2, 1):
        x ^= x >> np.uint64(shift)
    return (x & np.uint64(1)).astype(np.int64)


def _randomized_round(scaled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    low = np.floor(scaled)
    return (low + (rng.random(len(scaled)) < scaled - low)).astype(np.int64)


def _discrete_laplace(scale: float, n: int, rng: np.random.Generator) -> np.ndarray:
    "Difference of two geometric variables: P(Y = y) proportional to exp(-|y|/scale)"
    success = -np.expm1(-1 / scale)
    return rng.geometric(success, size=n).astype(np.int64) - rng.geometric(success, size=n).astype(np.int64)


def _duchi(mechanism: Duchi, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(len(t)) < (1 + t * float(mechanism.slope)) / 2).astype(np.int64)


def _piecewise(mechanism: Piecewise, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(t)
    c = mechanism.magnitude
    left = (c + 1) * t / 2 - (c - 1) / 2
    u = rng.random(n)
    central = rng.random(n) < float(mechanism.central)
    position = u * (c + 1)
    below = left + c
    outside = np.where(position < below, -c + position, left + c - 1 + (position - below))
    x = np.where(central, left + u * (c - 1), outside)
    return np.clip(_randomized_round((x + c) / mechanism.cell_width, rng), 0, PM_CELLS)


def _simulate_numeric(mechanism: NumericMechanism, t: np.ndarray, rng: np.random.Generator) -> ReportBatch:
    n = len(t)
    m = mechanism.spec.mechanism
    if isinstance(mechanism, Laplace):
        code = _randomized_round(t * GRID, rng) + _discrete_laplace(float(mechanism.scale_steps), n, rng)
        return ReportBatch(m, n, {"code": code})
    if isinstance(mechanism, Duchi):
        return ReportBatch(m, n, {"code": _duchi(mechanism, t, rng)})
    if isinstance(mechanism, Piecewise):
        return ReportBatch(m, n, {"code": _piecewise(mechanism, t, rng)})
    assert isinstance(mechanism, Hybrid)
    branch = (rng.random(n) < float(mechanism.alpha)).astype(np.int64)
    code = np.where(branch == 1, _piecewise(mechanism.piecewise, t, rng), _duchi(mechanism.duchi, t, rng))
    return ReportBatch(m, n, {"branch": branch, "code": code})


