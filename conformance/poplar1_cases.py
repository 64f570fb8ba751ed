"""The poplar1 kind's conformance cases (``conformance/poplar1/``), written by ``generate.py`` from the Python kind
(``client_sdk/kinds/poplar1/``):

- ``specs.json``: valid specs (8, 32 and 256 bits; the defaults; the envelope's fields) with their fingerprint, and
  invalid ones with the field each error names (one or more per field);
- ``shards.json``: a spec, a value (a string, or ``{"bytes": hex}``), the kind's measurement of it (the bits, as
  a string of 0s and 1s: the cut or padded bytes), the report's nonce and rand (hex), the application context and
  the exact encoded public share and input shares (leader, helper) of ``kind.vdaf_of(spec).shard``;
- ``refused.json``: values a campaign refuses (longer than ``bits / 8`` bytes under ``overflow: "refuse"``, another
  type), and the error (a lone surrogate, which JSON files cannot hold, is in tests/sdk_js/test_poplar1_interop.py).
"""

from __future__ import annotations

import random
from typing import Any

from client_sdk.distributed import ctx_for, kind_of
from client_sdk.spec import load_spec
from conformance.spec_cases import DROP as _DROP
from conformance.spec_cases import refusals
from conformance.spec_cases import with_changes as _with

P1 = {"kind": "poplar1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6}
PATHS = {**P1, "name": "top_paths", "bits": 32, "threshold": 0.01, "stride": 4, "min_batch": 100}



VALID: list[dict[str, Any]] = [
    PATHS,
    _with(PATHS, name="bytes8", bits=8, stride=1, min_batch=2, threshold=0.5),
    _with(PATHS, name="long", bits=256, stride=8, overflow="truncate", epsilon=2, delta=1e-9),
    _with(PATHS, name="defaults", trust=_DROP, stride=_DROP, overflow=_DROP, threshold=0.25),
    _with(PATHS, name="paths.v2", description="not fingerprinted", version=2, expires="2031-12-31",
          threshold=1e-3, min_batch=1 << 31, overflow="refuse"),
]
INVALID: list[dict[str, Any]] = [
    _with(PATHS, bits=_DROP), _with(PATHS, bits=0), _with(PATHS, bits=12), _with(PATHS, bits=264),
    _with(PATHS, bits="32"), _with(PATHS, bits=True), _with(PATHS, bits=32.0 + 0.5),
    _with(PATHS, overflow="drop"), _with(PATHS, overflow=None),
    _with(PATHS, threshold=_DROP), _with(PATHS, threshold=0), _with(PATHS, threshold=1), _with(PATHS, threshold="0.1"),
    _with(PATHS, threshold=True),
    _with(PATHS, stride=0), _with(PATHS, stride=9), _with(PATHS, stride=3), _with(PATHS, stride=2.5),
    _with(PATHS, stride=None),
    _with(PATHS, min_batch=_DROP), _with(PATHS, min_batch=1), _with(PATHS, min_batch=(1 << 31) + 1),
    _with(PATHS, min_batch="100"), _with(PATHS, min_batch=True),
    _with(PATHS, epsilon=_DROP), _with(PATHS, epsilon=0.001), _with(PATHS, epsilon=25), _with(PATHS, epsilon="1"),
    _with(PATHS, delta=_DROP), _with(PATHS, trust="local"), _with(PATHS, kind="poplar"), _with(PATHS, name="-x"),
    _with(PATHS, mechanism="grr"), _with(PATHS, domain=["a", "b"]), _with(PATHS, prio3="count"),
    _with(PATHS, fingerprint="0" * 32),
    _with(PATHS, aggregators={"helper": "https://helper.example"}),  # a listing's block, never a spec's field
]

_LONG = "/" + "x" * 40
# (spec, values): a value shorter than bits / 8 (padded), one exactly as long, one longer (cut), UTF-8, bytes, ""
SHARD_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    (VALID[1], ["", "a", "ab", "\u00e9", b"\xff"]),
    (VALID[0], ["", "/", "/ab", "/abc", "/index.html", "na\u00efve/\u00fc", b"\x00\xff\x80b", b""]),
    (VALID[2], ["", "/", _LONG, "\U0001f600" * 8, b"\x01" * 32]),
]
REFUSED: list[tuple[dict[str, Any], Any]] = [
    (_with(PATHS, overflow="refuse"), "/abc/"),
    (_with(PATHS, overflow="refuse"), "\u00e9\u00e9\u00e9"),
    (_with(PATHS, overflow="refuse", bits=8, stride=1), b"ab"),
    (PATHS, 7),
    (PATHS, None),
    (PATHS, ["a"]),
]


def spec_cases() -> dict[str, Any]:
    valid = []
    for data in VALID:
        spec = load_spec(data)
        valid.append({"spec": data, "mechanism": spec.mechanism, "epsilon": spec.epsilon,
                      "fingerprint": spec.fingerprint})
    first = load_spec(VALID[0])
    valid.append({"spec": {**VALID[0], "fingerprint": first.fingerprint}, "mechanism": first.mechanism,
                  "epsilon": first.epsilon, "fingerprint": first.fingerprint})
    invalid = refusals(INVALID)
    return {"valid": valid, "invalid": invalid}


def _value_json(value: Any) -> Any:
    return {"bytes": value.hex()} if isinstance(value, bytes) else value


def shard_cases() -> list[dict[str, Any]]:
    out, seed = [], 90_000
    for data, values in SHARD_CASES:
        spec = load_spec(data)
        kind = kind_of(spec)
        vdaf = kind.vdaf_of(spec)
        for value in values:
            seed += 1
            measurement = kind.measurement_of(spec, value)
            rng = random.Random(seed)
            nonce, rand = rng.randbytes(16), rng.randbytes(vdaf.RAND_SIZE)
            public, shares = vdaf.shard(ctx_for(spec), measurement, nonce, rand)
            out.append({"spec": data, "fingerprint": spec.fingerprint, "value": _value_json(value),
                        "measurement": "".join("1" if bit else "0" for bit in measurement),
                        "ctx": ctx_for(spec).hex(), "nonce": nonce.hex(), "rand": rand.hex(),
                        "public_share": vdaf.encode_public_share(public).hex(),
                        "input_shares": [vdaf.encode_input_share(share).hex() for share in shares]})
    return out


def refused_cases() -> list[dict[str, Any]]:
    """Each value the kind refuses, with the error the device's ``record`` raises (``Poplar1Kind.make_report``
    maps measurement_of's ValueError to InvalidValue and TypeError to InvalidValueType)"""
    out = []
    for data, value in REFUSED:
        spec = load_spec(data)
        try:
            kind_of(spec).measurement_of(spec, value)
        except TypeError:
            error = "InvalidValueType"
        except ValueError:
            error = "InvalidValue"
        else:
            raise AssertionError(f"{value!r} should be refused by {data}")
        out.append({"spec": data, "value": _value_json(value), "error": error})
    return out


def documents() -> dict[str, Any]:
    "The kind's files under conformance/"
    return {"poplar1/specs.json": spec_cases(), "poplar1/shards.json": shard_cases(),
            "poplar1/refused.json": refused_cases()}
