"""The query arguments the admin views read: positive integers, a confidence level, UTC days; 400 names the argument."""

from __future__ import annotations

import datetime as dt

from flask import request

from ..problems import invalid


def int_arg(name: str) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 10) or not 1 <= int(raw) <= 2**31:
        raise invalid(name, "must be a positive integer")
    return int(raw)


def confidence_arg() -> float:
    raw = request.args.get("confidence", "0.95")
    try:
        value = float(raw)
    except ValueError:
        raise invalid("confidence", "must be a number strictly between 0 and 1") from None
    if not 0 < value < 1:
        raise invalid("confidence", "must be a number strictly between 0 and 1")
    return value


def day_arg(name: str) -> str | None:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return None
    try:
        return dt.date.fromisoformat(raw).isoformat() if len(raw) == 10 else _bad_day(name)
    except ValueError:
        return _bad_day(name)


def _bad_day(name: str) -> str:
    raise invalid(name, "must be a UTC date YYYY-MM-DD")
