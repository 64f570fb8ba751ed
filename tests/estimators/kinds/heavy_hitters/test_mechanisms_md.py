"""docs/mechanisms.md's heavy hitters figures: auto's choice, the detection threshold at n = 1e6, the n a
frequency of 0.01 needs and a crafted report's weight, each recomputed from the planner and the oracle."""

import re
from pathlib import Path

from client_sdk.kinds.heavy_hitters import params_from_dict
from client_sdk.kinds.heavy_hitters.planning import detection_threshold, oracle, reports_needed

DOC = " ".join((Path(__file__).resolve().parents[4] / "docs" / "mechanisms.md").read_text().split())
ALPHABET = "abcdefghijklmnopqrstuvwxyz."


def params(epsilon, n):
    return params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": n}, epsilon)


def test_auto_threshold_and_reports_needed_are_the_planner_s():
    assert "it picks PEM with segment 2 at n = 1e4 to 1e6, eps 1 and 3" in DOC
    for epsilon in (1.0, 3.0):
        for n in (10_000, 100_000, 1_000_000):
            chosen = params(epsilon, n)
            assert (chosen.algorithm, chosen.segment_length) == ("pem", 2)
    found = re.search(r"at n = 1e6, eps 3 is ([\d.]+); strings of frequency 0.01 need n = ([\d,]+)", DOC)
    assert found
    chosen = params(3.0, 1_000_000)
    assert float(found.group(1)) == float(f"{detection_threshold(chosen, 1_000_000):.2g}")
    assert int(found.group(2).replace(",", "")) == reports_needed(chosen, 0.01)


def test_a_crafted_report_s_weight():
    found = re.search(r"([\d.]+)/N_group at eps 3 \(N_group = n / (\d)\)", DOC)
    assert found
    chosen = params(3.0, 1_000_000)
    constants = oracle(chosen)
    assert float(found.group(1)) == round(1 / (float(constants.p_star) - float(constants.q_star)), 2)
    assert int(found.group(2)) == chosen.groups
