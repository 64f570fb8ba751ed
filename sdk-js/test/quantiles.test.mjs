// The quantiles kind (kinds/quantiles.ts), loaded on demand: byte-identical payloads to the Python SDK's from the
// same random bytes (../conformance/quantiles/payloads.json), and reports through the Client, each clamp counted in
// the campaign's device state as the Python SDK's state["clamped"].
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ByteStreamRandom, Client, InvalidValueType, MemoryStore, SpecError, loadKind, loadSpec, mechanismFromSpec } from "../dist/node.js";
import { HELPER_URL, LEADER_URL, fakeAggregators, fakeCollector, quiet } from "./helpers.mjs";

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

const shards = JSON.parse(readFileSync(new URL("../../conformance/quantiles/shards.json", import.meta.url), "utf8"));

test("quantiles, trust distributed: parsed once the prio3 kind has loaded, then the Python SDK's buckets and shards", async () => {
  const { ctxFor, shardPrio3 } = await import("../dist/vdaf/index.js");
  const { specNeeds } = await import("../dist/kinds/index.js");
  await loadKind("quantiles");
  const needs = specNeeds(shards[0].spec); // the Prio3 fields are the prio3 kind's to check: it loads first
  assert.equal(typeof needs, "function");
  assert.throws(() => loadSpec(shards[0].spec), (e) => e instanceof SpecError && e.field === "trust");
  await needs();
  assert.equal(specNeeds(shards[0].spec), undefined);
  assert.deepEqual(new Set(shards.map((c) => c.spec.name)), new Set(["qd-uniform", "qd-latency", "qd-laplace"]));
  assert.ok(shards.some((c) => c.value < c.spec.range[0]) && shards.some((c) => c.value > c.spec.range[1]), "clamped values");
  for (const [i, c] of shards.entries()) {
    const where = `case ${i} (${c.spec.name}, value ${c.value})`;
    const spec = loadSpec(c.spec);
    assert.equal(spec.fingerprint, c.fingerprint, `${where}: fingerprint`);
    assert.equal(Buffer.from(ctxFor(spec.fingerprint)).toString("hex"), c.ctx, `${where}: ctx`);
    const reporter = mechanismFromSpec(spec);
    assert.equal(typeof reporter.seal, "function", `${where}: sealed to the aggregators`);
    const measurement = reporter.perturb(c.value);
    assert.equal(measurement, c.measurement, `${where}: the bucket`);
    const { publicShare, inputShares } = shardPrio3(spec.prio3, measurement, fromHex(c.nonce), fromHex(c.rand), ctxFor(spec.fingerprint));
    assert.equal(Buffer.from(publicShare).toString("hex"), c.public_share, `${where}: public share`);
    assert.deepEqual(inputShares.map((s) => Buffer.from(s).toString("hex")), c.input_shares, `${where}: input shares`);
  }
  const spec = loadSpec(shards[0].spec);
  assert.deepEqual(spec.charge(), [1, 1e-6]); // the release's (epsilon, delta), once per batch
  assert.throws(() => mechanismFromSpec(spec).perturb("slow"), InvalidValueType);
  assert.throws(() => mechanismFromSpec(spec).perturb(NaN), (e) => e.name === "InvalidValue");
});

test("quantiles, trust distributed, in the browser bundle: quantiles.js seals through prio3.js, loaded on demand", async () => {
  const bundle = await import("../dist/browser/ldp-telemetry.min.js");
  const browserQuantiles = readFileSync(new URL("../dist/browser/quantiles.js", import.meta.url), "utf8");
  assert.ok(!/from\s*["']\.\/(prio3|vdaf)\.js["']/.test(browserQuantiles), "quantiles.js imports neither prio3.js nor vdaf.js statically");
  await bundle.loadKind("quantiles");
  await bundle.loadKind("prio3");
  const spec = await bundle.fingerprinted(bundle.loadSpec(shards[0].spec));
  assert.equal(spec.fingerprint, shards[0].fingerprint);
  assert.equal(bundle.mechanismFromSpec(spec).perturb(shards[0].value), shards[0].measurement);
});

/** The campaign's clamp count as stored (null: none stored). */
async function clamps(store, campaign) {
  const { stateKey } = await import("../dist/kinds/quantiles.js");
  return JSON.parse(await store.setting(stateKey(campaign)));
}

test("quantiles: a value outside the range is counted in the device state (below and above; inside and the bounds are not), never sent", async () => {
  const spec = cases.find((c) => c.spec.name === "q-latency").spec; // range [1, 60000]
  const collector = fakeCollector([]);
  const store = new MemoryStore();
  const c = new Client({ url: "http://collector.test", apiKey: "k", store, background: false, fetch: collector.fetch,
    specs: [spec], logger: quiet, policy: { maxReports: 8 } });
  const steps = [[480, null], [1, null], [60000, null], [0.5, 1], [1e9, 2], [-Infinity, 3], [Infinity, 4], [59999.5, 4]];
  for (const [value, count] of steps) {
    assert.equal((await c.record(spec.name, value)).status, "queued", `value ${value}`);
    assert.deepEqual(await clamps(store, spec.name), count === null ? null : { clamped: count }, `after ${value}`);
  }
  assert.equal((await c.record(spec.name, -5)).status, "refused_by_policy");
  assert.deepEqual(await clamps(store, spec.name), { clamped: 4 }, "a refused report counts no clamp");
  assert.equal((await c.flush(5)).sent, steps.length);
  for (const report of collector.reports.values()) assert.ok(!JSON.stringify(report).includes("clamped"));
  await c.close();
});

test("quantiles: clamps recorded at once are each counted (the state written with the report, made again if it moved)", async () => {
  const spec = cases.find((c) => c.spec.name === "q-latency").spec;
  const store = new MemoryStore();
  const c = new Client({ url: "http://collector.test", apiKey: "k", store, background: false,
    fetch: fakeCollector([]).fetch, specs: [spec], logger: quiet, policy: { maxReports: null } });
  const values = [-1, 7e4, 3, -2, 8e4, 0];
  const statuses = await Promise.all(values.map((v) => c.record(spec.name, v)));
  assert.deepEqual(statuses.map((r) => r.status), values.map(() => "queued"));
  assert.deepEqual(await clamps(store, spec.name), { clamped: 5 });
  assert.equal((await c.spent(spec.name)).reports, values.length);
  await store.setSetting((await import("../dist/kinds/quantiles.js")).stateKey(spec.name), "not json");
  assert.equal((await c.record(spec.name, -1)).status, "state_error", "a damaged count is kept, nothing queued");
  assert.equal((await c.record(spec.name, 5)).status, "queued", "a value inside the range reads no state");
  await c.close();
});

test("quantiles, trust distributed: a clamped value is counted with its sealed report, below and above the range", async () => {
  await loadKind("quantiles");
  const spec = { ...shards.find((c) => c.spec.name === "qd-laplace").spec, window: "1m" }; // range [-5, 5]
  const fake = await fakeAggregators([spec]);
  let now = 1_700_000_000;
  const store = new MemoryStore();
  const c = new Client({ url: LEADER_URL, apiKey: "k", store, fetch: fake.fetch, background: false, logger: quiet,
    campaigns: [spec.name], aggregators: { helper: HELPER_URL }, clock: () => now });
  assert.ok(await c.prepare());
  const steps = [[2.5, null], [-5, null], [-7, 1], [5, 1], [12, 2], [-1e300, 3], [0, 3]];
  for (const [value, count] of steps) {
    assert.equal((await c.record(spec.name, value)).status, "queued", `value ${value}`);
    assert.deepEqual(await clamps(store, spec.name), count === null ? null : { clamped: count }, `after ${value}`);
    now += 60; // the next batch
  }
  now -= 60;
  assert.equal((await c.record(spec.name, 99)).status, "refused_by_policy", "one report per batch");
  assert.deepEqual(await clamps(store, spec.name), { clamped: 3 }, "a refused report counts no clamp");
  assert.equal((await c.flush(5)).sent, steps.length);
  assert.equal(fake.reports.size, steps.length);
  for (const { payload } of fake.reports.values()) assert.ok(!JSON.stringify(payload).includes("clamped"));
  await c.close();
});
