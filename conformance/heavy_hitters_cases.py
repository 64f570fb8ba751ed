"""The heavy_hitters kind's conformance cases (``conformance/heavy_hitters/``), written by ``generate.py``:

- ``specs.json``: valid specs (resolved algorithm and its parameters, fingerprint; ``auto`` resolved by the planner)
  and invalid ones with the field each error names;
- ``pem.json``, ``sfp.json``: per algorithm, a spec, a string, the random bytes and the exact payload
  (``client_sdk.kinds.heavy_hitters.device.make_report``: the report's cell), every byte consumed, with the report's
  fields (``report``: [group, hash, y] or [group, row, column, bit]): the empty string, truncation at a UTF-8
  character boundary, alphabet mode, astral characters;
- ``refused.json``: values a campaign refuses, and the error (``InvalidValue`` or ``InvalidValueType``);
- ``planner.json``: the detection threshold of configurations at several n (the planner's figure of merit), and
  ``[x, NormalDist().cdf(x), NormalDist().inv_cdf(p)]`` on a grid: an SDK's planner agrees to ~1e-12.
"""

from __future__ import annotations

import random
from statistics import NormalDist
from typing import Any

from client_sdk.errors import RecordingError
from client_sdk.kinds.heavy_hitters.device import make_report, parse_payload
from client_sdk.kinds.heavy_hitters.limits import PEM_FIELDS, SFP_FIELDS
from client_sdk.kinds.heavy_hitters.planning import detection_threshold
from client_sdk.randomness import ByteStreamRandom
from client_sdk.spec import load_spec
from conformance.spec_cases import DROP as _DROP
from conformance.spec_cases import refusals
from conformance.spec_cases import with_changes as _with

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
HH = {"kind": "heavy_hitters"}
WORDS = {**HH, "name": "words", "epsilon": 3.0, "max_length": 6, "alphabet": ALPHABET}

VALID: list[dict[str, Any]] = [
    {**WORDS, "algorithm": "pem", "segment_length": 2},
    {**WORDS, "name": "few-hashes", "algorithm": "pem", "hash_count": 16},
    {**WORDS, "name": "null-hashes", "algorithm": "pem", "hash_count": None},
    {**HH, "name": "capped-g", "epsilon": 9.0, "max_length": 3, "algorithm": "pem", "hash_count": 256},
    {**HH, "name": "urls", "epsilon": 2, "max_length": 8, "algorithm": "pem"},
    {**HH, "name": "urls.v2", "epsilon": 1.5, "max_length": 12, "algorithm": "pem", "overflow": "refuse",
     "expected_reports": 20000, "description": "not fingerprinted", "version": 4, "delta": 1e-9,
     "expires": "2031-12-31", "trust": "local"},
    {**WORDS, "algorithm": "sfp", "sketch_width": 256, "sketch_depth": 8, "fragment_length": 2},
    {**HH, "name": "crashes", "epsilon": 4.0, "max_length": 4, "algorithm": "sfp"},
    {**HH, "name": "emoji", "epsilon": 2.5, "max_length": 3, "alphabet": "\U0001f600\U0001f601\U0001f602\"\\\u00e9",
     "algorithm": "sfp", "sketch_width": 65536, "sketch_depth": 16, "hash_family": "multiply_shift",
     "overflow": "truncate"},
    {**WORDS, "name": "auto-3", "algorithm": "auto", "expected_reports": 100_000},
    {**WORDS, "name": "auto-1", "epsilon": 1.0, "expected_reports": 1_000_000},
    {**WORDS, "name": "auto-small", "epsilon": 0.5, "expected_reports": 100},
    {**HH, "name": "auto-utf8", "epsilon": 2.0, "max_length": 10, "expected_reports": 50_000},
    {**WORDS, "name": "auto-sfp", "epsilon": 0.5, "max_length": 32, "expected_reports": 1_000_000},
    {**HH, "name": "auto-big", "epsilon": 8.0, "max_length": 16, "alphabet": "01", "expected_reports": 1 << 40},
]

_PEM = {**WORDS, "algorithm": "pem"}
_SFP = {**WORDS, "algorithm": "sfp"}



INVALID: list[dict[str, Any]] = [
    _with(_PEM, max_length=_DROP), _with(_PEM, max_length=0), _with(_PEM, max_length=65),
    _with(_PEM, max_length="6"), _with(_PEM, max_length=True), _with(_PEM, max_length=None),
    _with(_PEM, alphabet="a"), _with(_PEM, alphabet="abca"), _with(_PEM, alphabet=7), _with(_PEM, alphabet=["a", "b"]),
    _with(_PEM, alphabet="".join(chr(0x4E00 + i) for i in range(256))),
    _with(_PEM, overflow="drop"), _with(_PEM, overflow=None), _with(_PEM, algorithm="treehist"),
    _with(_PEM, algorithm=None), _with(WORDS, name="auto"), _with(_PEM, algorithm="auto"),
    _with(_PEM, expected_reports=99), _with(_PEM, expected_reports=(1 << 40) + 1), _with(_PEM, expected_reports=1.5),
    _with(_SFP, segment_length=2), _with(_PEM, sketch_width=256), _with(_PEM, fragment_length=1),
    _with(WORDS, expected_reports=1000, segment_length=1), _with(WORDS, expected_reports=1000, hash_family="x"),
    _with(_PEM, segment_length=0), _with(_PEM, segment_length=7), _with(_PEM, segment_length=3),
    _with(_PEM, segment_length=None), _with(_PEM, alphabet=_DROP, segment_length=2),
    _with(_PEM, hash_count=0), _with(_PEM, hash_count=1 << 17), _with(_PEM, hash_count=49933),
    _with(_PEM, hash_count="4"), _with(_PEM, hash_count=True), _with(_SFP, hash_count=16),
    _with(_PEM, epsilon=9.0, hash_count=257),
    _with(_SFP, sketch_width=1000), _with(_SFP, sketch_width=8), _with(_SFP, sketch_width=131072),
    _with(_SFP, sketch_width=True), _with(_SFP, sketch_depth=0), _with(_SFP, sketch_depth=1025),
    _with(_SFP, sketch_width=65536, sketch_depth=17), _with(_SFP, sketch_width=2048, sketch_depth=1024),
    _with(_SFP, hash_family="md5"), _with(_SFP, fragment_length=0), _with(_SFP, fragment_length=5),
    _with(_SFP, alphabet=_DROP, fragment_length=2),
    _with(_PEM, epsilon=_DROP), _with(_PEM, epsilon=0.001), _with(_PEM, epsilon=25), _with(_PEM, epsilon="1"),
    _with(_PEM, trust="distributed"), _with(_PEM, mechanism="grr"), _with(_PEM, domain=["a", "b"]),
    _with(_PEM, kind="heavy"), _with(_PEM, name="-x"), _with(_PEM, fingerprint="0" * 32),
]

# (spec, values): the empty string, a string at max_length, truncation (at a UTF-8 boundary), astral characters
PAYLOAD_CASES: dict[str, list[tuple[dict[str, Any], list[str]]]] = {
    "pem": [
        ({**WORDS, "algorithm": "pem", "segment_length": 2}, ["", "hello", "hello.", "helloworld", "z"]),
        ({**HH, "name": "urls", "epsilon": 2.0, "max_length": 8, "algorithm": "pem"},
         ["", "/a", "/home/x", "h\u00e9ll\u00f6 w\u00f6rld", "\u65e5\u672c\u8a9e\u6587", "\U0001f600\U0001f601"]),
        ({**HH, "name": "big-eps", "epsilon": 9.5, "max_length": 5, "algorithm": "pem", "segment_length": 1},
         ["abc", "abcdefg"]),
        ({**WORDS, "name": "few-hashes", "algorithm": "pem", "hash_count": 3}, ["", "abc"]),
        ({**HH, "name": "emoji", "epsilon": 1.0, "max_length": 2, "alphabet": "\U0001f600\U0001f601\u00e9",
          "algorithm": "pem"}, ["\U0001f600\u00e9", "\u00e9\u00e9\u00e9"]),
    ],
    "sfp": [
        ({**WORDS, "algorithm": "sfp", "sketch_width": 256, "sketch_depth": 8, "fragment_length": 2},
         ["", "hello", "hello.", "helloworld", "z"]),
        ({**HH, "name": "crashes", "epsilon": 4.0, "max_length": 7, "algorithm": "sfp"},
         ["", "E1234", "h\u00e9ll\u00f6 w\u00f6rld", "\U0001f600\U0001f601"]),
        ({**HH, "name": "wide", "epsilon": 0.5, "max_length": 3, "alphabet": "01", "algorithm": "sfp",
          "sketch_width": 65536, "sketch_depth": 16, "fragment_length": 3}, ["", "0101", "1"]),
        ({**HH, "name": "deep", "epsilon": 1.0, "max_length": 2, "algorithm": "sfp", "sketch_width": 1024,
          "sketch_depth": 1024}, ["", "ab"]),
    ],
}
VECTORS_PER_VALUE = 3

REFUSED: list[tuple[dict[str, Any], Any]] = [
    ({**WORDS, "algorithm": "pem", "overflow": "refuse"}, "toolong"),
    ({**HH, "name": "bytes", "epsilon": 1.0, "max_length": 4, "algorithm": "sfp", "overflow": "refuse"}, "h\u00e9llo"),
    ({**WORDS, "algorithm": "pem"}, "Hello"),
    ({**WORDS, "algorithm": "pem"}, "h\u00e9"),
    ({**WORDS, "algorithm": "sfp"}, 7),
    ({**HH, "name": "bytes", "epsilon": 1.0, "max_length": 4, "algorithm": "pem"}, None),
    ({**HH, "name": "bytes", "epsilon": 1.0, "max_length": 4, "algorithm": "pem"}, ["a"]),
    ({**HH, "name": "bytes", "epsilon": 1.0, "max_length": 4, "algorithm": "pem"}, True),
]


def _resolved(spec: Any) -> dict[str, Any]:
    params = spec.params
    fields = PEM_FIELDS if params.algorithm == "pem" else SFP_FIELDS
    return {"algorithm": params.algorithm, **{key: getattr(params, key) for key in fields}}


def spec_cases() -> dict[str, Any]:
    valid = []
    for data in VALID:
        spec = load_spec(data)
        valid.append({"spec": data, "mechanism": spec.mechanism, "epsilon": spec.epsilon,
                      "fingerprint": spec.fingerprint, "params": _resolved(spec)})
    first = load_spec(VALID[0])
    valid.append({"spec": {**VALID[0], "fingerprint": first.fingerprint}, "mechanism": first.mechanism,
                  "epsilon": first.epsilon, "fingerprint": first.fingerprint, "params": _resolved(first)})
    invalid = refusals(INVALID)
    return {"valid": valid, "invalid": invalid}


def payload_vectors(algorithm: str, first_seed: int) -> list[dict[str, Any]]:
    out = []
    seed = first_seed
    for data, values in PAYLOAD_CASES[algorithm]:
        spec = load_spec(data)
        for value in values:
            for _ in range(VECTORS_PER_VALUE):
                seed += 1
                pool = random.Random(seed).randbytes(256)
                rng = ByteStreamRandom(pool)
                payload = make_report(rng, spec.params, value)
                out.append({"spec": data, "value": value, "random": pool[:rng.consumed].hex(), "payload": payload,
                            "report": list(parse_payload(spec.params, payload)._values())})
    return out


def refused_cases() -> list[dict[str, Any]]:
    out = []
    for data, value in REFUSED:
        try:
            make_report(ByteStreamRandom(b""), load_spec(data).params, value)
        except RecordingError as exc:
            out.append({"spec": data, "value": value, "error": type(exc).__name__})
        else:
            raise AssertionError(f"{value!r} should be refused by {data}")
    return out


def planner_cases() -> dict[str, Any]:
    thresholds = []
    for data in VALID[:6]:
        spec = load_spec(data)
        for devices in (100, 10_000, 1_000_000, 1 << 40):
            thresholds.append({"spec": data, "devices": devices,
                               "threshold": detection_threshold(spec.params, devices)})
    normal = NormalDist()
    grid = [[i / 8, normal.cdf(i / 8), normal.inv_cdf(min(1 - 1e-15, max(1e-15, (i + 64.5) / 129)))]
            for i in range(-64, 65)]
    tails = [[1 - 10.0 ** -k, normal.inv_cdf(1 - 10.0 ** -k)] for k in range(1, 16)]
    return {"thresholds": thresholds, "normal": grid, "tails": tails}


def documents() -> dict[str, Any]:
    "The kind's files under conformance/"
    return {"heavy_hitters/specs.json": spec_cases(), "heavy_hitters/pem.json": payload_vectors("pem", 70_000),
            "heavy_hitters/sfp.json": payload_vectors("sfp", 80_000), "heavy_hitters/refused.json": refused_cases(),
            "heavy_hitters/planner.json": planner_cases()}
