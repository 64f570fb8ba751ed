"""Vectorised RAPPOR simulation with numpy, matching the SDK's distribution (tests and benchmarks only).

One report per client, so each client's permanent randomized response is a fresh draw from the same
distribution the SDK's HMAC derivation gives for a random secret.  The simulator draws with the SDK's quantized
probabilities (``client_sdk.rappor.quantized_probabilities``).

* :func:`simulate_rappor` returns a :class:`ReportBatch` of individual reports (cohort and packed bits).
* :func:`simulate_rappor_counts` returns the aggregate (m, k+1) directly: given the Bloom filters, bits are
  independent, so each bit count is ``Binomial(T, p11) + Binomial(N_j - T, p01)`` with T the clients of the
  cohort whose Bloom bit is set.  This is the exact distribution of the counts, at a cost independent of n.
* :func:`interval_coverage` decodes many simulated collections: how often each candidate's interval holds its
  true proportion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from client_sdk.rappor import RapporParams, quantized_probabilities, value_bit_positions
from client_sdk.spec import Spec

from ..registry import ReportBatch
from .decode import decode_rappor
from .design import CandidateMap

CHUNK_CELLS = 1 << 22  # clients x bits drawn per numpy step


def simulate_rappor(
    spec: Spec,
    values: Sequence[Any] | np.ndarray,
    rng: np.random.Generator,
    cohorts: np.ndarray | None = None,
) -> ReportBatch:
    "One report per entry of ``values``; client i is in cohort ``i mod m`` unless ``cohorts`` says otherwise"
    assert spec.rappor is not None
    unique, index = np.unique(
        np.asarray(values, dtype=object if spec.rappor.encoding != "boolean" else bool), return_inverse=True
    )
    return simulate_rappor_indices(spec, list(unique), index, rng, cohorts)


def simulate_rappor_indices(
    spec: Spec,
    unique_values: Sequence[Any],
    value_index: np.ndarray,
    rng: np.random.Generator,
    cohorts: np.ndarray | None = None,
) -> ReportBatch:
    "Like :func:`simulate_rappor` with the values given as indices into ``unique_values`` (faster for 10^6)"
    params = spec.rappor
    assert params is not None
    value_index = np.asarray(value_index, dtype=np.int64).ravel()
    n = len(value_index)
    if cohorts is None:
        cohorts = np.arange(n, dtype=np.int64) % params.m
    cohorts = np.asarray(cohorts, dtype=np.int64).ravel()
    if len(cohorts) != n or (n and (cohorts.min() < 0 or cohorts.max() >= params.m)):
        raise ValueError(f"cohorts must hold one value in [0, {params.m}) per client")
    table = position_table(params, unique_values, spec.candidates)
    f_half, p, q = (float(x) for x in quantized_probabilities(params))
    k = params.k
    packed = np.empty((n, (k + 7) // 8), dtype=np.uint8)
    rows_per_chunk = max(1, CHUNK_CELLS // k)
    for start in range(0, n, rows_per_chunk):
        stop = min(n, start + rows_per_chunk)
        bloom = _bloom_rows(table[value_index[start:stop], cohorts[start:stop]], k)
        draw = rng.random(bloom.shape)
        prr = np.where(draw < f_half, True, np.where(draw < 2 * f_half, False, bloom))
        irr = rng.random(bloom.shape) < np.where(prr, q, p)
        packed[start:stop] = np.packbits(irr, axis=1)
    return ReportBatch("rappor", n, {"cohort": cohorts, "bits": packed})


def simulate_rappor_counts(
    params: RapporParams,
    unique_values: Sequence[Any],
    probabilities: Sequence[float] | np.ndarray,
    n: int,
    rng: np.random.Generator,
    candidates: Sequence[str] | None = None,
    table: np.ndarray | None = None,
) -> np.ndarray:
    """The aggregate (m, k+1) of n clients, cohort i mod m, values drawn i.i.d. from ``probabilities``.

    ``table`` (from :func:`position_table`) may be passed to reuse the hashing across runs."""
    weights = np.asarray(probabilities, dtype=float)
    if len(weights) != len(unique_values) or np.any(weights < 0) or not np.isclose(weights.sum(), 1.0):
        raise ValueError("probabilities must be one non-negative weight per value, summing to 1")
    m, k = params.m, params.k
    reports = np.full(m, n // m, dtype=np.int64)
    reports[: n % m] += 1
    per_cohort_values = rng.multinomial(reports, weights / weights.sum())  # (m, U)
    if table is None:
        table = position_table(params, unique_values, candidates)
    cohort_of_cell = np.broadcast_to(np.arange(m)[None, :, None], table.shape)
    clients = np.broadcast_to(per_cohort_values.T[:, :, None], table.shape)
    keep = table >= 0
    true_ones = (
        np.bincount((cohort_of_cell[keep] * k + table[keep]), weights=clients[keep], minlength=m * k)
        .reshape(m, k)
        .astype(np.int64)
    )
    f_half, p, q = (float(x) for x in quantized_probabilities(params))
    p11, p01 = (1 - f_half) * q + f_half * p, (1 - f_half) * p + f_half * q
    ones = rng.binomial(true_ones, p11) + rng.binomial(reports[:, None] - true_ones, p01)
    return np.column_stack([reports, ones]).astype(np.int64)


def position_table(
    params: RapporParams, unique_values: Sequence[Any], candidates: Sequence[str] | None = None
) -> np.ndarray:
    "Bloom bit positions per (value, cohort), shape (U, m, h) int64, repeats and absent bits as -1"
    width = params.h
    table = np.full((len(unique_values), params.m, width), -1, dtype=np.int64)
    index_map = {c: i for i, c in enumerate(candidates)} if candidates is not None else None
    for u, value in enumerate(unique_values):
        for cohort in range(params.m):
            positions = sorted(set(value_bit_positions(params, value, cohort, index_map)))
            table[u, cohort, : len(positions)] = positions
            if params.encoding != "bloom":
                table[u, 1:, :] = table[u, :1, :]  # no hashing: the same bits in every cohort
                break
    return table


def _bloom_rows(positions: np.ndarray, k: int) -> np.ndarray:
    "0/1 Bloom rows (n, k) from per-client positions (n, h) with -1 for none"
    rows = np.zeros((len(positions), k), dtype=bool)
    for column in positions.T:
        present = column >= 0
        rows[np.flatnonzero(present), column[present]] = True
    return rows


def interval_coverage(
    params: RapporParams,
    unique_values: Sequence[str],
    probabilities: Sequence[float] | np.ndarray,
    n: int,
    runs: int,
    rng: np.random.Generator,
    candidates: Sequence[str] | None = None,
) -> tuple[np.ndarray, set[str]]:
    """The share of ``runs`` collections of n clients whose decoded interval holds each candidate's true proportion
    (0 for a candidate that is not a value), in candidate order, and the interval methods the decodes used.

    The resampled refits are off (they change the standard errors, not the intervals) and so is the detection
    frequency limit (small n are decoded too)."""
    candidates = list(unique_values) if candidates is None else list(candidates)
    weights = np.asarray(probabilities, dtype=float)
    weights = weights / weights.sum()
    truth = dict(zip(unique_values, weights))
    candidate_map = CandidateMap.from_candidates(params, candidates)
    table = position_table(params, unique_values, candidates)
    hits = np.zeros(len(candidates))
    methods: set[str] = set()
    for _ in range(runs):
        counts = simulate_rappor_counts(params, unique_values, weights, n, rng, candidates, table)
        result = decode_rappor(params, counts, candidate_map, resamples=0, max_detection_frequency=1.0)
        methods.add(str(result.extra.get("interval_method")))
        by_string = {e.string: e for e in result.estimates}
        hits += [by_string[c].ci_low <= truth.get(c, 0.0) <= by_string[c].ci_high for c in candidates]
    return hits / runs, methods
