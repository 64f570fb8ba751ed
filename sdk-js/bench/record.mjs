// record() cost in Node for OUE at d = 1,024 (issue 24: at most 0.2 ms median), printed as a table:
//   cd sdk-js && npm ci && npm run bench
// perturb: the randomizer alone (4 KiB from crypto.getRandomValues, 1,024 comparisons, hex packing);
// record(), on the caller: what record() costs the calling code before it returns (validation, perturbation,
// report JSON; the store's write continues asynchronously); record(), durable: until the promise resolves, i.e.
// the report and the ledger charge are appended to the journal and fsynced (one fsync per record here, as each
// record is awaited before the next).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, loadSpec, mechanismFromSpec } from "../dist/node.js";

const SPEC = { name: "oue1024", mechanism: "oue", epsilon: 1.0, domain: Array.from({ length: 1024 }, (_, i) => i) };
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
const quantile = (xs, q) => xs.sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];
const ms = (ns) => Number(ns) / 1e6;

function time(fn, n) {
  for (let i = 0; i < 200; i++) fn(i); // warm-up
  const out = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    fn(i);
    out.push(ms(process.hrtime.bigint() - start));
  }
  return out;
}

const mechanism = mechanismFromSpec(loadSpec(SPEC));
const perturb = time((i) => mechanism.perturb(i % 1024), 5000);

const dir = mkdtempSync(join(tmpdir(), "ldp-bench-"));
const client = new Client({ url: "http://127.0.0.1:9", apiKey: "k", stateDir: dir, specs: [SPEC], background: false,
  policy: { maxReports: null }, queueLimits: { maxReports: 100_000, maxBytes: 64 << 20 }, logger: { warn() {} } });
await client.ready;
const onCaller = [], durable = [];
for (let i = 0; i < 1200; i++) {
  const start = process.hrtime.bigint();
  const pending = client.record("oue1024", i % 1024);
  const returned = process.hrtime.bigint();
  const outcome = await pending;
  const done = process.hrtime.bigint();
  if (outcome.status !== "queued") throw new Error(outcome.status);
  if (i >= 200) {
    onCaller.push(ms(returned - start));
    durable.push(ms(done - start));
  }
}
await client.close(0);
rmSync(dir, { recursive: true, force: true });

const rows = [["perturb (OUE, d = 1024)", perturb], ["record(), on the caller", onCaller], ["record(), durable (fsync)", durable]];
console.log(`| what | median ms | p90 ms | n |\n|---|---|---|---|`);
for (const [name, xs] of rows) console.log(`| ${name} | ${median(xs).toFixed(3)} | ${quantile(xs, 0.9).toFixed(3)} | ${xs.length} |`);
console.log(`\nNode ${process.version}, ${process.platform}/${process.arch}`);
