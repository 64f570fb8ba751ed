"""RAPPOR on the server (device side: ``client_sdk.mechanisms.rappor``; the decoder: ``estimators.rappor``).

Batch columns: cohort (int64), bits (packed uint8 rows, (n, ceil(k/8))).  Sufficient statistic: per cohort
``[reports, ones at bit 0, ..., ones at bit k-1]``, shape (m, k+1).  The simulator takes the true values
(strings, or booleans for the boolean encoding).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from client_sdk.mechanisms import RapporMechanism

from ..bits import hex_rows
from ..errors import CandidatesRequired
from ..rappor.counts import rappor_counts
from ..rappor.decode import estimate_rappor
from ..rappor.simulate import simulate_rappor
from .base import ReportBatch, ServerMechanism
from .categorical import small_bit_counts


class RapporServer(ServerMechanism):
    names = ("rappor",)
    device: RapporMechanism

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        return {
            "cohort": np.asarray([p["cohort"] for p in payloads], dtype=np.int64).reshape(len(payloads)),
            "bits": hex_rows([p["bits"] for p in payloads], (self.device.params.k + 7) // 8),
        }

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        return [{"cohort": cohort, "bits": row.tobytes().hex()}
                for cohort, row in zip(batch["cohort"].tolist(), batch["bits"])]

    def zeros(self) -> np.ndarray:
        params = self.device.params
        return np.zeros((params.m, params.k + 1), dtype=np.int64)

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        return rappor_counts(self.spec, batch)

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        params = self.device.params
        counts = [[0] * (params.k + 1) for _ in range(params.m)]
        for payload in payloads:
            row = counts[payload["cohort"]]
            row[0] += 1
            for position, ones in enumerate(small_bit_counts([payload["bits"]], params.k), start=1):
                row[position] += ones
        return np.array(counts, dtype=np.int64)

    def simulate(self, true_values: Any, rng: np.random.Generator) -> ReportBatch:
        return simulate_rappor(self.spec, true_values, rng)

    def variance(self) -> float:
        "Per-report variance of one de-biased Bloom bit at proportion 0: p01 (1 - p01) / (p11 - p01)^2"
        params = self.device.params
        return params.p01 * (1 - params.p01) / (params.p11 - params.p01) ** 2

    def estimate(self, aggregate: Any, *, confidence: float, delta: float | None) -> Any:
        return estimate_rappor(self.spec, aggregate, confidence=confidence)

    def check_estimable(self) -> None:
        "Bloom-filter reports are decoded against candidate strings: a spec without them cannot be estimated"
        if self.device.params.encoding == "bloom" and not self.spec.candidates:
            raise CandidatesRequired(f"campaign {self.spec.name!r} has no candidates: Bloom-filter RAPPOR is "
                                     "decoded against a candidate list; create its next version with "
                                     "'candidates' in the spec")
