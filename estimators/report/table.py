"""The terminal report: a header (mechanism, epsilon, n, window, LDP/central ratio) and one aligned table."""

from __future__ import annotations

from collections.abc import Sequence

from ..window import ReportData
from .budget import budget_line
from .kinds.base import report_kind
from .model import (
    BELOW_ZERO,
    NOT_DISTINGUISHABLE,
    ValueRow,
    central_halfwidth,
    central_mechanism,
    chance_exclusions_text,
    display_rows,
    format_column,
    format_number,
    guarantee_lines,
    with_unit,
)

ZERO_MARK = "~0"
BELOW_ZERO_MARK = "<0"
WARNING = "WARNING"


def header_lines(data: ReportData) -> list[str]:
    "The facts every format states first (the estimate's kind says which; the release ledger's line for every kind)"
    lines = report_kind(data.estimate).header_lines(data)
    if isinstance(data.result.get("budget"), dict):  # collector.reporting adds the release ledger's figures
        lines = [*lines, budget_line(data.result["budget"])]
    return lines


def warning_lines(data: ReportData) -> list[str]:
    "The estimate's flags (``estimators.flags``), which every format prints before its numbers"
    return [f"{WARNING}: {flag.message}" for flag in data.estimate.flags]


def value_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    "Column names and formatted cells, shared by the terminal and Markdown renderers"
    own = report_kind(data.estimate).value_table(data)
    if own is not None:
        return own
    result = data.estimate
    if result.is_mean:
        columns = [with_unit(name, result) for name in ("mean", "std error", "CI low", "CI high", "central DP CI +-")]
        cells = [[format_number(result.mean), format_number(result.std_error), format_number(result.ci_low),
                  format_number(result.ci_high), format_number(central_halfwidth(result))]]
        return columns, cells
    rows = display_rows(result)
    with_norm_sub = any(row.norm_sub is not None for row in rows)
    columns = ["value", "estimate", "std error", "CI low", "CI high"] + (["Norm-Sub"] if with_norm_sub else []) + [""]
    numbers = [[row.estimate, row.std_error, row.ci_low, row.ci_high] + ([row.norm_sub] if with_norm_sub else [])
               for row in rows]
    formatted = list(zip(*(format_column(column) for column in zip(*numbers)))) if rows else []
    cells = [[row.value, *texts, _mark(row)] for row, texts in zip(rows, formatted)]
    return columns, cells


def footnotes(data: ReportData) -> list[str]:
    own = report_kind(data.estimate).footnotes(data)
    if own is not None:
        return own
    notes = []
    result = data.estimate
    rows = result.values
    if any(row.includes_zero for row in rows):
        notes.append(f"{ZERO_MARK}: the confidence interval includes 0 ({NOT_DISTINGUISHABLE})")
    chance = chance_exclusions_text(result)
    if chance:
        notes.append(chance)
    if any(row.below_zero for row in rows):
        notes.append(f"{BELOW_ZERO_MARK}: the confidence interval is {BELOW_ZERO}")
    if rows and any(row.norm_sub is not None for row in rows):
        notes.append("Norm-Sub: projected onto the probability simplex (consistent but biased); "
                     "the estimate column is unbiased")
    if result.allocated_mass is not None:
        notes.append(f"only the candidates the decoder detected are listed; together they hold "
                     f"{format_number(result.allocated_mass)} of the reports")
    if result.is_mean:
        notes.append(f"central DP CI +-: what a trusted curator ({central_mechanism(result)}, replace-one) would "
                     "report at the same epsilon")
    notes += [f"guarantee: {line}" for line in guarantee_lines(result)]
    defence = result.defence
    if defence is not None and defence.max_ones is not None:
        notes.append(f"ones test: reports setting more than {defence.max_ones} bits were refused at ingestion "
                     f"(max_ones; {format_number(defence.false_rejection)} of honest reports are), and the rest "
                     "de-biased for it")
    return notes


def _mark(row: ValueRow) -> str:
    return ZERO_MARK if row.includes_zero else BELOW_ZERO_MARK if row.below_zero else ""


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
