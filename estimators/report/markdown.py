"""The Markdown report: header, table and captions, with the figures as PNG files beside the Markdown file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..window import ReportData
from .plots import Plot, report_plots
from .table import footnotes, header_lines, value_table, warning_lines


@dataclass(frozen=True)
class MarkdownReport:
    "The Markdown text and the images it links to (file name -> PNG bytes), to be written beside it"

    text: str
    images: dict[str, bytes] = field(default_factory=dict)


def render_markdown(data: ReportData, *, image_prefix: str | None = "report", simulate_points: bool = True,
                    plots: Sequence[Plot] | None = None) -> MarkdownReport:
    """The report as Markdown; ``image_prefix=None`` leaves the figures out (for Markdown on stdout).

    ``plots`` reuses figures already drawn (for example for the HTML report of the same data)."""
    lines = [f"# Report: {_escape(data.campaign)}", ""] + [f"- {_escape(line)}" for line in header_lines(data)] + [""]
    lines += [f"> **{_escape(line)}**" for line in warning_lines(data)] + ([""] if data.estimate.flags else [])
    columns, cells = value_table(data)
    lines.append("| " + " | ".join(_escape(c) for c in columns) + " |")
    lines.append("|" + "|".join(":---" if i == 0 else "---:" for i in range(len(columns))) + "|")
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in cells]
    lines += [""] + [f"*{_escape(note)}*  " for note in footnotes(data)] + [""]
    images: dict[str, bytes] = {}
    if image_prefix is not None:
        for plot in plots if plots is not None else report_plots(data, simulate_points=simulate_points):
            name = f"{image_prefix}-{plot.name}.png"
            images[name] = plot.png
            lines += [f"## {plot.title}", "", f"![{plot.title}]({name})", "", _escape(plot.caption), ""]
    return MarkdownReport("\n".join(lines).rstrip() + "\n", images)


def _escape(text: str) -> str:
    "Escape the characters that would break a table cell or start emphasis"
    for character in ("\\", "|", "*", "_", "`"):
        text = text.replace(character, "\\" + character)
    return text
