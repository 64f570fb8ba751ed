"""docs/privacy.md "Poisoning": every figure is what the code estimates from planted fake reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import estimators
from client_sdk import load_spec
from client_sdk.mechanisms.hashing import olh_hash
from client_sdk.mechanisms.numeric import PM_CELLS
from estimators.flags import FALSE_ALARM
from estimators.mechanisms import mechanism_for
from estimators.ones_test import false_rejection_rate, max_ones_for

PRIVACY = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"
VALUES = ["a", "b", "c", "d"]


def section() -> str:
    text = PRIVACY.read_text(encoding="utf-8")
    return text[text.index("- **Poisoning.**"):text.index("- **Metadata.**")]


def table() -> dict[str, list[str]]:
    rows = [line.strip() for line in section().splitlines() if line.strip().startswith("| ")]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows[1:])}


def figure(value: float) -> str:
    "Three significant figures, as the page prints them"
    return f"{value:.3g}"


def scientific(value: float) -> str:
    "8.56e-4, as the page prints a small rate"
    return f"{value:.2e}".replace("e-0", "e-")


def crafted(spec) -> object:
    "The report that lifts the most values at once (the page's 'crafted report' column)"
    if spec.mechanism == "olh":  # seed 0: h(v) = 0 for every v
        return ["0" * 32, olh_hash(0, 0, 0, mechanism_for(spec).device.g)]
    return {"grr": 0, "sue": "f0", "oue": "f0", "hadamard": [0, 0]}[spec.mechanism]


def planted(spec, payload, count: int = 100) -> list[float]:
    "The estimates of ``count`` fake reports alone: g for every value"
    return [row["estimate"] for row in estimators.estimate(spec, [payload] * count).to_json()["values"]]


@pytest.mark.parametrize("mechanism", ["grr", "sue", "oue", "olh", "hadamard"])
def test_the_table_is_what_planted_fake_reports_estimate(mechanism):
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "domain": VALUES})
    gains = planted(spec, crafted(spec))
    lifted = [g for g in gains if g > 0]
    _, lifts, per_value, total = table()[mechanism]
    assert lifts == ("1" if len(lifted) == 1 else "all") and (len(lifted) in (1, len(VALUES)))
    assert per_value.split(" ")[0] == figure(lifted[0])
    assert total == figure(sum(gains))


def test_grr_over_1024_values():
    spec = load_spec({"name": "t", "mechanism": "grr", "epsilon": 1.0, "domain": list(range(1024))})
    assert f"({figure(planted(spec, 0, 10)[0])} over 1,024 values)" in table()["grr"][2]


def test_the_mean_figures_are_the_largest_codes_estimates():
    text = " ".join(section().split())
    estimates = {}
    for mechanism, payload in (("duchi", 1), ("piecewise", PM_CELLS), ("hybrid", [1, PM_CELLS]), ("laplace", None)):
        spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "range": [-1, 1]})
        if payload is None:
            payload = mechanism_for(spec).device.max_abs_code
        estimates[mechanism] = figure(estimators.estimate(spec, [payload] * 10).mean)
    assert estimates["piecewise"] == estimates["hybrid"]
    assert (f"`g` = {estimates['duchi']} (duchi), {estimates['piecewise']} (piecewise, hybrid) and "
            f"{estimates['laplace']} (laplace") in text


def test_the_flag_example_and_its_false_alarm_rate():
    text = " ".join(section().split())
    spec = load_spec({"name": "t", "mechanism": "oue", "epsilon": 1.0, "domain": VALUES[:3]})
    gains = planted(spec, "e0", 40_000)
    assert f"estimate {figure(gains[0])} each, summing to {sum(gains):.2f}: flagged" in text
    assert f"probability at most {FALSE_ALARM:g}" in text


def test_the_ones_test_figures():
    text = " ".join(section().split())
    for d in (16, 64, 256):
        spec = load_spec({"name": "t", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(d))})
        device = mechanism_for(spec).device
        p, q = device.p_star, device.q_star
        k = max_ones_for(d, p, q, 1e-3)
        rate = scientific(false_rejection_rate(d, p, q, k))
        assert f"K = {k} of {d} {'values ' if d == 16 else ''}refuses {rate}" in text
    three = load_spec({"name": "t", "mechanism": "oue", "epsilon": 1.0, "domain": VALUES[:3]})
    device = mechanism_for(three).device
    all_three = false_rejection_rate(3, device.p_star, device.q_star, 2)
    assert f"sets all three bits {100 * all_three:.2g}% of the time" in text
    assert re.search(r"`max_ones` is part of the fingerprint", text)


def test_the_page_says_whether_the_javascript_sdk_takes_max_ones():
    "The JS SDK refuses a spec field it does not know: the page says so while the local kind does not list max_ones"
    source = (PRIVACY.parents[1] / "sdk-js" / "src" / "kinds" / "local.ts").read_text(encoding="utf-8")
    known = re.search(r"^  fields: \[(.*?)\]", source, re.S | re.M)
    assert known is not None
    takes = '"max_ones"' in known.group(1)
    says_not = "The JavaScript SDK does not take it yet" in " ".join(section().split())
    assert takes != says_not
