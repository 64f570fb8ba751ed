"""The heavy_hitters campaign kind, device side: find the frequent strings of an unknown dictionary under local DP.

Two algorithms (``params``): PEM, prefix extension over OLH reports (Wang, Li, Jha, "Locally Differentially Private
Heavy Hitter Identification", IEEE TDSC 2019), and SFP, Apple's Sequence Fragment Puzzle over a Hadamard Count Mean
Sketch ("Learning with Privacy at Scale", 2017).  The collector's aggregates and the decoders are
``estimators.kinds.heavy_hitters``.
"""

from __future__ import annotations

from .device import PemReport, SfpReport, group_key, make_report, parse_payload, perturb_symbols
from .encoding import encode_value, symbols_to_bytes, symbols_to_text
from .oracles import OlhConstants, SketchConstants
from .params import FIELDS, KIND_NAME, HeavyHittersParams, json_schema, params_from_dict
from .planning import detection_probability, detection_threshold, plan, reports_needed

__all__ = [
    "FIELDS", "KIND_NAME", "HeavyHittersParams", "OlhConstants", "PemReport", "SfpReport", "SketchConstants",
    "detection_probability", "detection_threshold", "encode_value", "group_key", "json_schema", "make_report",
    "params_from_dict", "parse_payload", "perturb_symbols", "plan", "reports_needed", "symbols_to_bytes",
    "symbols_to_text",
]
