"""Reports of one campaign's estimate: a terminal table, Markdown, a self-contained HTML page and JSON.

Pure rendering: the caller fetches the estimate (from storage or over HTTP) and passes a :class:`ReportData`.
"""

from __future__ import annotations

from .html import render_html
from .json_report import json_report, render_json
from .markdown import MarkdownReport, render_markdown
from .model import SCHEMA_VERSION, DailyResult, ReportData, ValueRow, value_rows
from .plots import Plot, report_plots
from .table import render_table

FORMATS = ("table", "json", "markdown", "html")

__all__ = [
    "FORMATS", "SCHEMA_VERSION", "DailyResult", "MarkdownReport", "Plot", "ReportData", "ValueRow", "json_report",
    "render_html", "render_json", "render_markdown", "render_table", "report_plots", "value_rows",
]
