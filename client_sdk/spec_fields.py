"""The fields of a campaign spec one by one: their limits and validators, each raising
:class:`~client_sdk.errors.SpecError` that names the field and the allowed values (``client_sdk.spec`` builds the
spec from them, ``client_sdk.spec_prio3`` a distributed campaign's Prio3 parameters)."""

from __future__ import annotations

import math
import warnings

from .errors import PrivacyWarning, SpecError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

EPSILON_WARNING_THRESHOLD = 10.0
# Epsilon bounds (docs/api.md, "Input limits").  Above 36.7, e**eps/(e**eps + 1) rounds to 1.0 in float64 and
# GRR, Hadamard and Duchi become deterministic; OLH's hash range g = round(e**eps + 1) passes 2**32 at 22.2.
# 20 keeps every mechanism's probabilities strictly inside (0, 1), also after quantization to 2**-32, with margin.
# Below 0.01, p* - q* of GRR over 2**20 values nears the 2**-32 quantum and no population is large enough.
MIN_EPSILON = 0.01
MAX_EPSILON = 20.0
# Numeric ranges: |low|, |high| at most 1e15 and a width of at least 1e-9 keep (v - low) / (high - low) exact
# enough and finite.
MAX_RANGE_MAGNITUDE = 1e15
MIN_RANGE_WIDTH = 1e-9
MAX_UNIT_LENGTH = 16  # a numeric campaign's unit ("ms", "MB"): short, shown on axes and table headers
MAX_DOMAIN_SIZE = 1 << 20
MAX_DOMAIN_INT = 1 << 63  # integer domain entries fit a signed 64-bit integer

DomainValue = str | int


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    "A number that converts to a finite float (huge integers do not)"
    if not is_number(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def is_utf8(text: str) -> bool:
    "False for strings with lone surrogates (JSON allows them; UTF-8 and SQLite do not)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_day(name: str, value: Any) -> str | None:
    "None, or a UTC date written YYYY-MM-DD"
    if value is None:
        return None
    if isinstance(value, str) and is_day(value):
        return value
    raise SpecError(name, "must be a UTC date written YYYY-MM-DD")


def validate_unit(value: Any) -> str | None:
    "None, or 1-16 characters without control characters (C0, DEL, C1) or lone surrogates"
    if value is None:
        return None
    if (isinstance(value, str) and 1 <= len(value) <= MAX_UNIT_LENGTH and is_utf8(value)
            and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)):
        return value
    raise SpecError("unit", f"must be a string of 1-{MAX_UNIT_LENGTH} characters without control characters")


def is_day(text: str) -> bool:
    """Whether ``text`` is a date written YYYY-MM-DD (year 0001-9999), as ``datetime.date.isoformat`` writes it:
    checked by hand, as ``import client_sdk`` does not import ``datetime``"""
    if len(text) != 10 or not text.isascii() or text[4] != "-" or text[7] != "-":
        return False
    year, month, day = text[:4], text[5:7], text[8:]
    if not (year.isdigit() and month.isdigit() and day.isdigit()):
        return False
    y, m, d = int(year), int(month), int(day)
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return y >= 1 and 1 <= m <= 12 and 1 <= d <= _DAYS_IN_MONTH[m - 1] + (m == 2 and leap)


_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def validate_int(name: str, value: Any, low: int, high: int) -> int:
    "An integer (not a bool) in [low, high]"
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(name, f"must be an integer in [{low}, {high}]")
    return value


def validate_epsilon(epsilon: Any) -> float:
    """eps in [MIN_EPSILON, MAX_EPSILON]: above MAX_EPSILON some mechanism's probabilities round to 0 or 1 in
    float64 or its arithmetic overflows (see the constants); below MIN_EPSILON estimates are useless"""
    allowed = f"must be a number in [{MIN_EPSILON}, {MAX_EPSILON}]"
    if not is_finite_number(epsilon):
        raise SpecError("epsilon", allowed)
    if epsilon < MIN_EPSILON:
        raise SpecError("epsilon", f"{allowed}: {epsilon} is below {MIN_EPSILON}, where noise swamps every estimate")
    if epsilon > MAX_EPSILON:
        raise SpecError("epsilon", f"{allowed}: {epsilon} is above {MAX_EPSILON}, where some mechanism's "
                                   "probabilities round to 0 or 1 in float64 (no privacy, no estimate)")
    if epsilon > EPSILON_WARNING_THRESHOLD:
        warnings.warn(
            f"epsilon = {epsilon} gives almost no privacy (above {EPSILON_WARNING_THRESHOLD})", PrivacyWarning,
            stacklevel=3,
        )
    return float(epsilon)


def validate_range(value_range: Any) -> tuple[float, float]:
    if not isinstance(value_range, (list, tuple)) or len(value_range) != 2:
        raise SpecError("range", "must be a list [low, high] of two numbers")
    low, high = value_range
    if not (is_finite_number(low) and is_finite_number(high)):
        raise SpecError("range", "low and high must be finite numbers")
    low, high = float(low), float(high)
    if max(abs(low), abs(high)) > MAX_RANGE_MAGNITUDE:
        raise SpecError("range", f"low and high must be within [-{MAX_RANGE_MAGNITUDE:g}, {MAX_RANGE_MAGNITUDE:g}]")
    if not high - low >= MIN_RANGE_WIDTH:
        raise SpecError("range", f"low must be below high by at least {MIN_RANGE_WIDTH:g}")
    return low, high


def validate_domain(domain: Any) -> tuple[DomainValue, ...]:
    if not isinstance(domain, (list, tuple)) or not domain:
        raise SpecError("domain", "must be a non-empty list of strings or integers")
    if len(domain) < 2:
        raise SpecError("domain", "needs at least 2 entries")
    if len(domain) > MAX_DOMAIN_SIZE:
        raise SpecError("domain", f"has more than {MAX_DOMAIN_SIZE} entries")
    for entry in domain:
        if isinstance(entry, bool) or not isinstance(entry, (str, int)):
            raise SpecError("domain", f"entries must be strings or integers, got {type(entry).__name__}")
        if isinstance(entry, str) and not is_utf8(entry):
            raise SpecError("domain", "string entries must be valid Unicode (no lone surrogates)")
        if isinstance(entry, int) and not -MAX_DOMAIN_INT <= entry < MAX_DOMAIN_INT:
            raise SpecError("domain", "integer entries must fit a signed 64-bit integer")
    keys = {(type(v), v) for v in domain}
    if len(keys) != len(domain):
        raise SpecError("domain", "entries must be unique")
    return tuple(domain)
