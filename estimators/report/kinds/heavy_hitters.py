"""The heavy_hitters kind, report side: the discovered strings' header states the algorithm, where the intervals
come from (the estimation group), the detection threshold at this n and epsilon and the expected false
discoveries, beside the ranked list (every format's table: value, frequency, SE, interval)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...estimates import Estimate, typed_as
from ...kinds.heavy_hitters.kind import HeavyHittersFound
from ...window import ReportData
from ..model import ValueRow, confidence_percent, describe_window, epsilon_text, format_number
from ..style import LDP_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot

# Function-level imports: the figures' module loads matplotlib, so only main_plots imports it.

MAX_BARS = 30
THRESHOLD_COLOUR = "#d62728"


def found(data: ReportData) -> HeavyHittersFound:
    "The estimate as the heavy_hitters kind reads it (its section's members typed)"
    return typed_as(HeavyHittersFound, data.estimate)


class HeavyHittersReport(ReportKind):
    "Frequent strings of an unknown dictionary, with what this n and epsilon can find"

    name = "heavy_hitters"
    model_label = "local DP"

    def header_lines(self, data: ReportData) -> list[str]:
        result = hh = found(data)
        n = data.n
        lines = [f"campaign {data.campaign}: heavy hitters ({hh.algorithm or '?'}), local DP, epsilon "
                 f"{epsilon_text(result)}",
                 (f"{f'n = {n:,} reports, ' if n is not None else ''}window: "
                  f"{describe_window(data.since, data.until)}, confidence {confidence_percent(result)}")]
        threshold = hh.detection_threshold
        if threshold is not None:
            lines.append(f"detection threshold: {format_number(threshold)} (the smallest frequency found with "
                         "probability >= 0.9 at this n and epsilon; rarer strings may be missing from the list)")
        false = hh.expected_false_discoveries
        if false is not None:
            lines.append(f"expected false discoveries: {format_number(false)}; {len(result.values)} strings found")
        if hh.interval_source:
            reports = f"{hh.estimation_reports:,}" if hh.estimation_reports is not None else "?"
            lines.append(f"frequencies, SE and intervals from the {hh.interval_source} ({reports} reports)")
        return lines

    def mechanism_text(self, result: Estimate) -> str:
        return result.mechanism or "heavy_hitters"

    def frequency_caption(self, result: Estimate, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
        parts = [f"Bars: the discovered strings' frequencies with their {confidence_percent(result)} intervals "
                 "(from the estimation group)"]
        if len(rows) > shown:
            parts[0] += f" (the {shown} largest of {len(rows)} strings)"
        return ". ".join(parts) + "."

    def main_plots(self, data: ReportData) -> list[Plot]:
        return [found_strings_figure(data)] if data.estimate.values else []


def found_strings_figure(data: ReportData) -> Plot:
    """The discovered strings' frequencies (most frequent first, at most MAX_BARS) with their intervals, and the
    detection threshold as a line: strings below it may be missing from the list"""
    from ..plots import TRUTH_COLOUR, Plot, fit_layout, new_figure

    result = found(data)
    rows = sorted(result.values, key=lambda row: -row.estimate)[:MAX_BARS]
    threshold = result.detection_threshold
    figure = new_figure(max(6.0, 0.45 * len(rows) + 3), 4.5)
    axes = figure.add_subplot()
    x = list(range(len(rows)))
    estimates = [row.estimate for row in rows]
    axes.bar(x, estimates, width=0.6, color=LDP_COLOUR, label="frequency (estimation group)")
    low = [e - (r.ci_low if r.ci_low is not None else e) for e, r in zip(estimates, rows)]
    high = [(r.ci_high if r.ci_high is not None else e) - e for e, r in zip(estimates, rows)]
    axes.errorbar(x, estimates, yerr=[low, high], fmt="none", ecolor="black", capsize=3, linewidth=1.0,
                  label=f"local DP {confidence_percent(result)} CI")
    if threshold is not None:
        axes.axhline(threshold, color=THRESHOLD_COLOUR, linestyle="--", linewidth=1.2,
                     label=f"detection threshold {format_number(threshold)}")
    truth = data.truth if isinstance(data.truth, dict) else None
    if truth:
        axes.scatter(x, [truth.get(row.value, float("nan")) for row in rows], marker="D", color=TRUTH_COLOUR,
                     zorder=3, s=20, label="ground truth")
    axes.axhline(0, color="grey", linewidth=0.8)
    axes.set_xticks(x, [repr(row.value)[1:-1][:14] for row in rows], rotation=45, ha="right", fontsize=8)
    axes.set_ylabel("fraction of reports")
    axes.set_title(f"{data.campaign}: {result.mechanism or 'heavy_hitters'}, "
                   f"ε = {epsilon_text(result)}, n = {data.n or 0:,}")
    axes.legend(fontsize=8, loc="upper right")
    fit_layout(figure)
    shown = f"the {len(rows)} most frequent of {len(result.values)}" if len(result.values) > len(rows) else \
        f"all {len(rows)}"
    caption = (f"Bars: {shown} discovered strings' frequencies with their {confidence_percent(result)} intervals "
               "(from the estimation group, reports no discovery step read).")
    if threshold is not None:
        caption += (f" Dashed line: the detection threshold {format_number(threshold)}, the smallest frequency "
                    "found with probability >= 0.9 at this n and epsilon; rarer strings may be missing.")
    return Plot("heavy_hitters", "Discovered strings", figure, caption)


HEAVY_HITTERS_REPORT = register_report_kind(HeavyHittersReport())
