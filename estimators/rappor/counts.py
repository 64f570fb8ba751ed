"""The RAPPOR sufficient statistic (reports and bit counts per cohort) and its de-biased bit estimates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from client_sdk.rappor import RapporParams
from client_sdk.spec import Spec

from ..bits import grouped_bit_counts
from ..registry import ReportBatch

# Above this many (cohort, byte, value) bins one histogram gets too large: count cohort by cohort instead.
MAX_JOINT_HISTOGRAM_BINS = 1 << 24


def rappor_counts(spec: Spec, batch: ReportBatch) -> np.ndarray:
    """Per cohort ``[reports, ones at bit 0, ..., ones at bit k-1]``, shape (m, k+1), int64.

    One histogram of (cohort, byte position, byte value) triples, then a 256 x 8 table lookup: no Python loop
    over reports.  Very wide filters with many cohorts count cohort by cohort to bound the histogram."""
    params = spec.rappor
    assert params is not None
    cohorts = np.asarray(batch["cohort"], dtype=np.int64)
    packed = np.asarray(batch["bits"], dtype=np.uint8)
    m, k = params.m, params.k
    nbytes = (k + 7) // 8
    if packed.shape != (len(cohorts), nbytes):
        raise ValueError(f"bits must have shape (n, {nbytes}), got {packed.shape}")
    if len(cohorts) and (cohorts.min() < 0 or cohorts.max() >= m):
        raise ValueError(f"cohort values must lie in [0, {m})")
    counts = np.zeros((m, k + 1), dtype=np.int64)
    counts[:, 0] = np.bincount(cohorts, minlength=m)
    if m * nbytes * 256 <= MAX_JOINT_HISTOGRAM_BINS:
        counts[:, 1:] = grouped_bit_counts(cohorts, packed, m, k)
    else:
        order = np.argsort(cohorts, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(counts[:, 0])])
        for cohort in np.flatnonzero(counts[:, 0]):
            rows = packed[order[bounds[cohort] : bounds[cohort + 1]]]
            counts[cohort, 1:] = grouped_bit_counts(None, rows, 1, k)[0]
    return counts


def check_counts(params: RapporParams, counts: np.ndarray) -> np.ndarray:
    "``counts`` as int64 (m, k+1) after checking shape and ranges; ValueError names what is wrong"
    array = np.asarray(counts)
    if array.shape != (params.m, params.k + 1):
        raise ValueError(f"counts must have shape (m, k+1) = ({params.m}, {params.k + 1}), got {array.shape}")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ValueError("counts must be whole numbers")
    elif array.dtype.kind not in "iu":
        raise ValueError("counts must be integers")
    array = array.astype(np.int64)
    if np.any(array < 0):
        raise ValueError("counts must be non-negative")
    if np.any(array[:, 1:] > array[:, :1]):
        raise ValueError("a bit count exceeds its cohort's number of reports")
    return array


@dataclass(frozen=True)
class BitEstimates:
    """De-biased Bloom-bit frequencies per cohort (EPK 2014, section 4; reference ``EstimateBloomCounts``).

    ``proportions[j, i]`` estimates the fraction of cohort j's clients whose true Bloom bit i is 1:
    ``(c_ji / N_j - p01) / (p11 - p01)``, unbiased; ``std_errors`` is ``sqrt(r (1 - r) / N_j) / (p11 - p01)``
    with ``r`` the reported-1 rate implied by the clamped estimate, and infinite for empty cohorts."""

    reports: np.ndarray  # (m,) int64
    proportions: np.ndarray  # (m, k)
    std_errors: np.ndarray  # (m, k)

    @property
    def nonempty(self) -> np.ndarray:
        return self.reports > 0


def estimate_bloom_bits(params: RapporParams, counts: np.ndarray) -> BitEstimates:
    "De-bias the bit counts of every cohort; empty cohorts get proportion 0 and an infinite standard error"
    counts = check_counts(params, counts)
    reports = counts[:, 0]
    p11, p01 = params.p11, params.p01
    spread = p11 - p01
    safe_reports = np.maximum(reports, 1)[:, None].astype(float)
    proportions = (counts[:, 1:] / safe_reports - p01) / spread
    clamped = np.clip(proportions, 0.0, 1.0)
    reported_rate = clamped * p11 + (1 - clamped) * p01
    # Keep the binomial variance away from 0 when p01 or p11 is 0 or 1 (a continuity correction of half a report).
    margin = 0.5 / (safe_reports + 1)
    reported_rate = np.clip(reported_rate, margin, 1 - margin)
    std_errors = np.sqrt(reported_rate * (1 - reported_rate) / safe_reports) / spread
    empty = reports == 0
    proportions[empty] = 0.0
    std_errors[empty] = np.inf
    return BitEstimates(reports, proportions, std_errors)
