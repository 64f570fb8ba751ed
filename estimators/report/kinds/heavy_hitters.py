"""The heavy_hitters kind, report side: the discovered strings' header states the algorithm, where the intervals
come from (the estimation group), the detection threshold at this n and epsilon and the expected false
discoveries, beside the ranked list (every format's table: value, frequency, SE, interval)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...estimates import Estimate
from ...window import ReportData
from ..model import ValueRow, confidence_percent, describe_window, epsilon_text, format_number
from .base import ReportKind, register_report_kind


def section(data: ReportData) -> dict[str, Any]:
    "The estimate's heavy_hitters section ({} when the result has none)"
    found = data.result.get("heavy_hitters")
    return found if isinstance(found, dict) else {}


class HeavyHittersReport(ReportKind):
    "Frequent strings of an unknown dictionary, with what this n and epsilon can find"

    name = "heavy_hitters"
    model_label = "local DP"

    def header_lines(self, data: ReportData) -> list[str]:
        result = data.estimate
        hh = section(data)
        n = data.n
        lines = [f"campaign {data.campaign}: heavy hitters ({hh.get('algorithm', '?')}), local DP, epsilon "
                 f"{epsilon_text(result)}",
                 (f"{f'n = {n:,} reports, ' if n is not None else ''}window: "
                  f"{describe_window(data.since, data.until)}, confidence {confidence_percent(result)}")]
        threshold = hh.get("detection_threshold")
        if isinstance(threshold, (int, float)):
            lines.append(f"detection threshold: {format_number(threshold)} (the smallest frequency found with "
                         "probability >= 0.9 at this n and epsilon; rarer strings may be missing from the list)")
        false = hh.get("expected_false_discoveries")
        if isinstance(false, (int, float)):
            lines.append(f"expected false discoveries: {format_number(false)}; {len(result.values)} strings found")
        if hh.get("interval_source"):
            lines.append(f"frequencies, SE and intervals from the {hh['interval_source']} "
                         f"({hh.get('estimation_reports', '?'):,} reports)")
        return lines

    def mechanism_text(self, result: Estimate) -> str:
        return result.mechanism or "heavy_hitters"

    def frequency_caption(self, result: Estimate, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
        parts = [f"Bars: the discovered strings' frequencies with their {confidence_percent(result)} intervals "
                 "(from the estimation group)"]
        if len(rows) > shown:
            parts[0] += f" (the {shown} largest of {len(rows)} strings)"
        return ". ".join(parts) + "."


HEAVY_HITTERS_REPORT = register_report_kind(HeavyHittersReport())
