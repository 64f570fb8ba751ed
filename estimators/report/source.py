"""A window's estimate as a report gets it: the one place it is made.

:func:`window_estimate` is called by the collector's ``/estimate`` endpoint and by ``collector.reporting`` (which
fetches a report's data from a collector's database or HTTP API for ``ldp-telemetry report`` and the demo), so
the JSON of an estimate is the same whichever way it travels.  No I/O here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from client_sdk.errors import LDPError

from .model import DailyResult


class SourceError(LDPError):
    "A report's data could not be fetched: unknown campaign, empty window, missing database, unreachable collector"


def window_estimate(spec: Any, aggregate: Any, confidence: float = 0.95) -> dict:
    """The JSON estimate of one window's merged aggregate; non-finite numbers become null (JSON has none).

    Raises :class:`estimators.NoReports` for an empty window."""
    import estimators

    return finite_json(estimators.estimate_aggregate(spec, aggregate, confidence=confidence).to_dict())


def finite_json(value: Any) -> Any:
    "``value`` with every NaN or infinity replaced by None"
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def daily_estimates(spec: Any, days: Sequence[tuple[str, Any]], confidence: float = 0.95) -> list[DailyResult]:
    "One estimate per day that has reports; none when the window is a single day"
    if len(days) <= 1:
        return []
    return [DailyResult(day, window_estimate(spec, aggregate, confidence)) for day, aggregate in days
            if aggregate.n > 0]
