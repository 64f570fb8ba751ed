"""What every renderer reads: one estimate (its ``to_dict()``), the window, the spec and optional daily results.

Renderers accept any estimate dict: frequencies (``kind: "frequency"``), means (``kind: "mean"``) and other
kinds such as RAPPOR, whose candidate rows are read tolerantly by :func:`value_rows` (the first of several
usual field names that is present wins).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, TypeGuard

SCHEMA_VERSION = 3  # 2: one shape for every kind; 3: ``trust`` (local | distributed) and the distributed blocks
DAILY_SERIES = 5  # the per-day figure draws this many values (the largest over the window)
NOT_DISTINGUISHABLE = "not distinguishable from 0"
BELOW_ZERO = "entirely below 0: noise, since a frequency cannot be negative"

# Field names tried in order when reading a row.  Proportions come first: in the RAPPOR decoder's rows (the
# reference decoder's columns) "estimate" and "std_error" are counts and "proportion", "prop_*" the fractions.
_VALUE_FIELDS = ("value", "string", "candidate", "name")
_ESTIMATE_FIELDS = ("proportion", "estimate", "fraction", "frequency")
_STD_ERROR_FIELDS = ("prop_std_error", "proportion_std_error", "std_error")
_CI_LOW_FIELDS = ("prop_low_95", "proportion_ci_low", "ci_low")
_CI_HIGH_FIELDS = ("prop_high_95", "proportion_ci_high", "ci_high")
_ROW_LIST_FIELDS = ("values", "estimates", "candidates", "rows")


@dataclass(frozen=True)
class ValueRow:
    "One row of a frequency-like estimate, whatever the estimator called its fields"

    value: str
    estimate: float
    std_error: float | None
    ci_low: float | None
    ci_high: float | None
    norm_sub: float | None

    @property
    def includes_zero(self) -> bool:
        "True when the interval contains 0: the value is not distinguishable from absent"
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low <= 0.0 <= self.ci_high

    @property
    def below_zero(self) -> bool:
        "True when the whole interval is negative (happens by chance about (1 - confidence)/2 of the time)"
        return self.ci_high is not None and self.ci_high < 0.0


def row_list_key(result: dict) -> str | None:
    "Which member of the result holds the per-value rows"
    return next((key for key in _ROW_LIST_FIELDS if isinstance(result.get(key), list)), None)


def raw_value_rows(result: dict) -> list:
    "The list of per-value rows as the estimator wrote them (empty for means)"
    key = row_list_key(result) if result.get("kind") != "mean" else None
    return result[key] if key is not None else []


def value_rows(result: dict) -> list[ValueRow]:
    "The per-value rows of a frequency-like estimate (empty for means); rows without an estimate are skipped"
    rows = (parse_row(raw, index) for index, raw in enumerate(raw_value_rows(result)))
    return [row for row in rows if row is not None]


def display_rows(result: dict) -> list[ValueRow]:
    "The rows in the order every table and chart lists them: largest estimate first (ties in the estimate's order)"
    return sorted(value_rows(result), key=lambda row: -row.estimate)


def chance_exclusions_text(result: dict) -> str | None:
    """How many intervals exclude 0 by chance alone: with d values each at ``confidence``, about (1 - confidence) d
    of d absent values would, half of them above 0 (shown as present)"""
    rows = value_rows(result)
    confidence = result.get("confidence", 0.95)
    if len(rows) < 2 or not _is_number(confidence):
        return None
    expected = (1 - float(confidence)) * len(rows)
    return (f"with {len(rows)} values each tested at {100 * float(confidence):.4g}%, about {expected:.3g} intervals "
            f"would exclude 0 by chance if no value were present (about {expected / 2:.3g} above 0, shown as "
            "present): an unmarked row is not proof on its own")


def parse_row(raw: Any, index: int = 0) -> ValueRow | None:
    "One row, whatever the estimator called its fields; None when it has no estimate"
    if not isinstance(raw, dict):
        return None
    estimate = _first_number(raw, _ESTIMATE_FIELDS)
    if estimate is None:
        return None
    return ValueRow(
        value=str(_first(raw, _VALUE_FIELDS, default=f"#{index}")),
        estimate=estimate,
        std_error=_first_number(raw, _STD_ERROR_FIELDS),
        ci_low=_first_number(raw, _CI_LOW_FIELDS),
        ci_high=_first_number(raw, _CI_HIGH_FIELDS),
        norm_sub=_first_number(raw, ("norm_sub",)),
    )


TRUST_MODELS = ("local", "distributed", "central")


def trust_model_errors(result: dict) -> dict[str, float] | None:
    "The standard error of one value's fraction (or of the mean) under each trust model, or None"
    models = result.get("trust_models")
    if not isinstance(models, dict):
        return None
    errors: dict[str, float] = {}
    for name in TRUST_MODELS:
        error = (models.get(name) or {}).get("std_error")
        if not _is_number(error):
            return None
        errors[name] = float(error)
    return errors


def trust_model_halfwidths(result: dict) -> dict[str, float] | None:
    """The CI half-width of one value's fraction (or of the mean) under each trust model, the quantity the local
    pages plot: the model's own ``ci_halfwidth``, or z times its standard error"""
    errors = trust_model_errors(result)
    if errors is None:
        return None
    z = NormalDist().inv_cdf(0.5 + float(result.get("confidence", 0.95)) / 2)
    models = result["trust_models"]
    widths = {}
    for name, error in errors.items():
        stated = (models.get(name) or {}).get("ci_halfwidth")
        widths[name] = float(stated) if _is_number(stated) else z * error
    return widths


def trust_models_text(result: dict) -> str | None:
    "The three standard errors side by side, as every format prints them"
    errors = trust_model_errors(result)
    if errors is None:
        return None
    models = result["trust_models"]
    local = f"local {format_number(errors['local'])} ({models['local'].get('mechanism', '?')})"
    mode = models["distributed"].get("mode") or (result.get("noise") or {}).get("mode", "?")
    distributed = f"distributed {format_number(errors['distributed'])} ({mode})"
    central = f"central {format_number(errors['central'])} ({models['central'].get('mechanism', '?')})"
    quantity = "the mean" if is_mean(result) else "one value's fraction"
    return f"standard error of {quantity}: {local}, {distributed}, {central}"


def guarantee_lines(result: dict) -> list[str]:
    "Each property of a distributed release with the assumption it rests on"
    guarantee = result.get("guarantee")
    if not isinstance(guarantee, dict):
        return []
    return [f"{item.get('holds', '')}, assuming {item.get('assuming', '')}"
            for item in guarantee.get("statements") or [] if isinstance(item, dict)]


def is_mean(result: dict) -> bool:
    return result.get("kind") == "mean" or ("mean" in result and not value_rows(result))


RATIO_DEFINITION = "privacy noise only: local-DP standard error over central DP's, same epsilon, replace-one (n public)"


def ldp_to_central_ratio(result: dict) -> float | None:
    """How many times larger the local-DP privacy noise is than central DP's at the same epsilon, replace-one.

    The one definition every format states (``central_dp.ldp_to_central_ratio``, see ``estimators.central``);
    the header, the figure caption and the demo's summary all print this number through :func:`ratio_text`."""
    central = result.get("central_dp")
    if not isinstance(central, dict):
        return None
    ratio = central.get("ldp_to_central_ratio")
    return float(ratio) if _is_number(ratio) else None


def ratio_text(ratio: float) -> str:
    "The LDP/central ratio as every format prints it"
    return f"{ratio:,.1f}"


TARGET_TEXT = {
    "population": "the population the reporting users are sampled from (std_error; std_error_reported: the users "
                  "who reported, privacy noise only)",
    "reported": "the users who reported (privacy noise only)",
}


def target_text(result: dict) -> str | None:
    "What the standard errors and intervals are for, as every format states it"
    target = result.get("target")
    return f"standard errors and intervals are for {TARGET_TEXT[target]}" if target in TARGET_TEXT else None


def central_mechanism(result: dict) -> str:
    "The one central mechanism an estimate's pages name: the ``central_dp`` block's choice"
    central = result.get("central_dp")
    return str(central.get("mechanism") or "Laplace") if isinstance(central, dict) else "Laplace"


def central_halfwidth(result: dict) -> float | None:
    "The central-DP CI half-width of one fraction or of the mean (the block's one mechanism)"
    central = result.get("central_dp")
    if isinstance(central, dict) and _is_number(central.get("ci_halfwidth")):
        return float(central["ci_halfwidth"])
    return None


def typical_ldp_halfwidth(result: dict) -> float | None:
    "The local-DP CI half-width: the mean one over values, or the mean's"
    if is_mean(result):
        low, high = result.get("ci_low"), result.get("ci_high")
        return (float(high) - float(low)) / 2 if _is_number(low) and _is_number(high) else None
    widths = [(r.ci_high - r.ci_low) / 2 for r in value_rows(result) if r.ci_low is not None and r.ci_high is not None]
    return sum(widths) / len(widths) if widths else None


def describe_window(since: str | None, until: str | None) -> str:
    if since and until:
        return f"{since} to {until}"
    if since:
        return f"since {since}"
    if until:
        return f"until {until}"
    return "all reports"


def epsilon_text(result: dict) -> str:
    epsilon = result.get("epsilon", result.get("epsilon_one"))
    return f"{epsilon:.4g}" if _is_number(epsilon) else "?"


def with_unit(label: str, result: dict) -> str:
    "``label`` with the campaign's unit, when its spec gives one: 'mean (ms)'"
    unit = result.get("unit")
    return f"{label} ({unit})" if isinstance(unit, str) and unit else label


def confidence_percent(result: dict) -> str:
    confidence = result.get("confidence", 0.95)
    return f"{100 * confidence:.4g}%" if _is_number(confidence) else "?"


def format_number(value: float | None, digits: int = 4) -> str:
    "Compact, aligned-friendly formatting; '-' for missing"
    if value is None or not _is_number(value) or math.isnan(value):
        return "-"
    if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
        return f"{value:.{digits - 1}e}"
    if abs(value) >= 1:  # `digits` significant figures, never fewer than the integer part
        return f"{value:.{max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))}f}"
    return f"{value:.{digits}f}"


def _first(raw: dict, names: Sequence[str], default: Any = None) -> Any:
    return next((raw[name] for name in names if raw.get(name) is not None), default)


def _first_number(raw: dict, names: Sequence[str]) -> float | None:
    "The value of the first of ``names`` the row has (None if that one is null or not a number)"
    value = next((raw[name] for name in names if name in raw), None)
    return float(value) if _is_number(value) else None


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
