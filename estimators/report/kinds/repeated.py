"""The repeated-collection kind, report side: the header states the period, the change between the last two periods
and the guarantee; the figure is the series (a line with its band) beside the central-DP baseline's band."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

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
        raw, estimate = data.result, data.estimate
        mode = "1BitMean" if raw.get("mode") == "mean" else "dBitFlip"
        lines = [f"campaign {data.campaign}: repeated collection ({mode}, one report per {raw.get('period_unit')}), "
                 f"epsilon {epsilon_text(estimate)} per memoized answer, at most "
                 f"{format_number(raw.get('lifetime_epsilon') or math.nan)} per device for all time",
                 f"{len(raw.get('periods') or [])} periods (window: {describe_window(data.since, data.until)}), "
                 f"latest {raw.get('period')}: n = {estimate.n or 0:,} reports, "
                 f"confidence {confidence_percent(estimate)}"]
        change = raw.get("change")
        if isinstance(change, dict) and not isinstance(change.get("difference"), list):
            low, high = change["interval"]
            lines.append(f"change {change['before']} -> {change['after']}: {format_number(change['difference'])} "
                         f"[{format_number(low)}, {format_number(high)}]")
        text = (raw.get("guarantee") or {}).get("text")
        if text:
            lines.append("guarantee: " + " ".join(str(text).split()))
        return lines

    def mechanism_text(self, result: Any) -> str:
        return "repeated collection (memoized answers)"

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The series of means (or of the largest bucket) with its band, and the central baseline's band"
        periods = [item for item in data.result.get("periods") or [] if isinstance(item, dict)]
        central = (data.result.get("central_dp") or {}).get("ci_halfwidth")
        if len(periods) < 2:
            return []
        from ..plots import Plot, new_figure  # matplotlib: loaded by the figures only

        if data.result.get("mode") == "mean":
            points = [(item.get("mean"), item.get("ci_low"), item.get("ci_high")) for item in periods]
            label = "mean"
        else:
            totals: dict[int, float] = {}
            for item in periods:
                for index, row in enumerate(item.get("values") or []):
                    totals[index] = totals.get(index, 0.0) + float(row.get("estimate") or 0.0)
            top = max(totals, key=lambda index: totals[index])
            rows = [(item.get("values") or [])[top] for item in periods]
            points = [(row.get("estimate"), row.get("ci_low"), row.get("ci_high")) for row in rows]
            label = f"share of bucket {rows[0].get('value')}"
        values = [[math.nan if v is None else float(v) for v in point] for point in points]
        figure = new_figure(8.0, 4.5)
        axes = figure.add_subplot()
        x = list(range(len(values)))
        middle = [v[0] for v in values]
        axes.plot(x, middle, marker="o", color=LDP_COLOUR, label="local DP, memoized")
        axes.fill_between(x, [v[1] for v in values], [v[2] for v in values], color=LDP_COLOUR, alpha=0.2)
        if isinstance(central, (int, float)):
            axes.fill_between(x, [m - central for m in middle], [m + central for m in middle], color=CENTRAL_COLOUR,
                              alpha=0.25, label="central DP (same epsilon, per period)")
        step = max(1, len(x) // 12)
        axes.set_xticks(x[::step], [str(item["period"]) for item in periods][::step], rotation=30)
        axes.set_ylabel(label)
        axes.set_title(f"Per period, with {confidence_percent(data.estimate)} bands")
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        caption = (f"The {label} per period over {len(periods)} periods with its local-DP interval; the narrower "
                   "band is what a trusted curator would add at the same epsilon for that period alone (central DP "
                   "spends it again every period; the memoized answers spend it once while values stay put).")
        return [Plot("series", "Per period", figure, caption)]


REPEATED_REPORT = register_report_kind(RepeatedReport())
