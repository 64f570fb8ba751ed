"""A vectorised simulator: a million users' reports in seconds, with exactly the SDK's output distribution.

``simulate(spec, true_values, rng)`` returns a :class:`~estimators.batch.ReportBatch` for numpy arrays of true
values (domain indices for categorical campaigns, numbers for numeric ones, strings for RAPPOR).  Each
mechanism's simulator is in its server module (``estimators.mechanisms``) and draws with the SDK's quantized
probabilities, so the two agree in distribution; the tests compare them with chi-square tests.

This is simulation code (numpy's generator, seedable); the device path never uses it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .registry import ReportBatch, mechanism_for


def simulate(spec: Any, true_values: Any, rng: np.random.Generator) -> ReportBatch:
    "Reports for every entry of ``true_values`` (domain indices, numbers for numeric campaigns, RAPPOR strings)"
    return mechanism_for(spec).simulate(true_values, rng)


__all__ = ["simulate"]
