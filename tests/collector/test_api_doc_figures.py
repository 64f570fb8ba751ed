"""Figures docs/api.md states that the code decides: the schema's latest version and its steps, and the example
spec's derived block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import client_sdk
from collector.storage import LATEST_SCHEMA_VERSION

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_api_md_lists_every_schema_step_up_to_the_latest():
    text = " ".join(API.read_text().split())
    listed = [int(v) for v in re.findall(r"version (\d+)[:,]", text.split("* Schema versions:")[1].split("* ")[0])]
    assert listed == list(range(2, LATEST_SCHEMA_VERSION + 1))
    assert f"version {LATEST_SCHEMA_VERSION}, the latest (`LATEST_SCHEMA_VERSION`)" in text
    assert "this release" not in text.split("* Schema versions:")[1].split("* ")[0]


def test_api_md_example_derived_block_is_what_the_spec_derives():
    "Each figure of the example's derived block is the randomizer's, to the digits shown"
    example = next(block for block in re.findall(r"```json\n(.*?)```", API.read_text(), re.S) if '"derived"' in block)
    spec = json.loads(example)["spec"]
    stated = spec.pop("derived")
    spec.pop("fingerprint")
    derived = client_sdk.mechanism_from_spec(client_sdk.load_spec(spec)).derived()
    for key, value in stated.items():
        digits = len(repr(value).split(".")[1])
        assert round(derived[key], digits) == value, (key, derived[key], value)
