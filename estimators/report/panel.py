"""A campaign's dashboard panel: what the collector's dashboard (``collector.dashboard``) renders for one estimate.

The panel is a plain JSON description (header lines, tables of formatted cells, interval points and per-day series
as numbers) that the page's script draws generically, with no knowledge of kinds.  Every part comes from the
kind's report side (:class:`~estimators.report.kinds.base.ReportKind`), the code the static report renders, so
the dashboard and ``ldp-telemetry report`` never disagree.  No I/O here.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..window import ReportData, finite_json
from .model import RATIO_DEFINITION, central_halfwidth, central_mechanism, ldp_to_central_ratio, ratio_text

if TYPE_CHECKING:
    from .kinds.base import ReportKind

PANEL_VERSION = 1


def build_panel(kind: ReportKind, data: ReportData) -> dict[str, Any]:
    "The panel of ``data`` as ``kind`` lays it out (see the module doc); non-finite numbers become null"
    estimate = data.estimate
    columns, cells = kind.value_table(data)
    points = kind.section(estimate).intervals(estimate)
    panel: dict[str, Any] = {
        "panel_version": PANEL_VERSION,
        "campaign": data.campaign,
        "kind": data.kind,
        "trust": estimate.trust,
        "model": kind.model_label,
        "n": data.n,
        "epsilon": estimate.epsilon,
        "confidence": estimate.confidence,
        "header": kind.header_lines(data),
        "flags": [flag.message for flag in estimate.flags],
        "tables": [{"title": "estimate", "columns": columns, "rows": cells, "notes": kind.footnotes(data)}],
        "intervals": {"xlabel": kind.section(estimate).value_label(estimate),
                      "title": f"estimates with their {_percent(estimate.confidence)} intervals ({kind.model_label})",
                      "points": [{"label": label, "estimate": value, "low": low, "high": high}
                                 for label, value, low, high in points]},
        "central": _central(data),
        "series": _series(kind, data),
        "budget": data.budget,
    }
    return finite_json(panel)


def _central(data: ReportData) -> dict[str, Any] | None:
    "The central-DP baseline and the one LDP/central ratio, when the estimate states them"
    ratio = ldp_to_central_ratio(data.estimate)
    halfwidth = central_halfwidth(data.estimate)
    if ratio is None and halfwidth is None:
        return None
    return {"mechanism": central_mechanism(data.estimate), "halfwidth": halfwidth, "ratio": ratio,
            "ratio_text": None if ratio is None else ratio_text(ratio), "definition": RATIO_DEFINITION}


def _series(kind: ReportKind, data: ReportData) -> dict[str, Any] | None:
    "The per-day series with their bands: (day, estimate, CI low, CI high) per line"
    if not data.daily:
        return None
    series = kind.daily_series(data.daily)
    days = [entry.day for entry in data.daily]
    return {"ylabel": series.ylabel, "xlabel": "day (UTC)", "shown": series.shown,
            "lines": [{"label": label, "points": [[day, *_point(point)] for day, point in zip(days, points)]}
                      for label, points in series.series.items()]}


def _point(point: tuple[float, float, float]) -> list[float | None]:
    return [None if math.isnan(value) else value for value in point]


def _percent(confidence: float | None) -> str:
    return "?" if confidence is None else f"{100 * confidence:.4g}%"
