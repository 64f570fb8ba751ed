"""The JSON report: the estimate in its common shape plus the window, the spec and a ``schema_version``.

Its JSON Schema is ``report.schema.json`` next to this module (:func:`report_schema`): ``kind``, ``campaign``,
``n``, ``confidence``, ``values`` and ``trust`` (local or distributed) for every kind of campaign, RAPPOR
included."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from ..window import ReportData, finite_json
from .model import SCHEMA_VERSION, parse_row, row_list_key


def json_report(data: ReportData) -> dict[str, Any]:
    """The estimate with ``schema_version``, ``trust``, ``window`` ({since, until}), ``spec`` and ``daily`` if given.

    A distributed campaign's estimate keeps its ``trust_models``, ``guarantee``, ``noise`` and ``batches``.

    Each value row also gets ``distinguishable_from_zero`` (its interval excludes 0)."""
    result = data.result
    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "trust": result.get("trust", "local"), **result}
    key = row_list_key(result)
    if key is not None:
        report[key] = [_flagged(raw) for raw in result[key]]
    report["window"] = {"since": data.since, "until": data.until}
    report["spec"] = data.spec
    if data.daily:
        report["daily"] = [{"day": entry.day, **entry.result} for entry in data.daily]
    return report


def report_schema() -> dict[str, Any]:
    "The published JSON Schema of :func:`json_report` (``report.schema.json``, shipped in this package)"
    return json.loads(files(__package__).joinpath("report.schema.json").read_text(encoding="utf-8"))


def _flagged(raw: Any) -> Any:
    row = parse_row(raw)
    return raw if row is None else {**raw, "distinguishable_from_zero": not row.includes_zero}


def render_json(data: ReportData) -> str:
    "The JSON report as text (infinite and NaN numbers become null, so any JSON parser reads it)"
    return json.dumps(finite_json(json_report(data)), indent=2, sort_keys=False) + "\n"

