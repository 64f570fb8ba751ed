"""An index page of several reports: each one's name linked to its files, with a one-line summary.

Plain HTML with the reports' inline style and no figures (no matplotlib): ``ldp-telemetry demo`` writes one as
``index.html`` beside its reports, and any set of reports written next to each other can have one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import PurePosixPath

from .style import STYLE

FILE_KINDS = {".html": "HTML", ".md": "Markdown", ".json": "JSON"}  # other files (the PNGs) are linked from these


@dataclass(frozen=True)
class IndexEntry:
    "One report on an index page: its name, its files (relative links; the HTML one is the name's) and a summary"

    name: str
    files: Sequence[str]
    summary: str


def render_index(title: str, entries: Sequence[IndexEntry], notes: Sequence[str] = ()) -> str:
    "The index page: ``title``, one list item per entry (its name links to its HTML file), then ``notes``"
    items = []
    for entry in entries:
        kinds = {PurePosixPath(name).suffix: name for name in entry.files}
        html = kinds.get(".html")
        name = f'<a href="{escape(html)}">{escape(entry.name)}</a>' if html else escape(entry.name)
        others = [f'<a href="{escape(kinds[suffix])}">{label}</a>' for suffix, label in FILE_KINDS.items()
                  if suffix in kinds and suffix != ".html"]
        files = f" ({', '.join(others)})" if others else ""
        items.append(f"<li><strong>{name}</strong>{files}: {escape(entry.summary)}</li>")
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">', f"<title>{escape(title)}</title>",
        f"<style>{STYLE}</style>", "</head>", "<body>", f"<h1>{escape(title)}</h1>",
        '<ul class="facts">', *items, "</ul>",
    ]
    parts += [f'<p class="note">{escape(note)}</p>' for note in notes]
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"
