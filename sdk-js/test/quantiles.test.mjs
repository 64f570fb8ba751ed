// The quantiles kind (kinds/quantiles.ts), loaded on demand: byte-identical payloads to the Python SDK's from the
// same random bytes (../conformance/quantiles/payloads.json), and reports through the Client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ByteStreamRandom, Client, InvalidValueType, MemoryStore, SpecError, loadKind, loadSpec, mechanismFromSpec } from "../dist/node.js";
import { fakeCollector, quiet } from "./helpers.mjs";

const cases = JSON.parse(readFileSync(new URL("../../conformance/quantiles/payloads.json", import.meta.url), "utf8"));
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));

test("quantiles: the kind loads on demand, then its payloads are the Python SDK's byte for byte", async () => {
  assert.throws(() => loadSpec(cases[0].spec), (e) => e instanceof SpecError && e.field === "kind"); // not loaded yet
  await loadKind("quantiles");
  assert.ok(cases.length >= 50);
  for (const [i, c] of cases.entries()) {
    const bytes = fromHex(c.random);
    const rng = new ByteStreamRandom(bytes);
    const payload = mechanismFromSpec(loadSpec(c.spec), { rng }).perturb(c.value);
    assert.deepEqual(payload, c.payload, `case ${i} (${c.spec.name}, value ${c.value})`);
    assert.equal(rng.consumed, bytes.length, `case ${i} (${c.spec.name}) consumed`);
  }
  assert.throws(() => mechanismFromSpec(loadSpec(cases[0].spec)).perturb("slow"), InvalidValueType);
});

test("quantiles: reports go through the Client (clamped values too), each a [level, payload] the collector decodes", async () => {
  const spec = cases.find((c) => c.spec.name === "q-latency").spec;
  const collector = fakeCollector([]);
  const c = new Client({ url: "http://collector.test", apiKey: "k", store: new MemoryStore(), background: false,
    fetch: collector.fetch, specs: [spec], logger: quiet, policy: { maxReports: 4 } });
  for (const value of [12.5, 480, 1e9, -3]) assert.equal((await c.record(spec.name, value)).status, "queued");
  assert.equal((await c.record(spec.name, 7)).status, "refused_by_policy"); // the policy caps it as every campaign
  await assert.rejects(async () => c.record(spec.name, "slow"), (e) => e.name === "InvalidValueType");
  assert.equal((await c.flush(5)).sent, 4);
  const height = (await loadKind("quantiles")) && loadSpec(spec).height;
  for (const report of collector.reports.values()) {
    assert.equal(report.fingerprint, loadSpec(spec).fingerprint);
    const [level, [seed, y]] = report.payload;
    assert.ok(level >= 1 && level <= height && /^[0-9a-f]{32}$/.test(seed) && Number.isInteger(y), JSON.stringify(report));
  }
  await c.close();
});
