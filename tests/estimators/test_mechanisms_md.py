"""docs/mechanisms.md's worked figure for OUE: at epsilon 1 and 1e5 reports, the standard errors of one value's
frequency under OUE and under central DP (Laplace on the histogram, replace-one), from the spec's quantized p* and
q* and the central baseline's code: a standard error is compared with a standard error."""

from __future__ import annotations

import math
import re
from pathlib import Path

import client_sdk
from estimators.central import central_noise, histogram_sensitivity

DOC = Path(__file__).resolve().parents[2] / "docs" / "mechanisms.md"


def test_the_oue_and_central_standard_errors_are_the_formulas():
    text = " ".join(DOC.read_text().split())
    found = re.search(r"As standard errors: ±([\d.]+) with OUE, against ±([\d.]+) for central DP", text)
    assert found, "mechanisms.md compares standard errors with standard errors"
    spec = client_sdk.load_spec({"name": "b", "mechanism": "oue", "epsilon": 1.0, "domain": ["a", "b"]})
    local_se = math.sqrt(client_sdk.mechanism_from_spec(spec).variance_factor / 100_000)
    central_se = central_noise(histogram_sensitivity(100_000), 1.0, None, 0.95)["std_error"]
    stated_local, stated_central = found.groups()
    assert round(local_se, len(stated_local) - 2) == float(stated_local)
    assert float(stated_central) == float(f"{central_se:.2g}")
