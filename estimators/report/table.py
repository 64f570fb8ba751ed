"""The terminal report: a header (mechanism, epsilon, n, window, LDP/central ratio) and one aligned table."""

from __future__ import annotations

from collections.abc import Sequence

from ..window import ReportData
from .budget import budget_line
from .kinds.base import report_kind
from .sections import BELOW_ZERO_MARK, ZERO_MARK

__all__ = ["BELOW_ZERO_MARK", "ZERO_MARK", "footnotes", "header_lines", "render_table", "value_table",
           "warning_lines"]
WARNING = "WARNING"


def header_lines(data: ReportData) -> list[str]:
    "The facts every format states first (the estimate's kind says which; the release ledger's line for every kind)"
    lines = report_kind(data.estimate).header_lines(data)
    if data.budget is not None:  # collector.reporting adds the release ledger's figures
        lines = [*lines, budget_line(data.budget)]
    return lines


def warning_lines(data: ReportData) -> list[str]:
    "The estimate's flags (``estimators.flags``), which every format prints before its numbers"
    return [f"{WARNING}: {flag.message}" for flag in data.estimate.flags]


def value_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    "Column names and formatted cells, shared by the terminal and Markdown renderers (the kind lays them out)"
    return report_kind(data.estimate).value_table(data)


def footnotes(data: ReportData) -> list[str]:
    "The notes under the table: the estimate's layout's, then its kind's"
    return report_kind(data.estimate).footnotes(data)


def render_table(data: ReportData) -> str:
    "The report as plain text for a terminal"
    columns, cells = value_table(data)
    warnings = warning_lines(data)
    lines = header_lines(data) + ([""] + warnings if warnings else []) + [""] + _aligned(columns, cells)
    notes = footnotes(data)
    if notes:
        lines += [""] + notes
    return "\n".join(lines) + "\n"


def _aligned(columns: Sequence[str], cells: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(columns[i])] + [len(row[i]) for row in cells]) for i in range(len(columns))]

    def line(values: Sequence[str]) -> str:
        # first column (a value name) left-aligned, numbers right-aligned
        parts = [values[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(values[1:], widths[1:])]
        return "  ".join(parts).rstrip()

    return [line(columns), line(["-" * w for w in widths])] + [line(row) for row in cells]
