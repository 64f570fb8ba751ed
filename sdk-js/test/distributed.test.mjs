// Distributed campaigns in the JS Client against a fake leader and helper (the real ones: tests/sdk_js/
// test_distributed_e2e.py): the same ledger (epsilon and delta, one report per batch), policy and statuses as a
// local campaign, and the Python SDK's trust rules for the aggregators (docs/distributed.md).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidValue, InvalidValueType, MemoryStore, fingerprinted, loadSpec } from "../dist/node.js";
import { HELPER_URL, LEADER_URL, fakeAggregators as aggregatorsOf, hpkeConfig, quiet } from "./helpers.mjs";

const APPS = { name: "apps", trust: "distributed", prio3: "histogram", domain: ["mail", "maps", "chat"], epsilon: 1.0,
  delta: 1e-6, noise: "gaussian" };
const SPEND = { name: "spend", trust: "distributed", prio3: "sum", max_measurement: 50, epsilon: 0.5, noise: "laplace" };
const MINUTELY = { name: "minutely", trust: "distributed", prio3: "count", epsilon: 1.0, noise: "laplace", window: "1m" };

const fakeAggregators = () => aggregatorsOf([APPS, SPEND, MINUTELY]);
const client = (fake, extra = {}) => new Client({ url: LEADER_URL, apiKey: "k", store: new MemoryStore(),
  fetch: fake.fetch, background: false, logger: quiet, campaigns: ["apps", "spend"],
  aggregators: { helper: HELPER_URL }, ...extra });
const day = () => new Date().toISOString().slice(0, 10);

test("a distributed record is sealed, queued and delivered; the ledger charges epsilon and delta for the batch", async () => {
  const fake = await fakeAggregators();
  const c = client(fake);
  assert.ok(await c.prepare());
  const recorded = await c.record("apps", "maps");
  assert.equal(recorded.status, "queued");
  assert.deepEqual(await c.spent("apps"), { epsilon: 1, reports: 1, delta: 1e-6, lastBatch: day() });
  assert.equal((await c.flush(5)).sent, 1);
  const { payload, fingerprint } = fake.reports.get(recorded.reportId);
  assert.equal(fingerprint, loadSpec(APPS).fingerprint);
  assert.deepEqual(Object.keys(payload).sort(), ["batch", "helper_share", "leader_share", "public_share"]);
  assert.equal(payload.batch, day());
  assert.equal(payload.leader_share.config_id, 1);
  assert.equal(payload.helper_share.config_id, 2);
  assert.ok(!JSON.stringify(payload).includes("maps"));
  // the helper's config came from the helper itself, without the API key
  const helperAsks = fake.requests.filter((r) => r.origin === HELPER_URL);
  assert.ok(helperAsks.length >= 1 && helperAsks.every((r) => !("Authorization" in r.headers)));
  await c.close();
});

test("a spec has no aggregators field (refused, as by the Python SDK); a listing's cached with it still loads", async () => {
  const block = { helper: { url: HELPER_URL, hpke_config: await hpkeConfig(2) } };
  assert.throws(() => loadSpec({ ...APPS, aggregators: block }), (e) => e.name === "SpecError" && e.field === "aggregators");
  // what the client stores for a listing's item (and stored before this rule): the spec with the block, same fingerprint
  const listed = loadSpec(JSON.stringify({ ...APPS, aggregators: block }), true);
  assert.deepEqual(listed.aggregators, block);
  assert.equal((await fingerprinted(listed)).fingerprint, (await fingerprinted(loadSpec(APPS))).fingerprint);
  const fake = await fakeAggregators();
  const store = new MemoryStore();
  const first = client(fake, { store });
  assert.ok(await first.prepare());
  assert.equal((await first.record("apps", "chat")).status, "queued"); // the helper's configs fetched and kept
  await first.close(0);
  const offline = { fetch: async () => { throw new TypeError("offline"); } };
  const restarted = client(offline, { store }); // from the stored listing alone: its aggregators block included
  const recorded = await restarted.record("spend", 10);
  assert.equal(recorded.status, "queued", JSON.stringify(recorded));
  await restarted.close(0);
});

test("one report per batch: a second value the same day is refused even without a report cap", async () => {
  const fake = await fakeAggregators();
  const c = client(fake, { policy: { maxReports: null } });
  await c.prepare();
  assert.equal((await c.record("spend", 7)).status, "queued");
  assert.equal((await c.record("spend", 8)).status, "refused_by_policy");
  assert.deepEqual(await c.spent("spend"), { epsilon: 0.5, reports: 1, delta: 0, lastBatch: day() });
  await c.close();
});

test("a campaign of 1-minute batches: one report a minute under the default policy, each sealed for its minute", async () => {
  const fake = await fakeAggregators();
  let now = 1_700_000_000; // 2023-11-14 22:13:20 UTC
  const c = client(fake, { clock: () => now, campaigns: ["minutely"] });
  assert.ok(await c.prepare());
  assert.equal((await c.record("minutely", true)).status, "queued");
  now += 39; // 22:13:59: the same batch
  assert.equal((await c.record("minutely", false)).status, "refused_by_policy");
  now += 1; // 22:14:00: the next one
  assert.equal((await c.record("minutely", false)).status, "queued");
  assert.deepEqual(await c.spent("minutely"), { epsilon: 2, reports: 2, delta: 0, lastBatch: "2023-11-14T22:14Z" });
  const queued = await c.store.peek("minutely", 10, 1e9);
  assert.deepEqual(queued.map((r) => JSON.parse(r.text).payload.batch).sort(), ["2023-11-14T22:13Z", "2023-11-14T22:14Z"]);
  await c.close();
  const daily = client(fake, { clock: () => now, campaigns: ["minutely"], policy: { periodSeconds: 86_400 } });
  await daily.prepare();
  assert.equal((await daily.record("minutely", true)).status, "queued");
  now += 60;
  assert.equal((await daily.record("minutely", true)).status, "refused_by_policy"); // its own period: a day
  await daily.close();
});

test("values outside the spec throw at once, before anything is charged", async () => {
  const fake = await fakeAggregators();
  const c = client(fake);
  await c.prepare();
  assert.throws(() => c.record("spend", 51), InvalidValue);
  assert.throws(() => c.record("spend", 1.5), InvalidValueType);
  assert.throws(() => c.record("apps", "fax"), InvalidValue);
  assert.deepEqual(await c.spent("spend"), { epsilon: 0, reports: 0 });
  await c.close();
});

test("without configured aggregators nothing is sealed, charged or queued", async () => {
  const fake = await fakeAggregators();
  const c = client(fake, { aggregators: undefined });
  await c.prepare();
  assert.equal((await c.record("apps", "mail")).status, "aggregators_not_configured");
  assert.deepEqual(await c.spent("apps"), { epsilon: 0, reports: 0 });
  assert.equal((await c.status()).pending, 0);
  await c.close();
});

// the leader playing the attacker: its listing names another helper, or a key of its own as the helper's
for (const [what, listedHelper] of [
  ["another helper URL", async (fake) => ({ url: "https://evil.test", hpke_config: fake.helper })],
  ["the leader's own key as the helper's", async (fake) => ({ url: HELPER_URL, hpke_config: { ...fake.leader, id: 2 } })],
  ["a key the helper does not publish", async () => ({ url: HELPER_URL, hpke_config: await hpkeConfig(2) })],
]) {
  test(`a leader listing ${what} gets no report (aggregator_mismatch, nothing charged)`, async () => {
    const fake = await fakeAggregators();
    const listed = await listedHelper(fake);
    fake.listedHelper = () => listed;
    const c = client(fake);
    await c.prepare();
    assert.equal((await c.record("apps", "chat")).status, "aggregator_mismatch");
    assert.deepEqual(await c.spent("apps"), { epsilon: 0, reports: 0 });
    assert.equal((await c.status()).pending, 0);
    await c.close();
  });
}

test("a pinned helper config is used instead of fetching, and must match the listing", async () => {
  const fake = await fakeAggregators();
  const pinned = client(fake, { aggregators: { helper: { hpke_config: fake.helper } } });
  await pinned.prepare();
  assert.equal((await pinned.record("apps", "mail")).status, "queued");
  assert.equal(fake.requests.filter((r) => r.origin === HELPER_URL).length, 0);
  const other = client(fake, { aggregators: { helper: { hpke_config: await hpkeConfig(2) } } });
  await other.prepare();
  assert.equal((await other.record("apps", "mail")).status, "aggregator_mismatch");
});

test("a value recorded while the helper does not answer waits in memory, then is sealed", async () => {
  const fake = await fakeAggregators();
  fake.helperUp = false;
  const c = client(fake);
  await c.prepare();
  assert.equal((await c.record("apps", "mail")).status, "held");
  assert.deepEqual(await c.spent("apps"), { epsilon: 0, reports: 0 });
  fake.helperUp = true;
  const result = await c.flush(5);
  assert.equal(result.sent, 1);
  assert.equal((await c.status()).recorded.held_queued, 1);
  await c.close();
});

test("values waiting for the helper's config are bounded by maxHeld, as values waiting for their spec", async () => {
  const fake = await fakeAggregators();
  fake.helperUp = false;
  const c = client(fake, { maxHeld: 2 });
  await c.prepare();
  assert.equal((await c.record("apps", "mail")).status, "held");
  assert.equal((await c.record("apps", "chat")).status, "held");
  assert.equal((await c.record("apps", "maps")).status, "spec_unavailable");
  fake.helperUp = true;
  assert.equal((await c.flush(5)).sent, 1); // one report per batch: the first held value; the second is refused
  await c.close();
});

test("the aggregators option is checked as in the Python SDK (https, or http to loopback only)", async () => {
  const fake = await fakeAggregators();
  for (const [aggregators, field] of [
    [{ helper: "http://helper.example" }, /aggregators.helper.url/],
    [{ helper: "https://helper.test/?x=1" }, /aggregators.helper.url/],
    [{ leader: { url: "https://other.test" }, helper: HELPER_URL }, /aggregators.leader.url/],
    [{ helper: { hpke_config: { id: 1 } } }, /aggregators.helper.hpke_config/],
    [{ nobody: HELPER_URL }, /aggregators/],
  ]) {
    const c = client(fake, { aggregators });
    await c.prepare();
    await assert.rejects(c.record("apps", "mail"), field);
    await c.close();
  }
  const loopback = client(fake, { url: "http://127.0.0.1:9", aggregators: { helper: "http://localhost:8001" } });
  await loopback.close();
});

test("the helper's configs are kept in the store: a restarted device seals while the helper is unreachable", async () => {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { FileStore } = await import("../dist/node.js");
  const dir = mkdtempSync(join(tmpdir(), "ldp-js-dist-"));
  const { rmSync } = await import("node:fs");
  after(() => rmSync(dir, { recursive: true, force: true })); // the run leaves nothing behind
  const fake = await fakeAggregators();
  const first = client(fake, { store: new FileStore(dir) });
  await first.prepare();
  assert.equal((await first.record("apps", "mail")).status, "queued");
  await first.close(0);
  fake.helperUp = false;
  const again = client(fake, { store: new FileStore(dir), policy: { maxReports: null } });
  await again.prepare();
  assert.equal((await again.record("spend", 3)).status, "queued"); // sealed with the kept config
  assert.ok(fake.requests.some((r) => r.origin === HELPER_URL && r.path === "/v1/hpke_config"));
  await again.close(0);
  // kept for another helper URL, it is not used
  const other = client(fake, { store: new FileStore(dir), aggregators: { helper: "https://helper2.test" } });
  await other.prepare();
  assert.equal((await other.record("spend", 3)).status, "held");
  await other.close(0);
});
