"""The candidate design matrix: which (cohort, bit) rows each candidate string sets.

A :class:`CandidateMap` holds, per candidate, its ``h*m`` Bloom positions as 0-based row indices
``cohort * k + bit`` (-1 where a reference map file leaves a field empty); the reference map CSV stores the same
numbers 1-based.  The matrix is sparse (``m*k`` rows, one column per candidate, ones where set), so 10,000
candidates over 64 cohorts of 128 bits take about 15 MB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from client_sdk.rappor import RapporParams, bloom_positions_many

if TYPE_CHECKING:  # scipy loads only when a decode runs, not with the estimators
    import scipy.sparse as sp


@dataclass(frozen=True)
class CandidateMap:
    "Candidate strings and their Bloom rows, shape (M, h*m): row index ``cohort*k + bit``, -1 if absent"

    params: RapporParams
    candidates: tuple[str, ...]
    positions: np.ndarray

    @classmethod
    def from_candidates(cls, params: RapporParams, candidates: Sequence[str]) -> CandidateMap:
        "Hash every candidate in every cohort as ``bloom_bit_positions`` does (duplicates dropped, first kept)"
        unique = tuple(dict.fromkeys(candidates))
        if params.encoding != "bloom":
            raise ValueError(f"a candidate map is for the bloom encoding, not {params.encoding!r}")
        k, h, m = params.k, params.h, params.m
        encoded = [value.encode("utf-8") for value in unique]
        positions = np.empty((len(unique), m * h), dtype=np.int64)
        for cohort in range(m):
            hashed = np.array(bloom_positions_many(encoded, cohort, k, h), dtype=np.int64).reshape(len(unique), h)
            positions[:, cohort * h : (cohort + 1) * h] = hashed + cohort * k
        return cls(params, unique, positions)

    def matrix(self, rows: np.ndarray | None = None) -> sp.csc_matrix:
        "The 0/1 design matrix (m*k, M) as float64 CSC; ``rows`` keeps only those rows, in that order"
        # imported here: scipy.sparse costs 0.3 s of import (230 modules), only for a decoder's sparse system
        import scipy.sparse as sp  # here, not at import: the estimators load without scipy

        count, width = self.positions.shape
        columns = np.repeat(np.arange(count, dtype=np.int64), width)
        flat = self.positions.ravel()
        keep = flat >= 0
        shape = (self.params.m * self.params.k, count)
        matrix = sp.coo_matrix((np.ones(int(keep.sum())), (flat[keep], columns[keep])), shape=shape).tocsc()
        matrix.sum_duplicates()
        matrix.data[:] = 1.0  # two hashes on one bit still set it once
        return matrix if rows is None else matrix[rows]

    def __len__(self) -> int:
        return len(self.candidates)
