"""The one clock text of ldp-telemetry: the UTC day, ``YYYY-MM-DD``, for the device and the collector alike.

A campaign's days (report partitions, expiry, key creation, batches) are UTC days.  POSIX time counts 86,400 s a
day, so the day of ``seconds`` is ``seconds // 86400``; its text is made once per day, not per call (the collector
asks several times per request).  "Now" is ``time.time()``, looked up on every call, so a test moves the clock with
``monkeypatch.setattr(time, "time", ...)``.
"""

from __future__ import annotations

import time

_day: tuple[int, str] = (-1, "")


def utc_day(seconds: float) -> str:
    "The UTC day of a POSIX time, YYYY-MM-DD (as ``datetime.fromtimestamp(seconds, timezone.utc).date()``)"
    global _day
    number = int(seconds // 86400)
    cached = _day
    if cached[0] != number:
        cached = _day = (number, time.strftime("%Y-%m-%d", time.gmtime(number * 86400)))
    return cached[1]


def utc_today() -> str:
    "Today's UTC day, YYYY-MM-DD"
    return utc_day(time.time())


def day_start(day: str) -> float:
    "The POSIX time at which the UTC day ``day`` (YYYY-MM-DD) begins: the inverse of ``utc_day``"
    # imported here: calendar loads datetime, which import client_sdk does not (tests/client_sdk/test_spec_lite.py)
    import calendar

    return float(calendar.timegm(time.strptime(day, "%Y-%m-%d")))


# A distributed campaign's batches: ``length`` seconds dividing a day (a spec's ``window``), aligned to the UTC day.
# A day's batch is named by its day (YYYY-MM-DD); a shorter one by its start, YYYY-MM-DDTHH:MMZ.
DAY_SECONDS = 86400
_MINUTE_BATCH = "%Y-%m-%dT%H:%MZ"


def batch_at(seconds: float, length: int = DAY_SECONDS) -> str:
    "The name of the batch of ``length`` seconds (dividing a day) that the POSIX time ``seconds`` falls in"
    if length == DAY_SECONDS:
        return utc_day(seconds)
    return time.strftime(_MINUTE_BATCH, time.gmtime(int(seconds // length) * length))


def batch_start(batch: str) -> float:
    "The POSIX time at which the batch named ``batch`` begins (either form of ``batch_at``); ValueError otherwise"
    # imported here: calendar loads datetime, which import client_sdk does not (as in day_start)
    import calendar

    form = "%Y-%m-%d" if len(batch) == 10 else _MINUTE_BATCH
    start = calendar.timegm(time.strptime(batch, form))
    if time.strftime(form, time.gmtime(start)) != batch:  # strptime also takes 2026-1-5
        raise ValueError(f"not a batch name: {batch!r}")
    return float(start)
