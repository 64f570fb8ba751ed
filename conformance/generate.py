"""Write the conformance cases every SDK runs from the Python SDK: per campaign kind, ``conformance/<kind>/*.json``
(``local/``: specs, payload vectors, wire formats; ``prio3/``: shards), and ``exp.json``, which every kind shares.

    python conformance/generate.py          # rewrite the files
    python conformance/generate.py --check  # exit 1 if a file differs from what the Python SDK gives now

Each payload vector feeds a fixed byte string to the randomizer through ``ByteStreamRandom`` (the way
``SecureRandom`` consumes ``os.urandom``) and records the exact payload and how many bytes it consumed; an SDK
conforms when it draws the same payload from the same bytes.  The random bytes are the first bytes of a seeded
stream, so regenerating gives the same files.
"""

from __future__ import annotations

import json
import random
import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from client_sdk import mechanism_from_spec  # noqa: E402
from client_sdk.randomness import ByteStreamRandom, exp_rounded  # noqa: E402
from client_sdk.spec import load_spec  # noqa: E402
from conformance import budget_shuffle_cases  # noqa: E402
from conformance.heavy_hitters_cases import documents as heavy_hitters_documents  # noqa: E402
from conformance.poplar1_cases import documents as poplar1_documents  # noqa: E402
from conformance.repeated_cases import repeated_documents  # noqa: E402
from conformance.spec_cases import DROP as _DROP  # noqa: E402
from conformance.spec_cases import refusals  # noqa: E402
from conformance.spec_cases import with_changes as _with  # noqa: E402

DOMAIN = ["chrome", "firefox", "safari", "edge", "other"]
VALID_SPECS: list[dict[str, Any]] = [
    {"name": "browser", "mechanism": "grr", "epsilon": 1.0, "domain": DOMAIN},
    {"name": "browser", "mechanism": "grr", "epsilon": 1, "domain": DOMAIN},
    {"name": "browser.v2", "mechanism": "oue", "epsilon": 0.5, "domain": DOMAIN, "catch_all": "other",
     "description": "ignored by the fingerprint", "version": 3, "delta": 1e-6},
    {"name": "ints", "mechanism": "sue", "epsilon": 2.25, "domain": [0, 1, 2, -7, 9007199254740991]},
    {"name": "mixed", "mechanism": "olh", "epsilon": 3.0, "domain": ["a", 1, "1", "\u00e9\u65e5\n\"\\"]},
    {"name": "had", "mechanism": "hadamard", "epsilon": 0.1, "domain": [f"v{i}" for i in range(13)]},
    {"name": "auto-small", "mechanism": "auto", "epsilon": 2.0, "domain": DOMAIN},
    {"name": "auto-mid", "mechanism": "auto", "epsilon": 1.0, "domain": list(range(100))},
    {"name": "auto-large", "mechanism": "auto", "epsilon": 1.0, "domain": list(range(5000))},
    {"name": "load_ms", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 5000]},
    {"name": "load_s", "mechanism": "duchi", "epsilon": 0.7, "range": [-1.5, 2.5e-5]},
    {"name": "size", "mechanism": "piecewise", "epsilon": 2.0, "range": [1e-5, 1e15]},
    {"name": "tiny", "mechanism": "laplace", "epsilon": 0.01, "range": [-2.5e-7, 3e14]},
    {"name": "size2", "mechanism": "hybrid", "epsilon": 4.0, "range": [-0.0, 123456.789], "expires": "2031-02-28"},
    {"name": "load_unit", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 5000], "unit": "ms"},
    {"name": "temp", "mechanism": "duchi", "epsilon": 1.0, "range": [-40, 60], "unit": "\u00b0C per 1000 rows"},
    {"name": "astral", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 1], "unit": "\U0001d52a" * 16},
    {"name": "no_unit", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 1], "unit": None},
    {"name": "homepage", "mechanism": "rappor", "rappor": {"k": 32, "h": 2, "m": 8, "f": 0.5, "p": 0.5, "q": 0.75}},
    {"name": "homepage2", "mechanism": "rappor", "rappor": {"k": 300, "h": 3, "m": 4, "f": 0.25, "p": 0.25,
                                                            "q": 0.75}, "candidates": ["/", "/about"]},
    {"name": "flags", "mechanism": "rappor", "rappor": {"k": 3, "m": 2, "f": 0.5, "p": 0.25, "q": 0.75,
                                                        "encoding": "basic"}, "candidates": ["x", "y", "z"]},
    {"name": "opt_in", "mechanism": "rappor", "rappor": {"k": 1, "m": 1, "f": 0.5, "p": 0.25, "q": 0.75}},
    {"name": "opt_in2", "mechanism": "rappor", "rappor": {"k": 1, "m": 1, "f": 0.5, "p": 0.25, "q": 0.75},
     "epsilon": None},
]

_BASE = {"name": "c", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]}
_RAPPOR = {"name": "r", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4}}



INVALID_SPECS: list[Any] = [
    [1, 2],
    "not an object",
    _with(_BASE, colour="red"),
    _with(_BASE, name=""),
    _with(_BASE, name="-starts-with-dash"),
    _with(_BASE, name="x" * 65),
    _with(_BASE, name="g\n"),
    _with(_BASE, name=_DROP),
    _with(_BASE, trust="central"),
    _with(_BASE, mechanism="gaussian"),
    _with(_BASE, mechanism=_DROP),
    _with(_BASE, description=7),
    _with(_BASE, version=0),
    _with(_BASE, version=True),
    _with(_BASE, delta=1.5),
    _with(_BASE, expires="2031-02-29"),
    _with(_BASE, expires="31-01-01"),
    _with(_BASE, epsilon=0.001),
    _with(_BASE, epsilon=25),
    _with(_BASE, epsilon="1"),
    _with(_BASE, epsilon=True),
    _with(_BASE, epsilon=_DROP),
    _with(_BASE, domain=[]),
    _with(_BASE, domain=["a"]),
    _with(_BASE, domain=["a", "a"]),
    _with(_BASE, domain=["a", True]),
    _with(_BASE, domain=["a", 1.5]),
    _with(_BASE, domain=["a", None]),
    _with(_BASE, domain="ab"),
    _with(_BASE, domain=_DROP),
    _with(_BASE, catch_all="z"),
    _with(_BASE, range=[0, 1]),
    _with(_BASE, rappor={"k": 4}),
    _with(_BASE, candidates=["a"]),
    _with(_BASE, max_measurement=3),
    _with(_BASE, fingerprint="0" * 32),
    {"name": "n", "mechanism": "laplace", "epsilon": 1.0, "range": [1, 1]},
    {"name": "n", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 2e15]},
    {"name": "n", "mechanism": "laplace", "epsilon": 1.0, "range": [0]},
    {"name": "n", "mechanism": "laplace", "epsilon": 1.0, "range": [0, "1"]},
    {"name": "n", "mechanism": "laplace", "epsilon": 1.0},
    {"name": "n", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 1], "domain": ["a", "b"]},
    *({"name": "n", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 1], "unit": unit}
      for unit in ("", "x" * 17, "\U0001d52a" * 17, "m\ts", "m\u0085s", "\x7f", 7, ["ms"])),
    _with(_BASE, unit="ms"),
    _with(_BASE, unit=None),
    _with(_RAPPOR, unit="ms"),
    _with(_RAPPOR, domain=["a", "b"]),
    _with(_RAPPOR, rappor=[16]),
    _with(_RAPPOR, rappor={"k": 16, "z": 1}),
    _with(_RAPPOR, rappor={"k": 0}),
    _with(_RAPPOR, rappor={"k": 16, "h": 17}),
    _with(_RAPPOR, rappor={"k": 16, "m": 3}),
    _with(_RAPPOR, rappor={"k": 16, "m": 2048}),
    _with(_RAPPOR, rappor={"k": 70000}),
    _with(_RAPPOR, rappor={"k": 16, "encoding": "hashed"}),
    _with(_RAPPOR, rappor={"k": 2, "encoding": "boolean"}),
    _with(_RAPPOR, rappor={"k": 16, "f": 1}),
    _with(_RAPPOR, rappor={"k": 16, "p": 0.8, "q": 0.7}),
    _with(_RAPPOR, rappor={"k": 16, "p": "0.5"}),
    _with(_RAPPOR, rappor={"k": 16, "h": 1, "f": 0.99, "p": 0.49, "q": 0.51}),
    _with(_RAPPOR, epsilon=1.0),
    _with(_RAPPOR, candidates="a"),
    _with(_RAPPOR, candidates=["a", "a"]),
]


def _random_bytes(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _vector(seed: int, spec: dict[str, Any], value: Any, secret: str | None = None) -> dict[str, Any]:
    pool = _random_bytes(seed, 1 << 16)
    rng = ByteStreamRandom(pool)
    options: dict[str, Any] = {"rng": rng}
    if secret is not None:
        options["secret"] = bytes.fromhex(secret)
    payload = mechanism_from_spec(spec, **options).perturb(value)
    case: dict[str, Any] = {"spec": spec, "value": value}
    if secret is not None:
        case["secret"] = secret
    case.update(random=pool[:rng.consumed].hex(), payload=payload)
    return case


def payload_vectors() -> list[dict[str, Any]]:
    "Every mechanism, several values and byte streams each"
    cases: list[tuple[dict[str, Any], list[Any]]] = [
        ({"name": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": DOMAIN}, ["chrome", "other", "safari"]),
        ({"name": "grr-int", "mechanism": "grr", "epsilon": 0.3, "domain": list(range(40)), "catch_all": 0},
         [0, 39, 12, 1000]),
        ({"name": "sue", "mechanism": "sue", "epsilon": 2.0, "domain": DOMAIN}, ["edge", "chrome"]),
        ({"name": "oue", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(1024))}, [0, 513, 1023]),
        ({"name": "oue-small", "mechanism": "oue", "epsilon": 0.8, "domain": ["a", "b", "c"]}, ["a", "c"]),
        ({"name": "olh", "mechanism": "olh", "epsilon": 1.5, "domain": list(range(10000))}, [0, 4097, 9999]),
        ({"name": "olh-big", "mechanism": "olh", "epsilon": 9.5, "domain": ["a", "b", "c"]}, ["b"]),
        ({"name": "had", "mechanism": "hadamard", "epsilon": 1.0, "domain": [f"v{i}" for i in range(100)]},
         ["v0", "v77", "v99"]),
        ({"name": "lap", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 5000]}, [0, 231.5, 5000, 9999, -3]),
        ({"name": "lap2", "mechanism": "laplace", "epsilon": 0.1, "range": [-2.5, 7.25]}, [1.0, 7.25]),
        ({"name": "lap3", "mechanism": "laplace", "epsilon": 7.3, "range": [0, 1]}, [0.3333333333333333]),
        ({"name": "duchi", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 100]}, [0, 33.3, 100]),
        ({"name": "pm", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 100]}, [0, 12.5, 99.99, 100]),
        ({"name": "pm2", "mechanism": "piecewise", "epsilon": 0.35, "range": [-1e6, 1e6]}, [123456.7]),
        ({"name": "hy", "mechanism": "hybrid", "epsilon": 3.0, "range": [0, 10]}, [0, 2.5, 10]),
        ({"name": "hy-low", "mechanism": "hybrid", "epsilon": 0.5, "range": [0, 10]}, [7]),
    ]
    out = []
    seed = 0
    for spec, values in cases:
        for value in values:
            for _ in range(2):
                seed += 1
                out.append(_vector(seed, spec, value))
    rappor_cases: list[tuple[dict[str, Any], list[Any]]] = [
        ({"name": "home", "mechanism": "rappor", "rappor": {"k": 32, "h": 2, "m": 8}}, ["/", "/about", "\u65e5"]),
        ({"name": "home-wide", "mechanism": "rappor", "rappor": {"k": 1000, "h": 4, "m": 16, "f": 0.25,
                                                                  "p": 0.3, "q": 0.7}}, ["/x"]),
        ({"name": "flags", "mechanism": "rappor", "rappor": {"k": 3, "m": 2, "encoding": "basic"},
          "candidates": ["x", "y", "z"]}, ["y"]),
        ({"name": "opt_in", "mechanism": "rappor", "rappor": {"k": 1, "m": 1, "p": 0.25}}, [True, False]),
    ]
    for spec, values in rappor_cases:
        for value in values:
            for _ in range(2):
                seed += 1
                secret = _random_bytes(10_000 + seed, 32).hex()
                out.append(_vector(seed, spec, value, secret))
    return out


def spec_cases(valid_specs: list[dict[str, Any]] | None = None, invalid_specs: list[Any] | None = None
               ) -> dict[str, Any]:
    "The local kind's spec cases, or those of ``valid_specs`` and ``invalid_specs``"
    local = valid_specs is None
    valid = []
    for data in (VALID_SPECS + budget_shuffle_cases.LOCAL_VALID) if valid_specs is None else valid_specs:
        spec = load_spec(data)
        valid.append({"spec": data, "mechanism": spec.mechanism, "epsilon": spec.epsilon,
                      "fingerprint": spec.fingerprint})
    if local:
        valid.append({"spec": {**VALID_SPECS[0], "fingerprint": load_spec(VALID_SPECS[0]).fingerprint},
                      "mechanism": "grr", "epsilon": 1.0, "fingerprint": load_spec(VALID_SPECS[0]).fingerprint})
    invalid = refusals((INVALID_SPECS + budget_shuffle_cases.LOCAL_INVALID) if invalid_specs is None else invalid_specs)
    return {"valid": valid, "invalid": invalid}


def exp_cases() -> list[list[float]]:
    "exp_rounded at the arguments the mechanisms use (eps, eps/2, -eps/2) over a grid of epsilons"
    xs = sorted({x for i in range(1, 2001) for x in (i / 100, i / 200, -i / 200)} | {0.0, 1e-300, 0.61, 20.0})
    return [[x, exp_rounded(x)] for x in xs]


def wire_cases() -> list[dict[str, Any]]:
    "Per mechanism, payloads the collector must accept and the field it names for those it must reject"
    specs = {
        "grr": {"name": "w", "mechanism": "grr", "epsilon": 1.0, "domain": DOMAIN},
        "oue": {"name": "w", "mechanism": "oue", "epsilon": 1.0, "domain": ["a"] * 0 + [f"v{i}" for i in range(10)]},
        "olh": {"name": "w", "mechanism": "olh", "epsilon": 1.0, "domain": DOMAIN},
        "hadamard": {"name": "w", "mechanism": "hadamard", "epsilon": 1.0, "domain": DOMAIN},
        "laplace": {"name": "w", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 1]},
        "duchi": {"name": "w", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 1]},
        "piecewise": {"name": "w", "mechanism": "piecewise", "epsilon": 1.0, "range": [0, 1]},
        "hybrid": {"name": "w", "mechanism": "hybrid", "epsilon": 1.0, "range": [0, 1]},
        "rappor": {"name": "w", "mechanism": "rappor", "rappor": {"k": 12, "h": 2, "m": 4}},
    }
    payloads: dict[str, list[Any]] = {
        "grr": [0, 4, 5, -1, 1.5, "1", True, None],
        "oue": ["ffc0", "0000", "ffe0", "ff", "ffc00", "zzzz", "FFC0", 1023],
        "olh": [["0" * 32, 0], ["f" * 32, 2], ["0" * 32, 5], ["0" * 31, 0], ["g" * 32, 0], ["0" * 32], "x",
                ["0" * 32, 1, 2]],
        "hadamard": [[0, 0], [7, 1], [8, 0], [0, 2], [-1, 0], [0]],
        "laplace": [0, 4096, -4096, 10 ** 9, 1.5, "3"],
        "duchi": [0, 1, 2, -1],
        "piecewise": [0, 65536, 65537, -1, 0.5],
        "hybrid": [[0, 1], [1, 65536], [0, 2], [1, 65537], [2, 0], [1]],
        "rappor": [{"cohort": 0, "bits": "fff0"}, {"cohort": 3, "bits": "0000"}, {"cohort": 4, "bits": "0000"},
                   {"cohort": 0, "bits": "fff1"}, {"cohort": 0, "bits": "fff"}, {"cohort": 0},
                   {"cohort": 0, "bits": "0000", "extra": 1}, [0, "0000"]],
    }
    out = []
    for name, spec in specs.items():
        mechanism = mechanism_from_spec(spec)
        for payload in payloads[name]:
            try:
                mechanism.check_payload(payload)
            except Exception as exc:  # noqa: BLE001 (a PayloadError with a field, recorded as such)
                out.append({"spec": spec, "payload": payload, "valid": False, "field": getattr(exc, "field", None)})
            else:
                out.append({"spec": spec, "payload": payload, "valid": True})
    return out


PRIO3_DP = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
PRIO3_SPECS: list[tuple[dict[str, Any], list[Any]]] = [
    ({"name": "crashed", "trust": "distributed", "prio3": "count"}, [True, False]),
    ({"name": "load", "trust": "distributed", "prio3": "sum", "max_measurement": 100}, [0, 37, 100]),
    ({"name": "bytes", "trust": "distributed", "prio3": "sum", "max_measurement": (1 << 32) - 1}, [(1 << 32) - 1]),
    ({"name": "vec", "trust": "distributed", "prio3": "sumvec", "length": 3, "max_measurement": 7}, [[0, 5, 7]]),
    ({"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": DOMAIN}, [3]),
    ({"name": "hist16", "trust": "distributed", "prio3": "histogram", "domain": list(range(16))}, [0, 15]),
    ({"name": "hist1024", "trust": "distributed", "prio3": "histogram", "domain": list(range(1024))}, [513]),
    ({"name": "tags", "trust": "distributed", "prio3": "multihot", "domain": DOMAIN, "max_weight": 2},
     [[False, True, False, True, False], [False] * 5]),
    ({"name": "coins", "trust": "distributed", "prio3": "histogram", "domain": DOMAIN, "noise": "coins",
      "coins": 2, "honest_fraction": 0.5}, ["coins"]),
]


def prio3_cases() -> list[dict[str, Any]]:
    """Prio3 shards of the project's parameter sets: from a campaign's spec, a measurement, the report's nonce and
    rand, the exact encoded public share and input shares (``client_sdk.distributed``: ctx_for, vdaf_for)"""
    from client_sdk.distributed import ctx_for, vdaf_for

    out = []
    seed = 50_000
    for data, measurements in PRIO3_SPECS:
        source = {**PRIO3_DP, **data}
        spec = load_spec(source)
        vdaf = vdaf_for(spec)
        params = spec.prio3
        assert params is not None
        for measurement in measurements:
            seed += 1
            if measurement == "coins":
                assert params.length is not None and params.coins is not None
                coin_bits = list(_random_bytes(seed, params.length * params.coins))
                measurement = [seed % params.length, [b & 1 for b in coin_bits]]
            nonce, rand = _random_bytes(seed, 16), _random_bytes(seed + 1, vdaf.RAND_SIZE)
            shardable = tuple(measurement) if params.noise == "coins" else measurement
            public, shares = vdaf.shard(ctx_for(spec), shardable, nonce, rand)
            out.append({"spec": source, "fingerprint": spec.fingerprint,
                        "prio3": {key: getattr(params, key) for key in ("type", "length", "max_measurement",
                                                                         "max_weight", "chunk_length", "noise",
                                                                         "coins")},
                        "measurement": measurement, "ctx": ctx_for(spec).hex(), "nonce": nonce.hex(),
                        "rand": rand.hex(), "public_share": vdaf.encode_public_share(public).hex(),
                        "input_shares": [vdaf.encode_input_share(share).hex() for share in shares]})
    return out


QUANTILES_SPECS = [
    {"name": "q-uniform", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1000], "buckets": 64, "branching": 4},
    {"name": "q-had", "kind": "quantiles", "epsilon": 0.5, "range": [-5, 5], "buckets": 100, "oracle": "hadamard"},
    {"name": "q-latency", "kind": "quantiles", "epsilon": 2.0, "range": [1, 60000], "bucketing": "geometric",
     "growth": 1.1, "unit": "ms"},
    {"name": "q-bytes", "kind": "quantiles", "epsilon": 1.5, "range": [0.5, 1e9], "bucketing": "geometric",
     "growth": 2, "oracle": "hadamard", "expires": "2030-01-01"},
    {"name": "q-auto", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 1024},
    {"name": "q-tiny", "kind": "quantiles", "epsilon": 3.0, "range": [0, 1], "buckets": 2},
]
QUANTILES_INVALID = [
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "buckets": 8},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1]},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 1},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "growth": 2},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 9], "bucketing": "geometric", "growth": 2},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [1, 9], "bucketing": "geometric", "buckets": 4,
     "growth": 2},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [1, 9], "bucketing": "geometric", "growth": 1},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [1, 9], "bucketing": "log"},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "oracle": "oue"},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "branching": 1},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 4096, "branching": 15},
    {"name": "q", "kind": "quantiles", "epsilon": 0, "range": [0, 1], "buckets": 8},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "domain": [1, 2]},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "trust": "shuffled"},
]
# trust "distributed": a Prio3 histogram of the buckets (the clamped value's bucket is the measurement)
_QD = {"kind": "quantiles", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
QUANTILES_DISTRIBUTED = [
    {**_QD, "name": "qd-uniform", "range": [0, 2000], "buckets": 100, "unit": "ms", "min_batch": 100},
    {**_QD, "name": "qd-latency", "range": [1, 60000], "bucketing": "geometric", "growth": 1.25, "window": "1h",
     "prio3": "histogram", "expires": "2030-01-01"},
    {**_QD, "name": "qd-laplace", "range": [-5, 5], "buckets": 40, "noise": "laplace", "delta": None,
     "epsilon": 0.5},
]
QUANTILES_INVALID += [
    {**QUANTILES_DISTRIBUTED[0], "aggregators": {"helper": "https://helper.example"}},  # a listing's, not a spec's
    {**QUANTILES_DISTRIBUTED[0], "noise": "coins"},
    {key: value for key, value in QUANTILES_DISTRIBUTED[0].items() if key != "noise"},
    {**QUANTILES_DISTRIBUTED[0], "branching": 4},
    {**QUANTILES_DISTRIBUTED[0], "oracle": "olh"},
    {**QUANTILES_DISTRIBUTED[0], "prio3": "sum"},
    {**QUANTILES_DISTRIBUTED[0], "delta": None},
    {**QUANTILES_DISTRIBUTED[0], "min_batch": 1},
    {**QUANTILES_DISTRIBUTED[0], "window": "7m"},
    {**QUANTILES_DISTRIBUTED[0], "buckets": 1},
    {**QUANTILES_DISTRIBUTED[0], "epsilon": 25},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "noise": "gaussian"},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "window": "1h"},
    {"name": "q", "kind": "quantiles", "epsilon": 1.0, "range": [0, 1], "buckets": 8, "aggregators": {}},
]
QUANTILES_DISTRIBUTED_VALUES = [-7.0, 0.0, 1.0, 99.5, 1999.999, 2000.0, 59999.0, 1e12]
QUANTILES_VALUES = [-7.0, 0.0, 0.37, 1.0, 2.5, 99.5, 1234.5, 59999.0, 1e12]


def quantiles_spec_cases() -> dict[str, Any]:
    "The quantiles kind's specs: each valid one's fingerprint (the resolved tree in it), each invalid one's field"
    valid = [{"spec": data, "mechanism": "quantiles", "epsilon": data["epsilon"],
              "fingerprint": load_spec(data).fingerprint} for data in QUANTILES_SPECS + QUANTILES_DISTRIBUTED]
    invalid = refusals(QUANTILES_INVALID)
    return {"valid": valid, "invalid": invalid}


def quantiles_payload_vectors() -> list[dict[str, Any]]:
    "Per spec and value (clamped ones included): the bytes drawn and the payload ``[level, oracle payload]``"
    from client_sdk.kinds.quantiles import make_report

    out, seed = [], 50_000
    for data in QUANTILES_SPECS:
        params = load_spec(data).params
        for value in QUANTILES_VALUES:
            seed += 1
            pool = _random_bytes(seed, 1 << 12)
            rng = ByteStreamRandom(pool)
            payload = make_report(rng, params, value)
            out.append({"spec": data, "value": value, "random": pool[:rng.consumed].hex(), "payload": payload})
    return out


def quantiles_shards() -> list[dict[str, Any]]:
    """Distributed quantiles: per spec and value (clamped ones included), the kind's measurement (the bucket), and
    the Prio3 shards of it from the report's nonce and rand (hex), the exact encoded public and input shares"""
    from client_sdk.distributed import ctx_for, vdaf_for
    from client_sdk.kinds.quantiles import prio3_measurement

    out, seed = [], 60_000
    for data in QUANTILES_DISTRIBUTED:
        spec = load_spec(data)
        vdaf = vdaf_for(spec)
        for value in QUANTILES_DISTRIBUTED_VALUES:
            seed += 1
            measurement = prio3_measurement(spec.params, value)
            nonce, rand = _random_bytes(seed, 16), _random_bytes(seed + 1, vdaf.RAND_SIZE)
            public, shares = vdaf.shard(ctx_for(spec), measurement, nonce, rand)
            out.append({"spec": data, "fingerprint": spec.fingerprint, "value": value, "measurement": measurement,
                        "ctx": ctx_for(spec).hex(), "nonce": nonce.hex(), "rand": rand.hex(),
                        "public_share": vdaf.encode_public_share(public).hex(),
                        "input_shares": [vdaf.encode_input_share(share).hex() for share in shares]})
    return out


def documents() -> dict[str, Any]:
    "Every conformance file's content, by its path under conformance/ (a kind's cases in the kind's directory)"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return {"exp.json": exp_cases(),
                "local/specs.json": spec_cases(), "local/payloads.json": payload_vectors(),
                "local/wire.json": wire_cases(),
                "prio3/shards.json": prio3_cases(),
                "prio3/specs.json": spec_cases(budget_shuffle_cases.PRIO3_VALID, budget_shuffle_cases.PRIO3_INVALID),
                **heavy_hitters_documents(), **poplar1_documents(), **repeated_documents(),
                "quantiles/specs.json": quantiles_spec_cases(), "quantiles/payloads.json": quantiles_payload_vectors(),
                "quantiles/shards.json": quantiles_shards()}


def render(content: Any) -> str:
    return json.dumps(content, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    stale = []
    for name, content in documents().items():
        path = HERE / name
        text = render(content)
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print("out of date (run python conformance/generate.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
