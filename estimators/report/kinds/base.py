"""The registry of campaign kinds, report side: what a report says and draws that differs between kinds.

Each kind may register one :class:`ReportKind` (:func:`register_report_kind`) under the name its device side
registered in :mod:`client_sdk.kinds`; :func:`report_kind` finds it from an estimate (its ``trust``; a local
estimate has none).  A kind without one is rendered with this base class's generic header and captions.  The
renderers (``table``, ``plots``) call it instead of asking which kind an estimate is, or which members it has:
the kind lays out each of its estimate types with a :class:`~estimators.report.sections.Section` (``sections``:
the table, its notes, the main figure, the per-day series).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from client_sdk.kinds import Registry

from ...estimates import Estimate, EstimatedMean
from ...window import DailyResult, ReportData
from ..model import (
    NOT_DISTINGUISHABLE,
    ValueRow,
    confidence_percent,
    describe_window,
    epsilon_text,
    target_text,
)
from ..sections import MEAN, PER_VALUE, DailySeries, Section
from ..style import LDP_COLOUR

if TYPE_CHECKING:
    from ..plots import Plot


class ReportKind:
    "One campaign kind's report side; the defaults are generic (a kind's name, its estimate's own fields)"

    name: ClassVar[str] = ""
    model_label: ClassVar[str] = "estimate"  # the trust model the intervals are for: "local DP"
    colour: ClassVar[str] = LDP_COLOUR  # its colour in the figures
    # How each estimate type is laid out, the first that the estimate is an instance of; a kind lists its own types
    sections: ClassVar[tuple[tuple[type[Estimate], Section], ...]] = ((EstimatedMean, MEAN), (Estimate, PER_VALUE))

    def section(self, estimate: Estimate) -> Section:
        "The layout of ``estimate`` (one of this kind's estimate types)"
        return next(section for cls, section in self.sections + ((Estimate, PER_VALUE),)
                    if isinstance(estimate, cls))

    def value_table(self, data: ReportData) -> tuple[list[str], list[list[str]]]:
        "Column names and formatted cells of the report's one table"
        return self.section(data.estimate).value_table(data.estimate)

    def zero_rows(self, data: ReportData) -> list[bool]:
        "Per table row, whether its interval includes 0 or lies below it"
        return self.section(data.estimate).zero_rows(data.estimate)

    def footnotes(self, data: ReportData) -> list[str]:
        "The notes under the table: its layout's, then the kind's own (:meth:`notes`)"
        return self.section(data.estimate).notes(data.estimate) + self.notes(data.estimate)

    def notes(self, result: Estimate) -> list[str]:
        "What this kind adds under the table (a guarantee, a test that refused reports)"
        return []

    def main_figure(self, data: ReportData) -> Plot | None:
        "The figure of the estimate itself (bars of the values, or the mean)"
        return self.section(data.estimate).main_figure(data)

    def main_plots(self, data: ReportData) -> list[Plot]:
        "The report's main figures: here the one of :meth:`main_figure` (a kind with several overrides this)"
        main = self.main_figure(data)
        return [] if main is None else [main]

    def daily_series(self, days: Sequence[DailyResult]) -> DailySeries:
        "The per-day figure's lines (``days``: at least one)"
        return self.section(days[0].estimate).daily_series(days)

    def bar_label(self, result: Estimate) -> str:
        "The legend of the frequency bars"
        return "estimate"

    def trust_model_halfwidths(self, result: Estimate) -> dict[str, float] | None:
        "The CI half-width of the same quantity under each trust model, when the estimate states them"
        return None

    def shuffled_halfwidths(self, result: Estimate, n: Sequence[int]) -> list[float] | None:
        "The shuffled trust model's CI half-width at each of ``n`` (one batch of n), when the estimate states it"
        return None

    def header_lines(self, data: ReportData) -> list[str]:
        "The facts every format states first"
        n = data.n
        estimate = data.estimate
        lines = [f"campaign {data.campaign}: {data.kind} estimate, {estimate.trust} campaign, epsilon "
                 f"{epsilon_text(estimate)}",
                 (f"{f'n = {n:,} reports, ' if n is not None else ''}window: "
                  f"{describe_window(data.since, data.until)}, confidence {confidence_percent(estimate)}")]
        target = target_text(estimate)
        return lines + ([target] if target else [])

    def mechanism_text(self, result: Estimate) -> str:
        "How the values were protected, for a figure's title"
        return result.mechanism or ""

    def summary_mechanism(self, result: Estimate) -> str:
        "The mechanism as a one-line summary names it (the demo's)"
        return self.mechanism_text(result)

    def frequency_caption(self, result: Estimate, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
        "The caption of the frequency bars"
        parts = [f"Bars: estimates with their {confidence_percent(result)} intervals"]
        if len(rows) > shown:
            parts[0] += f" (the {shown} largest of {len(rows)} values)"
        if any(r.includes_zero for r in rows):
            parts.append(f"Faint bars: the interval includes 0, {NOT_DISTINGUISHABLE}")
        return ". ".join(parts) + "."

    def mean_comparisons(self, result: Estimate) -> list[tuple[str, float, str, str]]:
        "Other trust models' half-widths beside the mean's own: (label, half-width, colour, caption part)"
        return []

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The figures comparing this campaign's noise with the other trust models'"
        return []

    def panel(self, data: ReportData) -> dict[str, Any]:
        """The dashboard's panel of the report (``estimators.report.panel``): this kind's header, table, notes,
        intervals and per-day series as JSON, with :meth:`planner_rows` at ``planner``"""
        # imported here: only the dashboard builds panels, a static report never loads the module
        from ..panel import build_panel

        return {**build_panel(self, data), "planner": self.planner_rows(data)}

    def planner_rows(self, data: ReportData) -> dict[str, Any] | None:
        "The planner's answer for this campaign ('n for +-x'), when the kind has a planner"
        return None


GENERIC = ReportKind()
_KINDS = Registry("report side")


def register_report_kind(kind: ReportKind) -> ReportKind:
    "Register the report side of a kind (its ``name`` is the device side's, client_sdk.kinds.register_kind)"
    return cast(ReportKind, _KINDS.register(kind))


def unregister_report_kind(name: str) -> None:
    _KINDS.unregister(name)


def report_kind(result: Any) -> ReportKind:
    "The report side of an estimate's kind (its ``trust``), or the generic one"
    return cast(ReportKind, _KINDS.find(result) or GENERIC)
