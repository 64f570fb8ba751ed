"""Reports of one campaign's estimate: a terminal table, Markdown, a self-contained HTML page and JSON.

Rendering is pure: :mod:`collector.reporting` fetches the estimate (from a collector's database or over
HTTP) into a :class:`ReportData` (``estimators.window``), and the renderers turn it into text.  The figures need
matplotlib, which takes a third of a second to import, so the HTML, Markdown and plot modules load on first use: a
table or JSON report never imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..window import DailyResult, ReportData
from .index import IndexEntry, render_index
from .json_report import json_report, render_json, report_schema
from .model import SCHEMA_VERSION, ValueRow, value_rows
from .table import render_table

FORMATS = ("table", "json", "markdown", "html")

_LAZY = {
    "render_html": ".html", "MarkdownReport": ".markdown", "render_markdown": ".markdown", "Plot": ".plots",
    "report_plots": ".plots",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMATS", "SCHEMA_VERSION", "DailyResult", "IndexEntry", "MarkdownReport", "Plot", "ReportData", "ValueRow",
    "json_report", "render_html", "render_index", "render_json", "render_markdown", "render_table", "report_plots",
    "report_schema", "value_rows",
]
