"""The period a report belongs to: its label is the batch the ledger charges once and the estimators group by.

Labels are UTC: ``2026-01-05T13`` (hour), ``2026-01-05`` (day), the Monday starting the week ``2026-01-05`` (week)."""

from __future__ import annotations

import time

from .params import RepeatedParams

_MONDAY_OFFSET = 3 * 86400  # 1970-01-01 was a Thursday: the Monday before it was 3 days earlier


def period_start(params: RepeatedParams, timestamp: float) -> int:
    "The UTC second (since the epoch) the period holding ``timestamp`` starts at"
    seconds = params.period_seconds
    offset = _MONDAY_OFFSET if params.period == "week" else 0
    return int((int(timestamp) + offset) // seconds * seconds - offset)


def period_of(params: RepeatedParams, timestamp: float) -> str:
    "The label of the period holding ``timestamp`` (seconds since the epoch, UTC)"
    start = time.gmtime(period_start(params, timestamp))
    return time.strftime("%Y-%m-%dT%H" if params.period == "hour" else "%Y-%m-%d", start)


def period_label_start(params: RepeatedParams, label: str) -> int | None:
    "The UTC second the period labelled ``label`` starts at; None unless ``label`` is exactly such a label"
    if len(label) != (13 if params.period == "hour" else 10) or not label.isascii():
        return None
    # here: calendar loads datetime, which ``import client_sdk`` does not (test_spec_lite.py)
    import calendar

    try:
        parsed = time.strptime(label, "%Y-%m-%dT%H" if params.period == "hour" else "%Y-%m-%d")
    except ValueError:
        return None
    start = calendar.timegm(parsed)
    return start if period_of(params, start) == label else None
