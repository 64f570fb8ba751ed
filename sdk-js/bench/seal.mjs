// A distributed report's device cost in Node (issue 25): shard + HPKE seal of both input shares per report, as
// record() makes it (sealReport: Prio3 from sdk-js/src/vdaf, HPKE on WebCrypto), one campaign per line of JSON:
//   cd sdk-js && npm run build && node bench/seal.mjs [--reports N] [--repeat R]
// CPU milliseconds of this process per report (process.cpuUsage: WebCrypto's worker threads included), best of
// --repeat runs. benchmarks/distributed_seal.py runs it beside the Python SDK's seal_report and prints both.
import { loadMechanism, loadSpec } from "../dist/node.js";
import { encodeValue, sealReport } from "../dist/distributed.js";
import { b64url } from "../dist/distributed/messages.js";

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const REPEAT = arg("--repeat", 3);
const histogram = (length) => ({ name: `h${length}`, trust: "distributed", prio3: "histogram", epsilon: 1.0,
  delta: 1e-6, noise: "gaussian", domain: Array.from({ length }, (_, i) => `v${i}`) });
const CASES = [["Histogram(16)", histogram(16), 1000], ["Histogram(1024)", histogram(1024), 60]];

async function config(id) {
  const pair = await crypto.subtle.generateKey({ name: "X25519" }, true, ["deriveBits"]);
  return { id, kem_id: 0x20, kdf_id: 1, aead_id: 1,
    public_key: b64url(new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey))) };
}
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

await loadMechanism("prio3");
const [leader, helper] = [await config(1), await config(2)];
const batch = new Date().toISOString().slice(0, 10);
for (const [name, source, defaultReports] of CASES) {
  const spec = loadSpec(source);
  const reports = arg("--reports", defaultReports);
  const once = (i) => sealReport(spec, encodeValue(spec, `v${i % spec.domain.length}`), leader, helper,
    crypto.randomUUID(), batch);
  let bytes = 0;
  for (let i = 0; i < Math.min(20, reports); i++) bytes = JSON.stringify(await once(i)).length; // warm-up
  const runs = [];
  for (let r = 0; r < REPEAT; r++) {
    const start = cpuMs();
    for (let i = 0; i < reports; i++) await once(i);
    runs.push((cpuMs() - start) / reports);
  }
  console.log(JSON.stringify({ name, seal_ms: Math.min(...runs), reports, payload_bytes: bytes, node: process.version }));
}
