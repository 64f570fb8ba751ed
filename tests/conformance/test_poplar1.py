"""The poplar1 kind's conformance cases (conformance/poplar1/, made by conformance/generate.py from
client_sdk/kinds/poplar1/): the Python kind reproduces each shard from its bytes and refuses each refused value with
the error the device raises; sdk-js runs the same files (sdk-js/test/conformance-poplar1.test.mjs).  The spec cases
run with every kind's in test_python_sdk.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from client_sdk.distributed import ctx_for, kind_of
from client_sdk.spec import load_spec

ROOT = Path(__file__).resolve().parents[2] / "conformance" / "poplar1"
SHARDS = json.loads((ROOT / "shards.json").read_text(encoding="utf-8"))
REFUSED = json.loads((ROOT / "refused.json").read_text(encoding="utf-8"))


def _value(value: Any) -> Any:
    return bytes.fromhex(value["bytes"]) if isinstance(value, dict) else value


def test_the_cases_cover_each_length_and_a_cut_string() -> None:
    assert {c["spec"]["bits"] for c in SHARDS} == {8, 32, 256}
    assert any(isinstance(c["value"], str) and len(c["value"].encode()) * 8 > c["spec"]["bits"] for c in SHARDS)
    assert {c["error"] for c in REFUSED} == {"InvalidValue", "InvalidValueType"}


@pytest.mark.parametrize("case", SHARDS, ids=lambda c: f"{c['spec']['name']}:{c['value']!r}")
def test_shard(case: dict) -> None:
    spec = load_spec(case["spec"])
    kind = kind_of(spec)
    assert spec.fingerprint == case["fingerprint"] and ctx_for(spec).hex() == case["ctx"]
    measurement = kind.measurement_of(spec, _value(case["value"]))
    assert "".join("1" if bit else "0" for bit in measurement) == case["measurement"]
    vdaf = kind.vdaf_of(spec)
    public, shares = vdaf.shard(ctx_for(spec), measurement, bytes.fromhex(case["nonce"]), bytes.fromhex(case["rand"]))
    assert vdaf.encode_public_share(public).hex() == case["public_share"]
    assert [vdaf.encode_input_share(share).hex() for share in shares] == case["input_shares"]


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: repr(c["value"]))
def test_refused(case: dict) -> None:
    spec = load_spec(case["spec"])
    error = TypeError if case["error"] == "InvalidValueType" else ValueError
    with pytest.raises(error):
        kind_of(spec).measurement_of(spec, _value(case["value"]))
