"""The repeated kind's conformance cases (``conformance/repeated/``), written by ``generate.py``'s ``documents()``.

``specs.json``: valid specs with their fingerprints, invalid ones with the field their SpecError names.
``reports.json``: ``sequences``, a device's reports over several periods from its state (empty, or drawn for other
parameters): at each step the time, the value, the random bytes that step consumes, the exact report payload
(``{"period", "answer"}``), whether it memoized a new answer (what the ledger charges epsilon for) and the state
after it; ``state_errors``, damaged states and the field of the DeviceStateError; ``periods``, period labels.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from client_sdk.errors import DeviceStateError
from client_sdk.kinds.repeated import device
from client_sdk.kinds.repeated.codec import encode_report
from client_sdk.kinds.repeated.periods import period_of
from client_sdk.randomness import ByteStreamRandom
from client_sdk.spec import load_spec
from conformance.spec_cases import DROP as _DROP
from conformance.spec_cases import refusals
from conformance.spec_cases import with_changes as _with

START = 1_767_225_600  # 2026-01-01T00:00:00Z, a Thursday
MEAN = {"name": "usage_minutes", "kind": "repeated", "mode": "mean", "epsilon": 1.0, "range": [0, 10],
        "rounding_points": 5}
HISTOGRAM = {"name": "usage_hist", "kind": "repeated", "mode": "histogram", "epsilon": 2.0, "range": [0, 10],
             "buckets": 8, "bits": 2}

VALID = [
    MEAN,
    {**MEAN, "name": "usage_gamma", "gamma": 0.125, "period": "hour", "expires": "2031-02-28"},
    {**MEAN, "name": "fine", "epsilon": 0.5, "range": [-1.5, 2.5e-5], "rounding_points": 4096, "period": "week"},
    {**MEAN, "name": "two_points", "epsilon": 3, "rounding_points": 2, "description": "not fingerprinted",
     "version": 2},
    HISTOGRAM,
    {**HISTOGRAM, "name": "one_bit", "epsilon": 1.0, "bits": 1, "gamma": 0.2},
    {**HISTOGRAM, "name": "every_bucket", "buckets": 3, "bits": 3},
    {**HISTOGRAM, "name": "wide", "epsilon": 4.0, "range": [-40, 60.5], "buckets": 1024, "bits": 17,
     "gamma": 0.0625, "period": "day"},
]




INVALID = [
    _with(MEAN, mode="median"), _with(MEAN, mode=_DROP), _with(MEAN, buckets=8), _with(HISTOGRAM, rounding_points=3),
    _with(MEAN, range=[1, 1]), _with(MEAN, range=[0]), _with(MEAN, range=[0, "9"]), _with(MEAN, range=[0, 1e16]),
    _with(MEAN, period="month"), _with(MEAN, period=None), _with(MEAN, gamma=0.5), _with(MEAN, gamma=0),
    _with(MEAN, gamma=True), _with(MEAN, gamma=0.49999999999), _with(MEAN, rounding_points=1),
    _with(MEAN, rounding_points=4097), _with(MEAN, rounding_points=_DROP), _with(MEAN, rounding_points="5"),
    _with(HISTOGRAM, buckets=1), _with(HISTOGRAM, bits=9), _with(HISTOGRAM, bits=0), _with(HISTOGRAM, bits=_DROP),
    _with(MEAN, epsilon=0.001), _with(MEAN, epsilon=_DROP), _with(MEAN, domain=["a", "b"]),
    _with(MEAN, mechanism="grr"), _with(MEAN, trust="distributed"), _with(MEAN, name="-x"),
]

# (spec, initial state or None, [(seconds after START, value)])
SEQUENCES: list[tuple[dict[str, Any], Any, list[tuple[int, Any]]]] = [
    (MEAN, None, [(0, 3.3), (86_400, 3.3), (2 * 86_400 + 7, 3.3), (3 * 86_400, 6.0), (4 * 86_400, 3.3),
                  (5 * 86_400, -5), (6 * 86_400, 99.5), (7 * 86_400, 10), (8 * 86_400, 2.5)]),
    (VALID[1], None, [(0, 7.2), (3600, 7.2), (7200, 7.2), (10_800, 0.1), (14_400, 7.2)]),
    (VALID[2], None, [(0, 1e-6), (7 * 86_400, 1e-6), (14 * 86_400, -0.75), (21 * 86_400, 2.5e-5)]),
    (VALID[3], None, [(0, 5.0), (86_400, 5.0), (2 * 86_400, 0)]),
    (HISTOGRAM, None, [(0, 1.0), (86_400, 1.0), (2 * 86_400, 4.9), (3 * 86_400, 9.99), (4 * 86_400, 10),
                       (5 * 86_400, 1.0), (6 * 86_400, 6.3), (7 * 86_400, 5.5), (8 * 86_400, 8.0),
                       (9 * 86_400, 5.4), (10 * 86_400, 0.5)]),
    (VALID[5], None, [(0, 2.0), (86_400, 2.0), (2 * 86_400, 8.0)]),
    (VALID[6], None, [(0, 0), (86_400, 5), (2 * 86_400, 10), (3 * 86_400, 0)]),
    (VALID[7], None, [(0, 21.7), (86_400, 21.7), (2 * 86_400, -100), (3 * 86_400, 60.5), (4 * 86_400, 21.7)]),
    # a state drawn for other parameters (another epsilon): dropped, drawn afresh, every answer charged again
    (MEAN, {"version": 1, "identity": {"kind": "repeated", "mode": "mean", "range": [0.0, 10.0], "period": "day",
                                       "rounding_points": 5, "epsilon": 2.0}, "alpha": 7, "answers": {"1": 1}},
     [(0, 3.3), (86_400, 3.3)]),
    # a state of this campaign already holding answers: reused, nothing drawn but gamma's flips
    (VALID[5], {"version": 1, "identity": {"kind": "repeated", "mode": "histogram", "range": [0.0, 10.0],
                                           "period": "day", "buckets": 8, "bits": 1, "gamma": 0.2, "epsilon": 1.0},
                "buckets": [3], "answers": {"other": "80"}}, [(0, 0.5), (86_400, 3.9), (2 * 86_400, 0.5)]),
]

STATE_ERRORS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (MEAN, {"version": 2, "alpha": 1, "answers": {}}),
    (MEAN, {"version": 1, "identity": "IDENTITY", "alpha": "x", "answers": {}}),
    (MEAN, {"version": 1, "identity": "IDENTITY", "alpha": 2 ** 32, "answers": {}}),
    (MEAN, {"version": 1, "identity": "IDENTITY", "alpha": 5, "answers": {"1": 2}}),
    (MEAN, {"version": 1, "identity": "IDENTITY", "alpha": 5, "answers": []}),
    (HISTOGRAM, {"version": 1, "identity": "IDENTITY", "buckets": [5, 2], "answers": {}}),
    (HISTOGRAM, {"version": 1, "identity": "IDENTITY", "buckets": [2, 2], "answers": {}}),
    (HISTOGRAM, {"version": 1, "identity": "IDENTITY", "buckets": [2, 8], "answers": {}}),
    (HISTOGRAM, {"version": 1, "identity": "IDENTITY", "buckets": [2, 5], "answers": {"2": "c0c0"}}),
]


def _pool(seed: int) -> bytes:
    return random.Random(seed).randbytes(1 << 16)


def spec_cases() -> dict[str, Any]:
    valid = []
    for data in VALID:
        spec = load_spec(data)
        valid.append({"spec": data, "mechanism": spec.mechanism, "epsilon": spec.epsilon,
                      "fingerprint": spec.fingerprint})
    invalid = refusals(INVALID)
    return {"valid": valid, "invalid": invalid}


def _sequence(seed: int, data: dict[str, Any], initial: Any, steps: list[tuple[int, Any]]) -> dict[str, Any]:
    params = load_spec(data).params
    state: dict[str, Any] = copy.deepcopy(initial) if initial is not None else {}
    out = []
    for index, (offset, value) in enumerate(steps):
        pool = _pool(1000 * seed + index)
        rng = ByteStreamRandom(pool)
        now = START + offset
        answer, new_answer = device.make_report(rng, params, state, value)
        out.append({"now": now, "value": value, "random": pool[:rng.consumed].hex(),
                    "payload": encode_report(period_of(params, now), answer), "new_answer": new_answer,
                    "state": copy.deepcopy(state)})
    return {"spec": data, "state": initial, "steps": out}


def _state_error(data: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    params = load_spec(data).params
    if state.get("identity") == "IDENTITY":
        state = {**state, "identity": device.state_identity(params)}
    try:
        device.make_report(ByteStreamRandom(b""), params, copy.deepcopy(state), 1.0)
    except DeviceStateError as exc:
        return {"spec": data, "state": state, "value": 1.0, "error": type(exc).__name__, "field": exc.field}
    raise AssertionError(f"state {state!r} should be refused")


def report_cases() -> dict[str, Any]:
    periods = []
    for data in (VALID[1], MEAN, VALID[2]):
        params = load_spec(data).params
        for offset in (0, 3599, 3600, 86_399, 4 * 86_400, 5 * 86_400 - 1, 5 * 86_400, 400 * 86_400 + 12_345):
            periods.append({"period": params.period, "now": START + offset, "label": period_of(params, START + offset)})
    return {"sequences": [_sequence(seed, *case) for seed, case in enumerate(SEQUENCES)],
            "state_errors": [_state_error(*case) for case in STATE_ERRORS], "periods": periods}


def repeated_documents() -> dict[str, Any]:
    "The repeated kind's files, by their path under conformance/"
    return {"repeated/specs.json": spec_cases(), "repeated/reports.json": report_cases()}
