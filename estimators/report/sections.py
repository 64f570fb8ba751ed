"""How one type of estimate is laid out: its table, its notes, its main figure and its per-day series.

A kind's report side (``estimators.report.kinds``) maps each of its estimate types to one of these
(:meth:`ReportKind.section`); the renderers ask the kind and never look at an estimate's members to choose.
:data:`PER_VALUE` lays out per-value rows (frequencies, candidates, a release's fractions), :data:`MEAN` one mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..estimates import Estimate, EstimatedMean, ValueRow, typed_as
from .model import (
    BELOW_ZERO,
    DAILY_SERIES,
    NOT_DISTINGUISHABLE,
    central_halfwidth,
    central_mechanism,
    chance_exclusions_text,
    display_rows,
    format_column,
    format_number,
    with_unit,
)

if TYPE_CHECKING:
    from ..window import DailyResult, ReportData
    from .plots import Plot

# Function-level imports: the figures' module loads matplotlib (a third of a second), so it is imported by
# main_figure only; a table or JSON report never loads it.

ZERO_MARK = "~0"
BELOW_ZERO_MARK = "<0"
PANEL_VALUES = 20  # the dashboard's interval figure draws at most this many values (the largest)
Points = list[tuple[float, float, float]]  # (estimate, CI low, CI high) per day


@dataclass(frozen=True)
class DailySeries:
    "The per-day figure's lines: label -> points, the y axis' label and what the caption says is shown"

    series: dict[str, Points]
    ylabel: str
    shown: str


class Section:
    "The layout of one type of estimate"

    def value_table(self, estimate: Estimate) -> tuple[list[str], list[list[str]]]:
        "Column names and formatted cells, shared by the terminal, Markdown and HTML renderers"
        raise NotImplementedError

    def zero_rows(self, estimate: Estimate) -> list[bool]:
        "Per table row: whether its interval includes 0 or lies below it (the HTML shades it)"
        return []

    def notes(self, estimate: Estimate) -> list[str]:
        "The footnotes on the table"
        return []

    def main_figure(self, data: ReportData) -> Plot | None:
        "The figure of the estimate itself"
        return None

    def daily_series(self, days: Sequence[DailyResult]) -> DailySeries:
        "The per-day figure's lines"
        raise NotImplementedError

    def intervals(self, estimate: Estimate) -> list[tuple[str, float, float, float]]:
        "The main figure's points as numbers, (label, estimate, CI low, CI high): what the dashboard draws"
        return []

    def value_label(self, estimate: Estimate) -> str:
        "The axis label of those points, with its unit"
        return "estimate"


class PerValueSection(Section):
    "Per-value rows: estimate, standard error and interval per value, largest first; the bars figure"

    def value_table(self, estimate: Estimate) -> tuple[list[str], list[list[str]]]:
        rows = display_rows(estimate)
        with_norm_sub = any(row.norm_sub is not None for row in rows)
        columns = ["value", "estimate", "std error", "CI low", "CI high"] + (["Norm-Sub"] if with_norm_sub else [])
        numbers = [[row.estimate, row.std_error, row.ci_low, row.ci_high] + ([row.norm_sub] if with_norm_sub else [])
                   for row in rows]
        formatted = list(zip(*(format_column(column) for column in zip(*numbers)))) if rows else []
        return columns + [""], [[row.value, *texts, zero_mark(row)] for row, texts in zip(rows, formatted)]

    def zero_rows(self, estimate: Estimate) -> list[bool]:
        return [row.includes_zero or row.below_zero for row in display_rows(estimate)]

    def notes(self, estimate: Estimate) -> list[str]:
        notes = []
        rows = estimate.values
        if any(row.includes_zero for row in rows):
            notes.append(f"{ZERO_MARK}: the confidence interval includes 0 ({NOT_DISTINGUISHABLE})")
        chance = chance_exclusions_text(estimate)
        if chance:
            notes.append(chance)
        if any(row.below_zero for row in rows):
            notes.append(f"{BELOW_ZERO_MARK}: the confidence interval is {BELOW_ZERO}")
        if any(row.norm_sub is not None for row in rows):
            notes.append("Norm-Sub: projected onto the probability simplex (consistent but biased); "
                         "the estimate column is unbiased")
        return notes

    def main_figure(self, data: ReportData) -> Plot | None:
        from .plots import frequency_figure

        if not data.estimate.values:
            return None
        return frequency_figure(data.estimate, data.truth if isinstance(data.truth, dict) else None, data.campaign)

    def daily_series(self, days: Sequence[DailyResult]) -> DailySeries:
        "The values largest over the window (at most DAILY_SERIES)"
        totals: dict[str, float] = {}
        for day in days:
            for row in day.estimate.values:
                totals[row.value] = totals.get(row.value, 0.0) + row.estimate
        top = sorted(totals, key=lambda value: -totals[value])[:DAILY_SERIES]
        series: dict[str, Points] = {value: [] for value in top}
        for day in days:
            rows = {row.value: row for row in day.estimate.values}
            for value in top:
                found = rows.get(value)
                series[value].append((math.nan, math.nan, math.nan) if found is None else (
                    found.estimate, _or(found.ci_low, found.estimate), _or(found.ci_high, found.estimate)))
        return DailySeries(series, "fraction of reports", f"the {len(series)} largest values")

    def value_label(self, estimate: Estimate) -> str:
        return "fraction of reports"

    def intervals(self, estimate: Estimate) -> list[tuple[str, float, float, float]]:
        "The values largest first (at most PANEL_VALUES)"
        return [(row.value, row.estimate, _or(row.ci_low, row.estimate), _or(row.ci_high, row.estimate))
                for row in display_rows(estimate)[:PANEL_VALUES]]


class MeanSection(Section):
    "One mean (an :class:`~estimators.estimates.EstimatedMean`): one table row, the mean and half-widths figure"

    def value_table(self, estimate: Estimate) -> tuple[list[str], list[list[str]]]:
        mean = typed_as(EstimatedMean, estimate)
        columns = [with_unit(name, mean) for name in ("mean", "std error", "CI low", "CI high", "central DP CI +-")]
        return columns, [[format_number(mean.mean), format_number(mean.std_error), format_number(mean.ci_low),
                          format_number(mean.ci_high), format_number(central_halfwidth(mean))]]

    def notes(self, estimate: Estimate) -> list[str]:
        return [f"central DP CI +-: what a trusted curator ({central_mechanism(estimate)}, replace-one) would "
                "report at the same epsilon"]

    def main_figure(self, data: ReportData) -> Plot | None:
        from .plots import mean_figure

        mean = typed_as(EstimatedMean, data.estimate)
        if mean.mean is None or mean.ci_low is None or mean.ci_high is None:  # null in the JSON: nothing to draw
            return None
        return mean_figure(mean, data.truth if isinstance(data.truth, (int, float)) else None)

    def daily_series(self, days: Sequence[DailyResult]) -> DailySeries:
        points = [typed_as(EstimatedMean, day.estimate) for day in days]
        return DailySeries({"mean": [(_or(d.mean, math.nan), _or(d.ci_low, math.nan), _or(d.ci_high, math.nan))
                                     for d in points]}, with_unit("mean", points[0]), "the mean")

    def intervals(self, estimate: Estimate) -> list[tuple[str, float, float, float]]:
        mean = typed_as(EstimatedMean, estimate)
        if mean.mean is None or mean.ci_low is None or mean.ci_high is None:
            return []
        return [(with_unit("mean", mean), mean.mean, mean.ci_low, mean.ci_high)]

    def value_label(self, estimate: Estimate) -> str:
        return with_unit("mean", estimate)


PER_VALUE = PerValueSection()
MEAN = MeanSection()


def zero_mark(row: ValueRow) -> str:
    return ZERO_MARK if row.includes_zero else BELOW_ZERO_MARK if row.below_zero else ""


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
