// Poplar1 shard cost per report in Node against the Python SDK's (issue 36; goal: within 3x), one line of JSON per
// input length and AES primitive:
//   cd sdk-js && npm run build && node bench/poplar1.mjs [--reports N] [--repeat R] [--python ../.venv/bin/python]
//     [--chromium /usr/bin/chromium]
// CPU milliseconds per report (process.cpuUsage), best of --repeat runs of --reports shards with fresh rand and
// nonce from crypto.getRandomValues. With --python, the Python SDK's Poplar1.shard is timed the same way
// (time.process_time, os.urandom) in that interpreter, run from the repository root, and the ratio printed. With
// --chromium, 32-bit shards timed in a headless Chromium page (scripts/browser-poplar1.mjs: the poplar1 chunk as
// browsers load it, @noble/ciphers' AES; wall-clock ms per report, best of 3 runs of --reports).
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { shardPoplar1 } from "../dist/vdaf/poplar1.js";
import { registerAes, webCryptoAes } from "../dist/vdaf/aes.js";
import { nodeAes } from "../dist/vdaf/aesnode.js";
import { nobleAes } from "../dist/vdaf/aesnoble.js";

const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
};
const REPORTS = Number(option("--reports", 300));
const REPEAT = Number(option("--repeat", 3));
const PYTHON = option("--python", null)?.replace(/^.*\/.*$/, (path) => resolve(path)) ?? null; // a path: from here
const BITS = [32, 64, 256];
const ctx = new TextEncoder().encode("ldp-telemetry/v1 benchmark");
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const PYTHON_TIMER = `
import json, os, sys, time
from client_sdk.vdaf import Poplar1
reports, repeat = int(sys.argv[1]), int(sys.argv[2])
out = {}
for bits in map(int, sys.argv[3:]):
    vdaf = Poplar1(bits)
    measurement = [bool(i % 3) for i in range(bits)]
    for _ in range(10):
        vdaf.shard(b"ctx", measurement, os.urandom(16))
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(reports):
            public, shares = vdaf.shard(b"ctx", measurement, os.urandom(16))
            vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares]
        runs.append((time.process_time() - start) * 1000 / reports)
    out[bits] = min(runs)
print(json.dumps(out))
`;
const python = PYTHON === null ? {} : JSON.parse(execFileSync(PYTHON, ["-c", PYTHON_TIMER, String(REPORTS),
  String(REPEAT), ...BITS.map(String)], { cwd: fileURLToPath(new URL("../..", import.meta.url)), encoding: "utf8" }));

for (const primitive of [nodeAes, nobleAes, webCryptoAes]) {
  registerAes(primitive);
  for (const bits of BITS) {
    const measurement = Array.from({ length: bits }, (_, i) => i % 3 !== 0);
    const nonce = new Uint8Array(16);
    for (let i = 0; i < 10; i++) await shardPoplar1(bits, measurement, nonce, null, ctx); // warm-up
    const runs = [];
    let bytes = 0;
    for (let r = 0; r < REPEAT; r++) {
      const start = cpuMs();
      for (let i = 0; i < REPORTS; i++) {
        crypto.getRandomValues(nonce);
        const { publicShare, inputShares } = await shardPoplar1(bits, measurement, nonce, null, ctx);
        bytes = publicShare.length + inputShares[0].length + inputShares[1].length;
      }
      runs.push((cpuMs() - start) / REPORTS);
    }
    const shardMs = Math.min(...runs);
    const line = { bits, aes: primitive.name, shard_ms: Number(shardMs.toFixed(4)), reports: REPORTS, bytes, node: process.version };
    if (python[bits] !== undefined) Object.assign(line, { python_ms: Number(python[bits].toFixed(4)),
      js_over_python: Number((shardMs / python[bits]).toFixed(2)) });
    console.log(JSON.stringify(line));
  }
}

const CHROMIUM = option("--chromium", null);
if (CHROMIUM !== null) {
  const script = fileURLToPath(new URL("../scripts/browser-poplar1.mjs", import.meta.url));
  const { ms, error } = JSON.parse(execFileSync(process.execPath, [script, CHROMIUM, "--bench", String(REPORTS)], { encoding: "utf8" }));
  if (error) throw new Error(error);
  const line = { bits: 32, aes: "noble", runtime: "chromium", shard_ms: Number(ms.toFixed(4)), reports: REPORTS };
  if (python[32] !== undefined) Object.assign(line, { python_ms: Number(python[32].toFixed(4)), js_over_python: Number((ms / python[32]).toFixed(2)) });
  console.log(JSON.stringify(line));
}
