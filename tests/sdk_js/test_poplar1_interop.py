"""The JavaScript SDK's poplar1 reports against the Python VDAF layer: sdk-js's poplar1 kind (sdk-js/src/kinds/
poplar1.ts) shards strings with given random bytes and seals the shares through the distributed envelope; here the
shares are opened with the aggregators' keys under each report's own metadata and compared byte for byte with
the Python poplar1 kind (``client_sdk/kinds/poplar1/``) sharding the same string from the same bytes: its
measurement (``measurement_of``), its Poplar1 instance (``vdaf_of``) and the ctx of the fingerprint
``client_sdk.load_spec`` gives the spec, so a divergence of the two SDKs' spec identity, string encoding or shares
fails here (docs/distributed.md, "The report payload")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from client_sdk import load_spec
from client_sdk.distributed import HELPER, LEADER, b64url, ctx_for, input_share_info, kind_of, report_nonce
from client_sdk.distributed_messages import from_b64url
from client_sdk.vdaf.hpke import HpkeError, HpkeKeyPair, open_sealed

SPEC = {"name": "top_paths", "kind": "poplar1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6, "bits": 32,
        "overflow": "truncate", "threshold": 0.01, "stride": 4, "min_batch": 100}


def _config(pair: HpkeKeyPair) -> dict:
    c = pair.config
    return {"id": c.id, "kem_id": c.kem_id, "kdf_id": c.kdf_id, "aead_id": c.aead_id,
            "public_key": b64url(c.public_key)}


def _run(sdk_js: Path, body: dict, reports: Path) -> dict:
    "scripts/poplar1-reports.mjs on ``body``; past 120 s, the test fails with node's JavaScript stack (its report)"
    node = subprocess.Popen([shutil.which("node") or "node", "--report-on-signal", f"--report-directory={reports}",
                             "scripts/poplar1-reports.mjs"], cwd=sdk_js, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = node.communicate(json.dumps(body), timeout=120)
    except subprocess.TimeoutExpired:
        node.send_signal(signal.SIGUSR2)  # node writes a report: its JavaScript stack, its libuv handles
        time.sleep(3)
        node.kill()
        node.communicate()
        seen = [json.loads(p.read_text()) for p in reports.glob("report.*.json")]  # what it ran, what it awaited
        pytest.fail(f"node did not finish in 120 s: {[(r.get('javascriptStack'), r.get('libuv')) for r in seen]}")
    assert node.returncode == 0, err[-3000:]
    return json.loads(out)


@pytest.mark.parametrize("bits", [8, 32, 256])
def test_javascript_poplar1_reports_are_the_python_shards_of_the_same_bytes(sdk_js: Path, bits: int,
                                                                            tmp_path: Path) -> None:
    spec = {**SPEC, "bits": bits}
    leader, helper = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
    python_spec = load_spec(spec)
    kind = kind_of(python_spec)
    vdaf = kind.vdaf_of(python_spec)
    values: list[str | bytes] = ["/", "/index.html", "naïve/ü", b"\x00\xff\x80binary", "x" * 40, ""]
    cases = [{"value": v if isinstance(v, str) else {"bytes": b64url(v)}, "report_id": str(uuid.uuid4()),
              "batch": "2026-12-02", "rand": b64url(os.urandom(vdaf.RAND_SIZE))} for v in values]
    out = _run(sdk_js, {"spec": spec, "leader": _config(leader), "helper": _config(helper),
                        "cases": cases}, tmp_path)
    assert out["fingerprint"] == python_spec.fingerprint
    named = SimpleNamespace(name=spec["name"], fingerprint=python_spec.fingerprint)
    for value, case, payload in zip(values, cases, out["payloads"], strict=True):
        public, shares = vdaf.shard(ctx_for(python_spec), kind.measurement_of(python_spec, value),
                                    report_nonce(case["report_id"]), from_b64url(case["rand"], "rand"))
        public_share = vdaf.encode_public_share(public)
        assert from_b64url(payload["public_share"], "public_share") == public_share
        assert payload["batch"] == case["batch"]
        for key, role, pair, share in (("leader_share", LEADER, leader, shares[0]),
                                       ("helper_share", HELPER, helper, shares[1])):
            info = input_share_info(named, case["report_id"], role, public_share, case["batch"])
            sealed = from_b64url(payload[key]["ciphertext"], key)
            assert payload[key]["config_id"] == pair.config.id
            assert open_sealed(pair, sealed, info) == vdaf.encode_input_share(share)
            # a share does not open under the other role, nor under another batch (as Prio3's)
            other_role = LEADER + HELPER - role
            with pytest.raises(HpkeError):
                open_sealed(pair, sealed, input_share_info(named, case["report_id"], other_role, public_share,
                                                           case["batch"]))
            with pytest.raises(HpkeError):
                open_sealed(pair, sealed, input_share_info(named, case["report_id"], role, public_share,
                                                           "2026-12-03"))


def test_javascript_poplar1_refuses_what_the_spec_refuses(sdk_js: Path, tmp_path: Path) -> None:
    spec = {**SPEC, "bits": 16, "overflow": "refuse"}
    leader, helper = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
    python_spec = load_spec(spec)
    rand = b64url(os.urandom(kind_of(python_spec).vdaf_of(python_spec).RAND_SIZE))
    cases = [{"value": v, "report_id": str(uuid.uuid4()), "batch": "2026-12-02", "rand": rand}
             for v in ["abc", "\udc00", "ab"]]
    out = _run(sdk_js, {"spec": spec, "leader": _config(leader), "helper": _config(helper),
                        "cases": cases}, tmp_path)
    assert [p.get("error") for p in out["payloads"]] == ["InvalidValue", "InvalidValue", None]
    # the Python kind refuses the same values (ValueError: InvalidValue on the device) and takes the third
    for value in ["abc", "\udc00"]:
        with pytest.raises(ValueError):
            kind_of(python_spec).measurement_of(python_spec, value)
    assert len(kind_of(python_spec).measurement_of(python_spec, "ab")) == 16
