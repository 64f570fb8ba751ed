"""The JSON report: the estimator's ``to_dict()`` plus the window, the spec and a ``schema_version``."""

from __future__ import annotations

import json
from typing import Any

from .model import SCHEMA_VERSION, ReportData, parse_row, row_list_key
from .source import finite_json


def json_report(data: ReportData) -> dict[str, Any]:
    """The estimate with ``schema_version``, ``window`` ({since, until}), ``spec`` and, when given, ``daily``.

    Each value row also gets ``distinguishable_from_zero`` (its interval excludes 0)."""
    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **data.result}
    key = row_list_key(data.result)
    if key is not None:
        report[key] = [_flagged(raw) for raw in data.result[key]]
    report["window"] = {"since": data.since, "until": data.until}
    report["spec"] = data.spec
    if data.daily:
        report["daily"] = [{"day": entry.day, **entry.result} for entry in data.daily]
    return report


def _flagged(raw: Any) -> Any:
    row = parse_row(raw)
    return raw if row is None else {**raw, "distinguishable_from_zero": not row.includes_zero}


def render_json(data: ReportData) -> str:
    "The JSON report as text (infinite and NaN numbers become null, so any JSON parser reads it)"
    return json.dumps(finite_json(json_report(data)), indent=2, sort_keys=False) + "\n"

