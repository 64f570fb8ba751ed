"""Fingerprints and JSON of 40 varied specs, pinned: computed before the spec became an envelope over its kind's
parameters (issue 32), so a change to how a spec is parsed, fingerprinted or written cannot move a fingerprint.

Every mechanism, basic and Bloom RAPPOR, candidates, max_ones, unit, expires, catch_all, and Prio3 histogram, sum,
sumvec, count and multihot with each noise and window."""

import json
import pathlib

import pytest

from client_sdk import load_spec

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "spec_fingerprints.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[case["spec"]["name"] for case in CASES])
def test_fingerprint_and_json_are_unchanged(case):
    spec = load_spec(case["spec"])
    assert spec.fingerprint == case["fingerprint"]
    assert spec.to_dict() == case["to_dict"]
    assert spec.to_dict(derived=False) == case["plain"]
    again = load_spec(json.dumps(spec.to_dict()))  # a spec as served reloads as the same spec
    assert again == spec and again.fingerprint == case["fingerprint"]


def test_the_cases_cover_every_mechanism_and_prio3_type():
    mechanisms = {case["to_dict"]["mechanism"] for case in CASES}
    assert mechanisms >= {"grr", "oue", "sue", "olh", "hadamard", "laplace", "duchi", "piecewise", "hybrid",
                          "rappor", "prio3"}
    assert {case["to_dict"].get("prio3") for case in CASES} >= {"histogram", "sum", "sumvec", "count", "multihot"}
    assert {case["to_dict"].get("noise") for case in CASES} >= {"gaussian", "laplace", "coins"}
