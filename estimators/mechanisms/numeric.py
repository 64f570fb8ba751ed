"""Means on the server: Laplace, Duchi, Piecewise, Hybrid (device side: ``client_sdk.mechanisms.numeric``).

=========  ==================================  ====================================================================
mechanism  batch columns                       sufficient statistic (exact Python integers)
=========  ==================================  ====================================================================
laplace    code (int64)                        [sum code, sum code^2]
duchi      code (int64, 0/1)                   [sum code]
piecewise  code (int64)                        [sum code, sum code^2]
hybrid     branch (0 Duchi / 1 Piecewise),     [n Duchi, sum Duchi code, n Piecewise, sum Piecewise code,
           code (int64)                        sum Piecewise code^2]
=========  ==================================  ====================================================================

Sums are exact, so merging in any order gives the same aggregate and sums of squares cannot overflow.  Each
code maps to an unbiased value Z of t = 2 (v - low)/(high - low) - 1; ``unbiased_sums`` gives sum Z and sum Z^2.
The simulators' randomized rounding uses a double where the SDK uses an exact fraction (a 2**-53 difference).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from client_sdk.mechanisms import Duchi, Hybrid, Laplace, NumericMechanism, Piecewise
from client_sdk.mechanisms.numeric import GRID, PM_CELLS

from ..means import estimate_mean
from .base import ReportBatch, ServerMechanism, pair_columns, pair_payloads


class MeanMechanism(ServerMechanism):
    "A numeric mechanism: true values are numbers clamped to the spec's range and mapped to t in [-1, 1]"

    exact_sums = True
    statistic_size: ClassVar[int] = 2
    device: NumericMechanism

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        return {"code": np.asarray(payloads, dtype=np.int64).reshape(len(payloads))}

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        return batch["code"].tolist()

    def zeros(self) -> np.ndarray:
        return np.array([0] * self.statistic_size, dtype=object)

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        code = batch["code"]
        return np.array([exact_sum(code), exact_sum_of_squares(code)], dtype=object)

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        return np.array([sum(payloads), sum(c * c for c in payloads)], dtype=object)

    def simulate(self, true_values: Any, rng: np.random.Generator) -> ReportBatch:
        low, high = self.device.low, self.device.high
        clamped = np.clip(np.asarray(true_values, dtype=np.float64).reshape(-1), low, high)
        t = np.clip(2 * (clamped - low) / (high - low) - 1, -1.0, 1.0)
        return ReportBatch(self.spec.mechanism, len(t), self.simulate_unit(t, rng))

    def simulate_unit(self, t: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def unbiased_sums(self, n: int, sums: list[int]) -> tuple[float, float]:
        "(sum Z, sum Z^2) over the n reports, on the [-1, 1] scale"
        raise NotImplementedError

    def variance(self) -> float:
        return self.device.worst_case_variance()

    def binary_count(self, n: int, sums: list[int]) -> tuple[int, float] | None:
        """(ones, c) when every report's Z is +-1/c, a binomial count of ones with P(one) = (1 + c E[t]) / 2, so
        the mean's interval is the count's (Duchi, Hybrid at eps <= 0.61); None for the other mechanisms"""
        return None

    def estimate(self, aggregate: Any, *, confidence: float, delta: float | None) -> Any:
        return estimate_mean(self.spec, aggregate, confidence=confidence, delta=delta)


def randomized_round(scaled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    "floor or floor + 1, unbiased"
    low = np.floor(scaled)
    return (low + (rng.random(len(scaled)) < scaled - low)).astype(np.int64)


class LaplaceServer(MeanMechanism):
    names = ("laplace",)
    device: Laplace

    def simulate_unit(self, t: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # discrete Laplace as the difference of two geometric variables: P(Y = y) proportional to exp(-|y|/scale)
        success = -np.expm1(-1 / float(self.device.scale_steps))
        n = len(t)
        noise = rng.geometric(success, size=n).astype(np.int64) - rng.geometric(success, size=n).astype(np.int64)
        return {"code": randomized_round(t * GRID, rng) + noise}

    def unbiased_sums(self, n: int, sums: list[int]) -> tuple[float, float]:
        return sums[0] / GRID, sums[1] / GRID**2


def duchi_codes(device: Duchi, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(len(t)) < (1 + t * float(device.slope)) / 2).astype(np.int64)


def duchi_sums(device: Duchi, n: int, ones: int) -> tuple[float, float]:
    c = device.magnitude
    return c * (2 * ones - n), n * c * c


class DuchiServer(MeanMechanism):
    names = ("duchi",)
    statistic_size = 1
    device: Duchi

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        return np.array([exact_sum(batch["code"])], dtype=object)

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        return np.array([sum(payloads)], dtype=object)

    def simulate_unit(self, t: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"code": duchi_codes(self.device, t, rng)}

    def unbiased_sums(self, n: int, sums: list[int]) -> tuple[float, float]:
        return duchi_sums(self.device, n, sums[0])

    def binary_count(self, n: int, sums: list[int]) -> tuple[int, float] | None:
        return int(sums[0]), float(self.device.slope)


def piecewise_codes(device: Piecewise, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(t)
    c = device.magnitude
    left = (c + 1) * t / 2 - (c - 1) / 2
    u = rng.random(n)
    central = rng.random(n) < float(device.central)
    position = u * (c + 1)
    below = left + c
    outside = np.where(position < below, -c + position, left + c - 1 + (position - below))
    x = np.where(central, left + u * (c - 1), outside)
    return np.clip(randomized_round((x + c) / device.cell_width, rng), 0, PM_CELLS)


def piecewise_sums(device: Piecewise, n: int, total: int, squares: int) -> tuple[float, float]:
    c = device.magnitude
    w = 2 * c / PM_CELLS
    return -n * c + w * total, n * c * c - 2 * c * w * total + w * w * squares


class PiecewiseServer(MeanMechanism):
    names = ("piecewise",)
    device: Piecewise

    def simulate_unit(self, t: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"code": piecewise_codes(self.device, t, rng)}

    def unbiased_sums(self, n: int, sums: list[int]) -> tuple[float, float]:
        return piecewise_sums(self.device, n, sums[0], sums[1])


class HybridServer(MeanMechanism):
    names = ("hybrid",)
    statistic_size = 5
    device: Hybrid

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        return pair_columns(payloads, "branch", "code")

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        return pair_payloads(batch, "branch", "code")

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        branch, code = batch["branch"], batch["code"]
        duchi, pm = code[branch == 0], code[branch == 1]
        return np.array([len(duchi), exact_sum(duchi), len(pm), exact_sum(pm), exact_sum_of_squares(pm)],
                        dtype=object)

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        duchi = [code for branch, code in payloads if branch == 0]
        pm = [code for branch, code in payloads if branch == 1]
        return np.array([len(duchi), sum(duchi), len(pm), sum(pm), sum(c * c for c in pm)], dtype=object)

    def simulate_unit(self, t: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        branch = (rng.random(len(t)) < float(self.device.alpha)).astype(np.int64)
        code = np.where(branch == 1, piecewise_codes(self.device.piecewise, t, rng),
                        duchi_codes(self.device.duchi, t, rng))
        return {"branch": branch, "code": code}

    def unbiased_sums(self, n: int, sums: list[int]) -> tuple[float, float]:
        d_sum, d_sq = duchi_sums(self.device.duchi, sums[0], sums[1])
        p_sum, p_sq = piecewise_sums(self.device.piecewise, sums[2], sums[3], sums[4])
        return d_sum + p_sum, d_sq + p_sq

    def binary_count(self, n: int, sums: list[int]) -> tuple[int, float] | None:
        if self.device.alpha != 0:  # Piecewise reports are possible: Z is not two-valued
            return None
        return int(sums[1]), float(self.device.duchi.slope)


def exact_sum(code: np.ndarray) -> int:
    "Exact sum: int64 when it cannot overflow, Python integers otherwise"
    if len(code) == 0:
        return 0
    if int(np.abs(code).max()) * len(code) < (1 << 62):
        return int(code.sum())
    return sum(int(c) for c in code.tolist())


def exact_sum_of_squares(code: np.ndarray) -> int:
    "Exact sum of squares: int64 dot products over chunks small enough not to overflow, else Python integers"
    if len(code) == 0:
        return 0
    largest = int(np.abs(code).max())
    if largest == 0:
        return 0
    rows = min(1 << 20, (1 << 62) // (largest * largest))
    if rows < 1:
        return sum(int(c) * int(c) for c in code.tolist())
    total = 0
    for start in range(0, len(code), rows):
        part = code[start:start + rows]
        total += int(np.dot(part, part))
    return total
