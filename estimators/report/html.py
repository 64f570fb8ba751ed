"""The HTML report: one self-contained file, every figure embedded as a base64 PNG, styles inline."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape

from ..window import ReportData
from .kinds.base import report_kind
from .model import BELOW_ZERO, NOT_DISTINGUISHABLE
from .plots import Plot, report_plots
from .style import STYLE
from .table import BELOW_ZERO_MARK, ZERO_MARK, footnotes, header_lines, value_table, warning_lines

MARK_TITLES = {ZERO_MARK: f"interval includes 0: {NOT_DISTINGUISHABLE}", BELOW_ZERO_MARK: f"interval {BELOW_ZERO}"}


def render_html(data: ReportData, *, simulate_points: bool = True, plots: Sequence[Plot] | None = None) -> str:
    "The report as one HTML document with no external resources; ``plots`` reuses figures already drawn"
    facts = "".join(f"<li>{escape(line)}</li>" for line in header_lines(data))
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>ldp-telemetry report: {escape(data.campaign)}</title>", f"<style>{STYLE}</style>", "</head>",
        "<body>", f"<h1>Report: {escape(data.campaign)}</h1>", f'<ul class="facts">{facts}</ul>',
        *(f'<p class="warning" role="alert">{escape(line)}</p>' for line in warning_lines(data)),
        _table(data),
    ]
    parts += [f'<p class="note">{escape(note)}</p>' for note in footnotes(data)]
    for plot in plots if plots is not None else report_plots(data, simulate_points=simulate_points):
        encoded = base64.b64encode(plot.png).decode("ascii")
        parts.append(
            f'<figure id="{plot.name}"><h2>{escape(plot.title)}</h2>'
            f'<img alt="{escape(plot.title)}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{escape(plot.caption)}</figcaption></figure>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _table(data: ReportData) -> str:
    columns, cells = value_table(data)
    zero_rows = report_kind(data.estimate).zero_rows(data) or [False] * len(cells)
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    body = []
    for row, is_zero in zip(cells, zero_rows):
        marked = [f'<span title="{escape(MARK_TITLES[c])}">{escape(c)}</span>' if c in MARK_TITLES else escape(c)
                  for c in row]
        body.append(f'<tr{" class=zero" if is_zero else ""}>' + "".join(f"<td>{c}</td>" for c in marked) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
