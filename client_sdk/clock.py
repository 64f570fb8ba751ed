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
