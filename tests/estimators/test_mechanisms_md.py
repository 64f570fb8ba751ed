"""docs/mechanisms.md's worked figure for OUE: at epsilon 1 and 1e5 reports, the standard error of one value's
frequency and its 95% half-width, from the spec's quantized p* and q* (the variance formula the estimators use)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import client_sdk

DOC = Path(__file__).resolve().parents[2] / "docs" / "mechanisms.md"


def test_the_oue_standard_error_and_half_width_are_the_formulas():
    text = " ".join(DOC.read_text().split())
    found = re.search(r"At epsilon 1 and 100,000 reports, one value's frequency has a standard error of ±([\d.]+) "
                      r"with OUE \(a 95% interval of ±([\d.]+)\), against a standard error of", text)
    assert found, "mechanisms.md compares standard errors with standard errors"
    spec = client_sdk.load_spec({"name": "b", "mechanism": "oue", "epsilon": 1.0, "domain": ["a", "b"]})
    se = math.sqrt(client_sdk.mechanism_from_spec(spec).variance_factor / 100_000)
    stated_se, stated_halfwidth = found.groups()
    assert round(se, len(stated_se) - 2) == float(stated_se)
    assert round(1.959964 * se, len(stated_halfwidth) - 2) == float(stated_halfwidth)
