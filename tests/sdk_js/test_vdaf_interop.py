"""Reports sharded by the JavaScript SDK's Prio3 (sdk-js/src/vdaf, run in Node) verify under the Python Prio3 the
aggregators run: honest ones are accepted and aggregate to their measurement, and a JavaScript client that shards a
tampered encoded measurement (``Prio3.shardEncoded``, skipping validation: a malicious client) is rejected; the
packed npm package exports the sharder as ``ldp-telemetry/vdaf``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from client_sdk.distributed import vdaf_for
from client_sdk.spec import load_spec
from client_sdk.vdaf import Prio3, VerifyError

VERIFY_KEY = bytes(range(32))
CTX = b"ldp-telemetry/v1 interop"
DP = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
SPECS = {
    "count": {"name": "c", "trust": "distributed", "prio3": "count"},
    "sum": {"name": "s", "trust": "distributed", "prio3": "sum", "max_measurement": 1000},
    "sumvec": {"name": "v", "trust": "distributed", "prio3": "sumvec", "length": 3, "max_measurement": 7},
    "histogram": {"name": "h", "trust": "distributed", "prio3": "histogram", "domain": list(range(16))},
    "multihot": {"name": "m", "trust": "distributed", "prio3": "multihot", "domain": list(range(6)), "max_weight": 2},
    "coins": {"name": "k", "trust": "distributed", "prio3": "histogram", "domain": list(range(4)), "noise": "coins",
              "coins": 2},
}
# (spec, measurement as JavaScript takes it, the aggregate of that one report)
HONEST = [
    ("count", True, [1]), ("count", False, [0]),
    ("sum", 0, [0]), ("sum", 1000, [1000]), ("sum", 613, [613]),
    ("sumvec", [7, 0, 5], [7, 0, 5]),
    ("histogram", 0, [1] + [0] * 15), ("histogram", 15, [0] * 15 + [1]),
    ("multihot", [True, False, False, False, False, True], [1, 0, 0, 0, 0, 1]),
    ("multihot", [False] * 6, [0] * 6),
    ("coins", 3, None),  # coin bits from crypto.getRandomValues: only the bucket part is known
]
# (spec, an invalid encoded measurement): what a malicious client would send
TAMPERED = [
    ("count", [2]),
    ("sum", [2] + [0] * 9),
    ("sumvec", [1, 1, 2] + [0] * 6),
    ("histogram", [1, 1] + [0] * 14),  # two buckets
    ("histogram", [0] * 16),  # none
    ("histogram", [2] + [0] * 15),
    ("multihot", [1, 1, 1, 0, 0, 0, 1, 0]),  # weight 3 claimed as 2 (max_weight 2)
    ("coins", [0, 0, 1, 0] + [0, 1, 2, 0, 0, 0, 0, 0]),  # a coin of 2
]

SCRIPT = """
import { prio3For, shardPrio3 } from "./dist/vdaf/index.js";
const { honest, tampered, ctx } = JSON.parse(process.argv[1]);
const hex = (b) => Buffer.from(b).toString("hex");
const ctxBytes = Buffer.from(ctx, "hex");
const out = (nonce, { publicShare, inputShares }) => ({ nonce: hex(nonce), public_share: hex(publicShare),
  input_shares: inputShares.map(hex) });
const fresh = (n) => crypto.getRandomValues(new Uint8Array(n));
console.log(JSON.stringify({
  honest: honest.map(([params, measurement]) => {
    const nonce = fresh(16);
    return out(nonce, shardPrio3(params, measurement, nonce, null, ctxBytes));
  }),
  tampered: tampered.map(([params, encoded]) => {
    const vdaf = prio3For(params);
    const nonce = fresh(16);
    return out(nonce, vdaf.shardEncoded(ctxBytes, encoded, nonce, fresh(vdaf.randSize)));
  }),
}));
"""


def _params(kind: str) -> dict:
    params = load_spec({**DP, **SPECS[kind]}).prio3
    assert params is not None
    return {key: getattr(params, key) for key in ("type", "length", "max_measurement", "max_weight", "chunk_length",
                                                  "noise", "coins")}


def _verify(vdaf: Prio3, report: dict) -> list[int]:
    "Both aggregators' verification as the leader and helper run it; the aggregate of the report's output shares"
    nonce = bytes.fromhex(report["nonce"])
    public = vdaf.decode_public_share(bytes.fromhex(report["public_share"]))
    pairs = [vdaf.verify_init(VERIFY_KEY, CTX, agg_id, nonce, public,
                              vdaf.decode_input_share(agg_id, bytes.fromhex(share)))
             for agg_id, share in enumerate(report["input_shares"])]
    message = vdaf.verifier_shares_to_message(CTX, [verifier for _, verifier in pairs])
    return vdaf.merge([vdaf.verify_next(CTX, state, message) for state, _ in pairs])


@pytest.fixture(scope="module")
def sharded(sdk_js: Path) -> dict:
    node = shutil.which("node")
    assert node is not None, "node is not installed"
    request = {"ctx": CTX.hex(), "honest": [[_params(k), m] for k, m, _ in HONEST],
               "tampered": [[_params(k), e] for k, e in TAMPERED]}
    done = subprocess.run([node, "--input-type=module", "-e", SCRIPT, json.dumps(request)], cwd=sdk_js,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_honest_javascript_reports_verify_and_aggregate_to_their_measurement(sharded: dict) -> None:
    for (kind, measurement, expected), report in zip(HONEST, sharded["honest"], strict=True):
        vdaf = vdaf_for(load_spec({**DP, **SPECS[kind]}))
        aggregate = _verify(vdaf, report)
        if expected is None:  # coins: the one-hot part, then the coins (each 0 or 1)
            assert aggregate[:4] == [int(i == measurement) for i in range(4)]
            assert set(aggregate[4:]) <= {0, 1}
        else:
            assert vdaf.unshard([aggregate], 1) == (expected[0] if kind in ("count", "sum") else expected), kind


def test_tampered_javascript_reports_are_rejected(sharded: dict) -> None:
    "Acts as a malicious JavaScript client: the proof of an invalid measurement fails the aggregators' check"
    for (kind, encoded), report in zip(TAMPERED, sharded["tampered"], strict=True):
        vdaf = vdaf_for(load_spec({**DP, **SPECS[kind]}))
        assert len(encoded) == vdaf.flp.MEAS_LEN, kind
        with pytest.raises(VerifyError):
            _verify(vdaf, report)


def test_packed_sdk_shards_through_its_vdaf_export(sdk_js: Path, tmp_path: Path) -> None:
    """The published shape: ``npm pack``, installed with the optional peer @noble/hashes, and
    ``ldp-telemetry/vdaf`` imported by name shards a conformance case to the Python SDK's bytes.

    Both are installed from tarballs, the peer packed from the copy ``npm ci`` installed from the lock file:
    ``npm install --offline @noble/hashes@VERSION`` needs the package's metadata in npm's cache, which ``npm ci``
    never puts there (it fetches the lock file's tarballs), so it failed on every fresh machine."""
    from .conftest import run_npm

    npm = shutil.which("npm") or "npm"
    packed = [tmp_path / run_npm("pack", "--pack-destination", str(tmp_path), *source).stdout.strip().splitlines()[-1]
              for source in ((), (str(sdk_js / "node_modules" / "@noble" / "hashes"),))]
    noble = json.loads((sdk_js / "package.json").read_text())["devDependencies"]["@noble/hashes"]
    assert packed[1].name == f"noble-hashes-{noble}.tgz"  # the version the lock file pins
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "version": "1.0.0", "type": "module"}')
    installed = subprocess.run([npm, "install", "--offline", "--no-audit", "--no-fund", *map(str, packed)], cwd=app,
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    case = json.loads((sdk_js.parent / "conformance" / "prio3" / "shards.json").read_text())[-1]
    (app / "main.js").write_text("""
import { ctxFor, shardPrio3 } from "ldp-telemetry/vdaf";
const c = JSON.parse(process.argv[2]);
const bytes = (hex) => Buffer.from(hex, "hex");
const { publicShare, inputShares } = shardPrio3(c.prio3, c.measurement, bytes(c.nonce), bytes(c.rand),
  ctxFor(c.fingerprint));
console.log(JSON.stringify([publicShare, ...inputShares].map((b) => Buffer.from(b).toString("hex"))));
""")
    ran = subprocess.run([shutil.which("node") or "node", "main.js", json.dumps(case)], cwd=app, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout) == [case["public_share"], *case["input_shares"]]


def test_rejection_sampling_reads_the_xof_stream_as_python_does(sdk_js: Path) -> None:
    """Field elements >= the modulus are dropped and the stream read on: with Field64 and Field128 that happens once
    in 2**32 and 2**59 draws (never in the vectors), so a modulus of 3/4 * 2**64 plays it here, in both SDKs"""
    from client_sdk.vdaf.field import Field
    from client_sdk.vdaf.xof import XofTurboShake128

    class Toy(Field):
        MODULUS = 3 << 62
        ENCODED_SIZE = 8

    seed, dst, binder = bytes(range(32)), b"toy field", b"\x01"
    script = """
import { Field, XofTurboShake128 } from "./dist/vdaf/index.js";
const toy = new Field("Toy", 3n << 62n, 8, 1n, 1n, 1n);
const [seed, dst, binder] = process.argv.slice(1, 4).map((hex) => Buffer.from(hex, "hex"));
console.log(JSON.stringify(XofTurboShake128.expandIntoVec(toy, seed, dst, binder, 200).map(String)));
"""
    done = subprocess.run([shutil.which("node") or "node", "--input-type=module", "-e", script, seed.hex(), dst.hex(),
                           binder.hex()], cwd=sdk_js, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = XofTurboShake128.expand_into_vec(Toy, seed, dst, binder, 200)
    assert [int(x) for x in json.loads(done.stdout)] == expected
    read = XofTurboShake128(seed, dst, binder).next(8 * 200)
    assert sum(int.from_bytes(read[i:i + 8], "little") >= Toy.MODULUS for i in range(0, len(read), 8)) > 20
