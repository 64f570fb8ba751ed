"""The heavy_hitters campaign kind, device side: find the frequent strings of an unknown dictionary under local DP.

Two algorithms (``params``): PEM, prefix extension over OLH reports (Wang, Li, Jha, "Locally Differentially Private
Heavy Hitter Identification", IEEE TDSC 2019), and SFP, Apple's Sequence Fragment Puzzle over a Hadamard Count Mean
Sketch ("Learning with Privacy at Scale", 2017).  The collector's aggregates and the decoders are
``estimators.kinds.heavy_hitters``; the kind's registration is ``.kind``.

The names below are loaded on first use: ``client_sdk.kinds`` registers the kind at start-up, before
``client_sdk.mechanisms`` (which the reports' hashes live in) has loaded, so importing this package loads nothing.
"""

from __future__ import annotations

from importlib import import_module

from .limits import FIELDS, KIND_NAME

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .device import (
        PemReport,
        SfpReport,
        cell_count,
        group_key,
        make_report,
        parse_payload,
        payload_radices,
        perturb_symbols,
        report_cell,
    )
    from .encoding import encode_value, symbols_to_bytes, symbols_to_text
    from .oracles import OlhConstants, SketchConstants
    from .params import HeavyHittersParams, json_schema, params_from_dict
    from .planning import detection_probability, detection_threshold, plan, reports_needed

_LAZY = {
    **dict.fromkeys(("PemReport", "SfpReport", "cell_count", "group_key", "make_report", "parse_payload",
                     "payload_radices", "perturb_symbols", "report_cell"), ".device"),
    **dict.fromkeys(("encode_value", "symbols_to_bytes", "symbols_to_text"), ".encoding"),
    **dict.fromkeys(("OlhConstants", "SketchConstants"), ".oracles"),
    **dict.fromkeys(("HeavyHittersParams", "json_schema", "params_from_dict"), ".params"),
    **dict.fromkeys(("detection_probability", "detection_threshold", "plan", "reports_needed"), ".planning"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FIELDS", "KIND_NAME", "HeavyHittersParams", "OlhConstants", "PemReport", "SfpReport", "SketchConstants",
    "cell_count", "detection_probability", "detection_threshold", "encode_value", "group_key", "json_schema",
    "make_report", "params_from_dict", "parse_payload", "payload_radices", "perturb_symbols", "plan",
    "report_cell", "reports_needed", "symbols_to_bytes", "symbols_to_text",
]
