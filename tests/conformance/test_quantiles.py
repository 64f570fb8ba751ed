"""The quantiles kind's conformance vectors (conformance/quantiles/payloads.json, made by conformance/generate.py):
the Python SDK reproduces each payload from its bytes, through the kind as the Client calls it; sdk-js runs the same
file (sdk-js/test/quantiles.test.mjs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client_sdk.kinds import QUANTILES
from client_sdk.kinds.quantiles import QuantilesReport
from client_sdk.randomness import ByteStreamRandom
from client_sdk.spec import load_spec

CASES = json.loads((Path(__file__).resolve().parents[2] / "conformance" / "quantiles" / "payloads.json").read_text())


class _Slot:
    def __init__(self) -> None:
        self.saved: dict = {}

    def load(self) -> dict:
        return dict(self.saved)

    def save(self, state: dict) -> None:
        self.saved = state


class _Context:
    "The part of a DeviceContext the quantiles kind reads (rng, its state slot, finish_in_transaction)"

    def __init__(self, rng: ByteStreamRandom) -> None:
        self.rng, self.state, self.finish = rng, _Slot(), None

    def finish_in_transaction(self, function) -> None:
        self.finish = function


def test_there_are_vectors_for_every_spec_and_clamped_values():
    assert len(CASES) >= 50 and len({case["spec"]["name"] for case in CASES}) >= 5
    assert any(case["value"] > case["spec"]["range"][1] for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['spec']['name']}-{c['value']}")
def test_payload_vector(case: dict) -> None:
    spec = load_spec(case["spec"])
    random_bytes = bytes.fromhex(case["random"])
    context = _Context(ByteStreamRandom(random_bytes))
    payload = QUANTILES.make_report(context, spec, case["value"])
    assert payload == case["payload"] and context.rng.consumed == len(random_bytes)
    QuantilesReport.decode(spec.params, payload)  # what the collector accepts
    low, high = case["spec"]["range"]
    if low <= case["value"] <= high:
        assert context.finish is None  # nothing to save: no clamp
    else:
        assert context.finish is not None
        context.finish(payload)
        assert context.state.saved == {"clamped": 1}
