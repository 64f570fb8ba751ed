"""What every renderer reads: one estimate (:class:`estimators.estimates.Estimate`, read once from its JSON), the
window, the spec and optional daily results (:class:`estimators.window.ReportData`).

The helpers take an Estimate (a renderer passes ``data.estimate``) or an estimate's JSON (read on the spot).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..central import RATIO_OF
from ..central import ratio_text as ratio_text  # re-exported: every format prints the ratio through it
from ..estimates import (
    Estimate,
    EstimateLike,
    ValueRow,
    as_estimate,
    is_number,
    parse_row,
    row_list_key,
)

SCHEMA_VERSION = 3  # 2: one shape for every kind; 3: ``trust`` (local | distributed) and the distributed blocks
DAILY_SERIES = 5  # the per-day figure draws this many values (the largest over the window)
NOT_DISTINGUISHABLE = "not distinguishable from 0"
BELOW_ZERO = "entirely below 0: noise, since a frequency cannot be negative"



def value_rows(result: EstimateLike) -> list[ValueRow]:
    "The per-value rows of a frequency-like estimate (empty for means); rows without an estimate are skipped"
    return list(as_estimate(result).values)


def display_rows(result: EstimateLike) -> list[ValueRow]:
    "The rows in the order every table and chart lists them: largest estimate first (ties in the estimate's order)"
    return sorted(as_estimate(result).values, key=lambda row: -row.estimate)


def chance_exclusions_text(result: EstimateLike) -> str | None:
    """How many intervals exclude 0 by chance alone: with d values each at ``confidence``, about (1 - confidence) d
    of d absent values would, half of them above 0 (shown as present)"""
    estimate = as_estimate(result)
    rows, confidence = estimate.values, estimate.confidence
    if len(rows) < 2 or confidence is None:
        return None
    expected = (1 - confidence) * len(rows)
    return (f"with {len(rows)} values each tested at {100 * confidence:.4g}%, about {expected:.3g} intervals "
            f"would exclude 0 by chance if no value were present (about {expected / 2:.3g} above 0, shown as "
            "present): an unmarked row is not proof on its own")


RATIO_DEFINITION = RATIO_OF


def ldp_to_central_ratio(result: EstimateLike) -> float | None:
    """How many times larger the local-DP privacy noise is than central DP's at the same epsilon, replace-one.

    The one definition every format states (``central_dp.ldp_to_central_ratio``, see ``estimators.central``);
    the header, the figure caption and the demo's summary all print this number through :func:`ratio_text`."""
    central = as_estimate(result).central
    return None if central is None else central.ldp_to_central_ratio


TARGET_TEXT = {
    "population": "the population the reporting users are sampled from (std_error; std_error_reported: the users "
                  "who reported, privacy noise only)",
    "reported": "the users who reported (privacy noise only)",
}


def target_text(result: EstimateLike) -> str | None:
    "What the standard errors and intervals are for, as every format states it"
    target = as_estimate(result).target
    return f"standard errors and intervals are for {TARGET_TEXT[target]}" if target in TARGET_TEXT else None


def central_mechanism(result: EstimateLike) -> str:
    "The one central mechanism an estimate's pages name: the ``central_dp`` block's choice"
    central = as_estimate(result).central
    return (central.mechanism if central is not None else None) or "Laplace"


def central_halfwidth(result: EstimateLike) -> float | None:
    "The central-DP CI half-width of one fraction or of the mean (the block's one mechanism)"
    central = as_estimate(result).central
    return None if central is None else central.ci_halfwidth


def typical_ldp_halfwidth(result: EstimateLike) -> float | None:
    "The local-DP CI half-width: the mean one over values, or the mean's (the estimate's type says which)"
    return as_estimate(result).typical_halfwidth()


def describe_window(since: str | None, until: str | None) -> str:
    if since and until:
        return f"{since} to {until}"
    if since:
        return f"since {since}"
    if until:
        return f"until {until}"
    return "all reports"


def epsilon_text(result: EstimateLike) -> str:
    epsilon = as_estimate(result).epsilon
    return f"{epsilon:.4g}" if epsilon is not None else "?"


def with_unit(label: str, result: EstimateLike) -> str:
    "``label`` with the campaign's unit, when its spec gives one: 'mean (ms)'"
    unit = as_estimate(result).unit
    return f"{label} ({unit})" if unit else label


def confidence_percent(result: EstimateLike) -> str:
    confidence = as_estimate(result).confidence
    return f"{100 * confidence:.4g}%" if confidence is not None else "?"


def format_number(value: float | None, digits: int = 4) -> str:
    "Compact, aligned-friendly formatting; '-' for missing"
    if value is None or not is_number(value) or math.isnan(value):
        return "-"
    if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
        return f"{value:.{digits - 1}e}"
    if abs(value) >= 1:  # `digits` significant figures, never fewer than the integer part
        return f"{value:.{max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))}f}"
    return f"{value:.{digits}f}"


def format_column(values: Sequence[float | None], digits: int = 4) -> list[str]:
    """One number format for a whole table column: :func:`format_number`'s choice for the column's largest
    magnitude, applied to every cell (so 0.001 prints as 0.0010 beside 0.0412, not as 1.000e-03)"""
    numbers = [abs(value) for value in values if value is not None and is_number(value) and not math.isnan(value)]
    largest = max(numbers, default=0.0)
    if largest != 0 and (largest >= 1e6 or largest < 1e-3):
        spec = f".{digits - 1}e"
    elif largest >= 1:
        spec = f".{max(0, digits - 1 - int(math.floor(math.log10(largest))))}f"
    else:
        spec = f".{digits}f"
    return [format(value, spec) if value is not None and is_number(value) and not math.isnan(value) else "-"
            for value in values]



# the estimate's types and row readers, re-exported: the renderers and the tests read them from here
__all__ = ["DAILY_SERIES", "SCHEMA_VERSION", "Estimate", "EstimateLike", "ValueRow", "as_estimate",
           "parse_row", "row_list_key"]
