"""The repeated-collection kind, report side: the header states the period, the change between the last two periods
and the guarantee; the figure is the series (a line with its band) beside the central-DP baseline's band."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...estimates import typed_as
from ...kinds.repeated.kind import RepeatedEstimate
from ...window import ReportData
from ..model import confidence_percent, describe_window, epsilon_text, format_number
from ..style import CENTRAL_COLOUR, LDP_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot

# Function-level imports: the figure's module loads matplotlib, so comparison_plots imports it (a table never does).


class RepeatedReport(ReportKind):
    "Memoized answers, one report per period: a series with its change and the guarantee"

    name = "repeated"
    model_label = "local DP, memoized"
    colour = LDP_COLOUR

    def header_lines(self, data: ReportData) -> list[str]:
        estimate = series(data)
        mode = "1BitMean" if estimate.mode == "mean" else "dBitFlip"
        lines = [f"campaign {data.campaign}: repeated collection ({mode}, one report per {estimate.period_unit}), "
                 f"epsilon {epsilon_text(estimate)} per memoized answer, at most "
                 f"{format_number(estimate.lifetime_epsilon or math.nan)} per device for all time",
                 f"{len(estimate.periods)} periods (window: {describe_window(data.since, data.until)}), "
                 f"latest {estimate.period}: n = {estimate.n or 0:,} reports, "
                 f"confidence {confidence_percent(estimate)}"]
        change = estimate.change
        if change is not None:
            low, high = change.interval
            lines.append(f"change {change.before} -> {change.after}: {format_number(change.difference)} "
                         f"[{format_number(low)}, {format_number(high)}]")
        if estimate.guarantee_text:
            lines.append("guarantee: " + " ".join(estimate.guarantee_text.split()))
        return lines

    def mechanism_text(self, result: Any) -> str:
        return "repeated collection (memoized answers)"

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The series of means (or of the largest bucket) with its band, and the central baseline's band"
        estimate = series(data)
        periods = estimate.periods
        central = estimate.central.ci_halfwidth if estimate.central is not None else None
        if len(periods) < 2:
            return []
        from ..plots import Plot, new_figure  # matplotlib: loaded by the figures only

        points: list[tuple[float | None, float | None, float | None]]
        if estimate.mode == "mean":
            points = [(item.mean, item.ci_low, item.ci_high) for item in periods]
            label = "mean"
        else:
            totals: dict[int, float] = {}
            for item in periods:
                for index, row in enumerate(item.values):
                    totals[index] = totals.get(index, 0.0) + row.estimate
            top = max(totals, key=lambda index: totals[index])
            rows = [item.values[top] for item in periods]
            points = [(row.estimate, row.ci_low, row.ci_high) for row in rows]
            label = f"share of bucket {rows[0].value}"
        values = [[math.nan if v is None else float(v) for v in point] for point in points]
        figure = new_figure(8.0, 4.5)
        axes = figure.add_subplot()
        x = list(range(len(values)))
        middle = [v[0] for v in values]
        axes.plot(x, middle, marker="o", color=LDP_COLOUR, label="local DP, memoized")
        axes.fill_between(x, [v[1] for v in values], [v[2] for v in values], color=LDP_COLOUR, alpha=0.2)
        if central is not None:
            axes.fill_between(x, [m - central for m in middle], [m + central for m in middle], color=CENTRAL_COLOUR,
                              alpha=0.25, label="central DP (same epsilon, per period)")
        step = max(1, len(x) // 12)
        axes.set_xticks(x[::step], [item.period for item in periods][::step], rotation=30)
        axes.set_ylabel(label)
        axes.set_title(f"Per period, with {confidence_percent(data.estimate)} bands")
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        caption = (f"The {label} per period over {len(periods)} periods with its local-DP interval; the narrower "
                   "band is what a trusted curator would add at the same epsilon for that period alone (central DP "
                   "spends it again every period; the memoized answers spend it once while values stay put).")
        return [Plot("series", "Per period", figure, caption)]


def series(data: ReportData) -> RepeatedEstimate:
    "The estimate as the repeated kind reads it"
    return typed_as(RepeatedEstimate, data.estimate)


REPEATED_REPORT = register_report_kind(RepeatedReport())
