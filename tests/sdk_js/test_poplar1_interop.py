"""Poplar1 reports sharded by the JavaScript SDK (sdk-js/src/vdaf/poplar1.ts, run in Node) are the Python SDK's
byte for byte from the same random bytes, under either AES primitive (node:crypto's ECB, WebCrypto's AES-CBC), and
reports sharded with the device's own randomness verify under the aggregators' Python preparation and count at
every level of the tree exactly where the device's string is."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from client_sdk.vdaf import Poplar1

VERIFY_KEY = bytes(range(32))
CTX = b"ldp-telemetry/v1 poplar1 interop"

SCRIPT = """
import { Poplar1, shardPoplar1 } from "./dist/vdaf/poplar1.js";
import { registerAes, webCryptoAes } from "./dist/vdaf/aes.js";
import { nodeAes } from "./dist/vdaf/aesnode.js";
const { backend, cases, fresh, ctx } = JSON.parse(process.argv[1]);
registerAes(backend === "webcrypto" ? webCryptoAes : nodeAes);
const bytes = (hex) => Uint8Array.from(Buffer.from(hex, "hex"));
const hex = (b) => Buffer.from(b).toString("hex");
const out = (nonce, { publicShare, inputShares }) => ({ nonce: hex(nonce), public_share: hex(publicShare),
  input_shares: inputShares.map(hex) });
const given = [];
for (const c of cases) given.push(out(bytes(c.nonce), await new Poplar1(c.bits).shard(bytes(ctx), c.measurement,
  bytes(c.nonce), bytes(c.rand))));
const own = [];
for (const c of fresh) {
  const nonce = crypto.getRandomValues(new Uint8Array(16));
  own.push(out(nonce, await shardPoplar1(c.bits, c.measurement, nonce, null, bytes(ctx))));
}
console.log(JSON.stringify({ given, own }));
"""


def _run(sdk_js: Path, request: dict) -> dict:
    node = shutil.which("node")
    assert node is not None, "node is not installed"
    done = subprocess.run([node, "--input-type=module", "-e", SCRIPT, json.dumps({**request, "ctx": CTX.hex()})],
                          cwd=sdk_js, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _bits(value: int, width: int) -> list[bool]:
    return [bool(value >> (width - 1 - i) & 1) for i in range(width)]


@pytest.mark.parametrize("backend", ["node", "webcrypto"])
def test_javascript_shards_are_the_python_sdks_bytes_from_the_same_rand(sdk_js: Path, backend: str) -> None:
    rng = random.Random(36)
    cases = []
    for bits in (1, 2, 3, 8, 16, 32, 32, 64, 256):
        vdaf = Poplar1(bits)
        cases.append({"bits": bits, "measurement": _bits(rng.getrandbits(bits), bits),
                      "nonce": rng.randbytes(16).hex(), "rand": rng.randbytes(vdaf.RAND_SIZE).hex()})
    sharded = _run(sdk_js, {"backend": backend, "cases": cases, "fresh": []})["given"]
    for case, report in zip(cases, sharded, strict=True):
        vdaf = Poplar1(case["bits"])
        public, shares = vdaf.shard(CTX, case["measurement"], bytes.fromhex(case["nonce"]),
                                    bytes.fromhex(case["rand"]))
        assert report["public_share"] == vdaf.encode_public_share(public).hex(), case["bits"]
        assert report["input_shares"] == [vdaf.encode_input_share(s).hex() for s in shares], case["bits"]


def _counts(vdaf: Poplar1, report: dict, level: int, prefixes: tuple) -> list[int]:
    "Both aggregators' preparation of one report at (level, prefixes), through the byte encodings; the counts"
    nonce = bytes.fromhex(report["nonce"])
    agg_param = (level, prefixes)
    public = vdaf.decode_public_share(bytes.fromhex(report["public_share"]))
    pairs = [vdaf.verify_init(VERIFY_KEY, CTX, i, agg_param, nonce, public,
                              vdaf.decode_input_share(i, bytes.fromhex(report["input_shares"][i]))) for i in range(2)]
    message = vdaf.verifier_shares_to_message(CTX, agg_param, [share for _, share in pairs])
    second = [vdaf.verify_next(CTX, state, message) for state, _ in pairs]
    assert vdaf.verifier_shares_to_message(CTX, agg_param, [s[1] for s in second]) is None  # the sketch verifies
    outs = [vdaf.verify_next(CTX, state, None) for state, _ in second]
    return vdaf.unshard(agg_param, outs, 1)


def test_javascript_reports_verify_and_count_at_every_level(sdk_js: Path) -> None:
    rng = random.Random(8)
    fresh = [{"bits": bits, "measurement": _bits(rng.getrandbits(bits), bits)} for bits in (1, 5, 12)]
    sharded = _run(sdk_js, {"backend": "node", "cases": [], "fresh": fresh})["own"]
    for case, report in zip(fresh, sharded, strict=True):
        vdaf, alpha = Poplar1(case["bits"]), tuple(case["measurement"])
        for level in range(case["bits"]):
            # the device's prefix, its sibling, and (below the root) a prefix off the device's path
            prefixes = {alpha[:level + 1], alpha[:level] + (not alpha[level],)}
            if level:
                prefixes.add((not alpha[0],) + alpha[1:level + 1])
            ordered = tuple(sorted(prefixes))
            counts = _counts(vdaf, report, level, ordered)
            assert counts == [int(prefix == alpha[:level + 1]) for prefix in ordered], (case["bits"], level)
