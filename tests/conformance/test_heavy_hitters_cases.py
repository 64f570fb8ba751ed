"""The Python SDK runs the heavy_hitters kind's conformance cases (conformance/heavy_hitters/): per algorithm, the
same bytes give the same payload; refused values raise the recorded error; sdk-js runs the same files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from client_sdk.errors import RecordingError
from client_sdk.kinds.heavy_hitters.device import make_report, parse_payload, report_cell
from client_sdk.kinds.heavy_hitters.planning import detection_threshold
from client_sdk.randomness import SECURE_RANDOM, ByteStreamRandom
from client_sdk.spec import load_spec

CASES = Path(__file__).resolve().parents[2] / "conformance" / "heavy_hitters"


def _load(name: str) -> Any:
    return json.loads((CASES / name).read_text(encoding="utf-8"))


VECTORS = [case for algorithm in ("pem", "sfp") for case in _load(f"{algorithm}.json")]


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: f"{c['spec']['name']}-{c['spec']['algorithm']}")
def test_payload_vector(case: dict) -> None:
    random_bytes = bytes.fromhex(case["random"])
    rng = ByteStreamRandom(random_bytes)
    params = load_spec(case["spec"]).params
    assert make_report(rng, params, case["value"]) == case["payload"]
    assert rng.consumed == len(random_bytes)
    assert list(parse_payload(params, case["payload"])._values()) == case["report"]
    assert report_cell(params, parse_payload(params, case["report"])) == case["payload"]  # the older list form


def test_both_algorithms_and_the_edge_cases_have_vectors() -> None:
    assert {case["spec"]["algorithm"] for case in VECTORS} == {"pem", "sfp"}
    values = {case["value"] for case in VECTORS}
    assert "" in values and any(len(value.encode()) > 8 for value in values)
    with_alphabet = {"alphabet" in case["spec"] for case in VECTORS}
    assert with_alphabet == {True, False}


def test_secure_random_consumes_the_os_bytes_as_the_vectors_do(monkeypatch: pytest.MonkeyPatch) -> None:
    for case in VECTORS[::7]:
        stream = ByteStreamRandom(bytes.fromhex(case["random"]))
        monkeypatch.setattr(random, "_urandom", stream.token_bytes)
        assert make_report(SECURE_RANDOM, load_spec(case["spec"]).params, case["value"]) == case["payload"]
        assert stream.consumed == len(case["random"]) // 2


@pytest.mark.parametrize("case", _load("refused.json"), ids=lambda c: c["error"])
def test_refused_value(case: dict) -> None:
    with pytest.raises(RecordingError) as caught:
        make_report(ByteStreamRandom(b""), load_spec(case["spec"]).params, case["value"])
    assert type(caught.value).__name__ == case["error"]


def test_planner_thresholds() -> None:
    for case in _load("planner.json")["thresholds"]:
        assert detection_threshold(load_spec(case["spec"]).params, case["devices"]) == case["threshold"]
