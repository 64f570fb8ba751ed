"""HPKE interoperability of the JavaScript SDK with the aggregators: input shares sealed by sdk-js (WebCrypto X25519,
HKDF-SHA256, AES-128-GCM, the info built by sdk-js from the report's metadata) open with the aggregators' Python
code and keys, and only under the report's own metadata (fixed ephemeral randomness is not available through
WebCrypto, so the test opens instead of comparing bytes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

import client_sdk
from client_sdk.distributed import HELPER, LEADER, b64url, input_share_info
from client_sdk.vdaf.hpke import HpkeError, HpkeKeyPair, open_sealed

SPEC = client_sdk.load_spec({"name": "apps.v2", "trust": "distributed", "prio3": "histogram", "epsilon": 1.0,
                             "delta": 1e-6, "domain": ["mail", "maps", "chat"], "noise": "gaussian"})


def _seal_in_node(sdk_js: Path, keypair: HpkeKeyPair, cases: list[dict], backend: str = "node") -> list[bytes]:
    from client_sdk.distributed_messages import from_b64url

    body = {"public_key": b64url(keypair.config.public_key),
            "cases": [{**case, "public_share": b64url(case["public_share"]), "plaintext": b64url(case["plaintext"])}
                      for case in cases]}
    flags = ["--webcrypto"] if backend == "webcrypto" else []
    done = subprocess.run([shutil.which("node") or "node", "scripts/seal-shares.mjs", *flags], cwd=sdk_js,
                          input=json.dumps(body), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return [from_b64url(text, "sealed") for text in json.loads(done.stdout)]


def _case(role: int, batch: str | None, plaintext: bytes, public_share: bytes) -> dict:
    return {"campaign": SPEC.name, "fingerprint": SPEC.fingerprint, "report_id": str(uuid.uuid4()), "role": role,
            "batch": batch, "plaintext": plaintext, "public_share": public_share}


@pytest.mark.parametrize("backend", ["node", "webcrypto"])  # node:crypto (Node's entry point), WebCrypto (browsers)
def test_shares_sealed_in_javascript_open_with_the_aggregators_keys(sdk_js: Path, backend: str) -> None:
    keypair = HpkeKeyPair.generate(7)
    cases = [_case(LEADER, "2026-12-01", b"leader share " * 40, b""), _case(HELPER, "2026-12-01", bytes(range(256)),
                                                                            b"\x01" * 64),
             _case(HELPER, None, b"", b"public"), _case(LEADER, "2027-01-31", b"x" * 20_000, bytes(32))]
    sealed = _seal_in_node(sdk_js, keypair, cases, backend)
    assert len({s[:32] for s in sealed}) == len(sealed)  # a fresh ephemeral key per share
    for case, ciphertext in zip(cases, sealed, strict=True):
        info = input_share_info(SPEC, case["report_id"], case["role"], case["public_share"], case["batch"])
        assert open_sealed(keypair, ciphertext, info) == case["plaintext"]


@pytest.mark.parametrize("change", ["report_id", "role", "batch", "public_share", "key"])
def test_a_share_sealed_in_javascript_opens_only_under_its_own_metadata(sdk_js: Path, change: str) -> None:
    "An attacker (leader, network) moves a JS-sealed share to another report, role, batch or key: it does not open"
    keypair, other = HpkeKeyPair.generate(1), HpkeKeyPair.generate(1)
    case = _case(HELPER, "2026-12-01", b"a helper share", b"public share")
    [ciphertext] = _seal_in_node(sdk_js, keypair, [case])
    moved = {"report_id": str(uuid.uuid4()), "role": LEADER, "batch": "2026-12-02", "public_share": b"other share"}
    fields = {**case, **({change: moved[change]} if change in moved else {})}
    info = input_share_info(SPEC, fields["report_id"], fields["role"], fields["public_share"], fields["batch"])
    with pytest.raises(HpkeError):
        open_sealed(other if change == "key" else keypair, ciphertext, info)
    assert open_sealed(keypair, ciphertext, input_share_info(SPEC, case["report_id"], HELPER, case["public_share"],
                                                             case["batch"])) == b"a helper share"


BASE = {"name": "c1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
VALID = [
    {**BASE, "prio3": "count"},
    {**BASE, "prio3": "sum", "max_measurement": 4294967295, "noise": "laplace", "delta": None},
    {**BASE, "prio3": "sum", "max_measurement": 255, "min_batch": 2, "expires": "2030-01-01"},
    {**BASE, "prio3": "histogram", "domain": ["a", "b", 3], "epsilon": 0.3},
    {**BASE, "prio3": "histogram", "domain": [f"v{i}" for i in range(1024)], "delta": 1e-9},
    {**BASE, "prio3": "histogram", "domain": ["x", "y"], "noise": "coins", "coins": 3, "honest_fraction": 0.25},
    {**BASE, "prio3": "histogram", "domain": ["x", "y"], "noise": "coins"},
    {**BASE, "prio3": "sumvec", "length": 7, "max_measurement": 9, "description": "ignored", "version": 3},
    {**BASE, "prio3": "multihot", "domain": ["en", "fr", "de", "es"], "max_weight": 2, "mechanism": "prio3"},
    *({**BASE, "prio3": "count", "window": window} for window in ("1m", "15m", "1h", "12h", "day")),
]
INVALID = [
    ({**BASE, "prio3": "median"}, "prio3"),
    ({**BASE, "prio3": "count", "noise": "coins"}, "noise"),
    ({**BASE, "prio3": "count", "delta": None}, "delta"),
    ({**BASE, "prio3": "sum"}, "max_measurement"),
    ({**BASE, "prio3": "sum", "max_measurement": 2**32}, "max_measurement"),
    ({**BASE, "prio3": "count", "domain": ["a", "b"]}, "domain"),
    ({**BASE, "prio3": "histogram", "domain": ["a", "b"], "range": [0, 1]}, "range"),
    ({**BASE, "prio3": "multihot", "domain": ["a", "b"], "max_weight": 3}, "max_weight"),
    ({**BASE, "prio3": "sumvec", "length": 4096, "max_measurement": 2**20}, "length"),
    ({**BASE, "prio3": "histogram", "domain": ["a"] * 2}, "domain"),
    ({**BASE, "prio3": "count", "honest_fraction": 0.5}, "honest_fraction"),
    ({**BASE, "prio3": "count", "window": "week"}, "window"),
    *(({**BASE, "prio3": "count", "window": window}, "window") for window in ("7m", "60m", "24h", 60, "toString")),
    ({**BASE, "prio3": "count", "mechanism": "oue"}, "mechanism"),
    ({**BASE, "prio3": "count", "epsilon": 25}, "epsilon"),
    ({"name": "local", "mechanism": "oue", "epsilon": 1.0, "domain": ["a", "b"], "prio3": "count"}, "prio3"),
]


def test_distributed_specs_read_as_the_python_sdk_reads_them(sdk_js: Path) -> None:
    "The same fingerprint (so the same Prio3 context and HPKE info) and the same field named for a bad spec"
    from client_sdk.errors import SpecError

    specs = [{k: v for k, v in spec.items() if v is not None} for spec in VALID] + [spec for spec, _ in INVALID]
    done = subprocess.run([shutil.which("node") or "node", "scripts/spec-fingerprints.mjs"], cwd=sdk_js,
                          input=json.dumps(specs), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout)
    for spec, answer in zip(specs[:len(VALID)], answers, strict=False):
        assert answer == {"fingerprint": client_sdk.load_spec(spec).fingerprint}, spec
    for (spec, field), answer in zip(INVALID, answers[len(VALID):], strict=True):
        with pytest.raises(SpecError) as error:
            client_sdk.load_spec(spec)
        assert answer == {"field": error.value.field} == {"field": field}, spec
