"""The Python SDK runs the repeated kind's conformance cases (conformance/repeated/reports.json; its specs.json is run
with every kind's by test_python_sdk.py); sdk-js runs the same file (sdk-js/test/repeated.test.mjs)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from client_sdk.errors import DeviceStateError
from client_sdk.kinds.repeated import device
from client_sdk.kinds.repeated.codec import check_report, encode_report
from client_sdk.kinds.repeated.periods import period_of
from client_sdk.randomness import ByteStreamRandom
from client_sdk.spec import load_spec

CASES = json.loads((Path(__file__).resolve().parents[2] / "conformance" / "repeated" / "reports.json")
                   .read_text(encoding="utf-8"))


@pytest.mark.parametrize("sequence", CASES["sequences"], ids=lambda s: s["spec"]["name"])
def test_sequence(sequence: dict) -> None:
    "Every step's payload, new answer and state from its bytes, every byte consumed; the payload checks"
    params = load_spec(sequence["spec"]).params
    state = copy.deepcopy(sequence["state"]) if sequence["state"] is not None else {}
    for step in sequence["steps"]:
        rng = ByteStreamRandom(bytes.fromhex(step["random"]))
        answer, new_answer = device.make_report(rng, params, state, step["value"])
        payload = encode_report(period_of(params, step["now"]), answer)
        assert (payload, new_answer, state) == (step["payload"], step["new_answer"], step["state"])
        assert rng.consumed == len(step["random"]) // 2
        assert check_report(params, json.loads(json.dumps(payload)))[0] == payload["period"]


def test_the_sequences_cover_both_modes_gamma_and_reuse() -> None:
    specs = [sequence["spec"] for sequence in CASES["sequences"]]
    assert {(spec["mode"], "gamma" in spec) for spec in specs} == {(m, g) for m in ("mean", "histogram")
                                                                    for g in (True, False)}
    steps = [step for sequence in CASES["sequences"] for step in sequence["steps"]]
    assert any(step["new_answer"] for step in steps) and sum(not step["new_answer"] for step in steps) > 10
    assert any(sequence["state"] is not None for sequence in CASES["sequences"])


@pytest.mark.parametrize("case", CASES["state_errors"], ids=lambda c: c["field"])
def test_damaged_state(case: dict) -> None:
    params = load_spec(case["spec"]).params
    with pytest.raises(DeviceStateError) as caught:
        device.make_report(ByteStreamRandom(b""), params, copy.deepcopy(case["state"]), case["value"])
    assert caught.value.field == case["field"]


def test_period_labels() -> None:
    specs = {"hour": CASES["sequences"][1]["spec"], "day": CASES["sequences"][0]["spec"],
             "week": CASES["sequences"][2]["spec"]}
    for case in CASES["periods"]:
        assert period_of(load_spec(specs[case["period"]]).params, case["now"]) == case["label"]
