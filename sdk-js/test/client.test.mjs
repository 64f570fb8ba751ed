// The client's contract, as docs/sdk.md states it for the Python SDK: statuses, ledger, consent, delivery rules.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync, existsSync, appendFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, FileStore, InvalidValue, InvalidValueType, loadSpec } from "../dist/node.js";
import { BROWSER, HOME, LOAD, fakeCollector, problemResponse, quiet } from "./helpers.mjs";

const made = []; // state directories, removed when the file's tests are done (the run leaves nothing behind)
const tmp = () => made[made.push(mkdtempSync(join(tmpdir(), "ldp-js-"))) - 1];
after(() => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });
function client(stateDir, collector, extra = {}) {
  return new Client({ url: "http://collector.test", apiKey: "k", stateDir, fetch: collector.fetch, background: false,
    logger: quiet, backoffBase: 0.01, backoffCap: 0.05, ...extra });
}

test("record queues a perturbed report; flush delivers exactly the stored text", async () => {
  const collector = fakeCollector();
  const c = client(tmp(), collector, { specs: [BROWSER] });
  const recorded = await c.record("browser", "firefox");
  assert.equal(recorded.status, "queued");
  assert.ok(recorded.ok && recorded.reportId);
  assert.equal((await c.status()).pending, 1);
  const result = await c.flush(5);
  assert.equal(result.sent, 1);
  assert.equal(result.remaining, 0);
  const sent = collector.reports.get(recorded.reportId);
  assert.deepEqual(Object.keys(sent).sort(), ["campaign", "fingerprint", "payload", "report_id"]);
  assert.equal(sent.fingerprint, loadSpec(BROWSER).fingerprint);
  assert.match(sent.payload, /^[0-9a-f]{2}$/);
  assert.ok(!JSON.stringify(collector.requests).includes("firefox"), "the true value never leaves the device");
  await c.close();
});

test("invalid values throw at once, before anything is charged", async () => {
  const c = client(tmp(), fakeCollector(), { specs: [BROWSER, LOAD] });
  assert.throws(() => c.record("browser", "netscape"), InvalidValue);
  assert.throws(() => c.record("load_ms", "fast"), InvalidValueType);
  assert.throws(() => c.record("load_ms", NaN), InvalidValue);
  assert.throws(() => c.record(7, 1), InvalidValueType);
  assert.deepEqual(await c.spent("browser"), { epsilon: 0, reports: 0 });
  assert.equal((await c.record("browser", "chrome")).status, "queued");
  await c.close();
});

test("the report policy (one a day by default) holds across restarts: the ledger is persistent", async () => {
  const dir = tmp();
  const collector = fakeCollector();
  let c = client(dir, collector, { specs: [BROWSER] });
  assert.equal((await c.record("browser", "chrome")).status, "queued");
  assert.equal((await c.record("browser", "chrome")).status, "refused_by_policy");
  await c.close();
  assert.equal(collector.reports.size, 1, "close() delivered it");
  c = client(dir, collector, { specs: [BROWSER] });
  assert.equal((await c.record("browser", "safari")).status, "refused_by_policy");
  assert.deepEqual(await c.spent("browser"), { epsilon: 1, reports: 1, delta: 0 }); // local reports: pure epsilon
  await c.close();
  const later = client(dir, collector, { specs: [BROWSER], clock: () => Date.now() / 1000 + 86_400 });
  assert.equal((await later.record("browser", "safari")).status, "queued");
  await later.close();
});

test("a maxEpsilon budget refuses once spent; per-campaign policies apply", async () => {
  const c = client(tmp(), fakeCollector(), { specs: [BROWSER, LOAD], policy: { maxReports: null, maxEpsilon: 2.5 },
    policies: { load_ms: { maxReports: 3 } } });
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await c.record("browser", "chrome")).status);
  assert.deepEqual(statuses, ["queued", "queued", "refused_by_policy"]);
  const loads = [];
  for (let i = 0; i < 4; i++) loads.push((await c.record("load_ms", 10 * i)).status);
  assert.deepEqual(loads, ["queued", "queued", "queued", "refused_by_policy"]);
  await c.close();
});

test("upload switched off: no recording, no request, queue deleted; stays off after a restart; ledger kept", async () => {
  const dir = tmp();
  const collector = fakeCollector();
  let c = client(dir, collector, { specs: [BROWSER] });
  await c.record("browser", "chrome");
  await c.setUploadEnabled(false);
  const before = collector.requests.length;
  assert.equal((await c.record("browser", "chrome")).status, "upload_disabled");
  assert.equal((await c.flush(1)).sent, 0);
  const status = await c.status();
  assert.equal(status.pending, 0);
  assert.equal(status.dropped.deleted_upload_disabled, 1);
  await c.close();
  c = client(dir, collector, { specs: [BROWSER] });
  assert.equal((await c.record("browser", "firefox")).status, "upload_disabled");
  await c.prepare();
  assert.equal(collector.requests.length, before, "not one request while uploading is off");
  await c.setUploadEnabled(true);
  assert.equal((await c.record("browser", "chrome")).status, "refused_by_policy", "the ledger was not reset");
  await c.close();
});

test("deleteLocalData removes every file; a later client is a new device", async () => {
  const dir = tmp();
  const c = client(dir, fakeCollector(), { specs: [BROWSER, HOME] });
  await c.record("home", "/about");
  await c.deleteLocalData();
  assert.equal(existsSync(dir), false);
  assert.equal((await c.record("browser", "chrome")).status, "client_closed");
});

test("values recorded before their spec are held in memory, then queued once the spec arrives", async () => {
  const dir = tmp();
  const collector = fakeCollector();
  const c = client(dir, collector);
  assert.equal((await c.record("browser", "safari")).status, "held");
  assert.equal((await c.record("nope", 1)).status, "held");
  assert.equal(existsSync(join(dir, "ldp-telemetry.journal")) && readFileSync(join(dir, "ldp-telemetry.journal"), "utf8").includes("safari"), false);
  const result = await c.flush(5);
  assert.equal(result.sent, 1);
  assert.equal((await c.record("nope", 1)).status, "unknown_campaign");
  assert.deepEqual((await c.status()).unknownCampaigns, ["nope"]);
  await c.close();
});

test("flush waits out a rate-limited listing (429, Retry-After) and delivers the held values", async () => {
  // a public key shared by many devices: the first listings are refused until the key's window passes
  const collector = fakeCollector();
  let refusals = 2;
  collector.answer = (r) => (r.path === "/v1/campaigns" && refusals-- > 0 ? problemResponse(429, { "retry-after": "1" }) : null);
  const c = client(tmp(), collector, { backoffCap: 600 });
  assert.equal(await c.prepare(["browser"]), false);
  assert.equal((await c.record("browser", "safari")).status, "held");
  const once = await c.flush(5, { retry: false }); // no retry: the backoff is not waited out
  assert.equal(once.sent, 0);
  assert.equal(collector.requests.filter((r) => r.path === "/v1/campaigns").length, 1);
  const started = Date.now();
  const result = await c.flush(30);
  assert.equal(result.sent, 1, JSON.stringify(result));
  assert.ok(Date.now() - started >= 1500, "both Retry-Afters were waited out");
  assert.equal(collector.reports.size, 1);
  await c.close();
});

test("a held value stays held when the flush deadline comes before the retry", async () => {
  const collector = fakeCollector();
  collector.answer = (r) => (r.path === "/v1/campaigns" ? problemResponse(429, { "retry-after": "60" }) : null);
  const c = client(tmp(), collector, { backoffCap: 600 });
  assert.equal((await c.record("browser", "safari")).status, "held");
  const started = Date.now();
  const result = await c.flush(1);
  assert.equal(result.sent, 0);
  assert.ok(Date.now() - started < 5000, "did not sleep past the deadline");
  await c.close(0);
});

test("401/403/404/5xx keep the batch and set the condition; Retry-After is honoured", async () => {
  const collector = fakeCollector();
  const conditions = [];
  let now = Date.now() / 1000;
  const c = client(tmp(), collector, { specs: [BROWSER], onCondition: (cond) => conditions.push(cond), backoffCap: 600,
    clock: () => now });
  await c.record("browser", "chrome");
  for (const [status, condition] of [[401, "unauthorized"], [403, "forbidden"], [404, "not_found"], [503, "server_unavailable"], [302, "redirected"], [400, "refused"]]) {
    collector.answer = (r) => (r.path === "/v1/reports" ? problemResponse(status, { "retry-after": "120" }) : null);
    const result = await c.flush(1, { retry: false });
    assert.equal(result.remaining, 1, `HTTP ${status} keeps the report`);
    assert.equal(result.condition, condition);
    const status_ = await c.status();
    assert.ok(status_.retryIn >= 119, `Retry-After honoured after ${status}: ${status_.retryIn}`);
    // a retry inside the backoff sends nothing
    const count = collector.requests.length;
    await c.flush(0.2, { retry: false });
    assert.equal(collector.requests.length, count);
    now += 121; // the test's clock skips the wait
  }
  collector.answer = null;
  const result = await c.flush(5);
  assert.equal(result.sent, 1);
  assert.equal(conditions.at(-1), null);
  await c.close();
});

test("a rejection by name removes only that report; a 2xx that is not the collector's answer removes nothing", async () => {
  const collector = fakeCollector();
  let now = Date.now() / 1000;
  const c = client(tmp(), collector, { specs: [LOAD], policy: { maxReports: null }, clock: () => now });
  const first = await c.record("load_ms", 1);
  await c.record("load_ms", 2);
  collector.answer = () => new Response("<html>captive portal</html>", { status: 200 });
  assert.equal((await c.flush(1, { retry: false })).condition, "unexpected_answer");
  assert.equal((await c.status()).pending, 2);
  collector.answer = (r) => r.path === "/v1/reports"
    ? Response.json({ accepted: 1, duplicate: 0, rejected: 1, errors: [{ report_id: first.reportId, field: "payload", reason: "bad" }] })
    : null;
  now += 1;
  const result = await c.flush(1, { retry: false });
  assert.deepEqual([result.sent, result.rejected, result.remaining], [1, 1, 0]);
  await c.close();
});

test("413 halves the batch until it fits; nothing is dropped", async () => {
  const collector = fakeCollector();
  const c = client(tmp(), collector, { specs: [LOAD], policy: { maxReports: null }, batchSize: 8 });
  for (let i = 0; i < 8; i++) await c.record("load_ms", i);
  collector.answer = (r) => (r.path === "/v1/reports" && JSON.parse(r.body).reports.length > 2 ? new Response("", { status: 413 }) : null);
  const result = await c.flush(5);
  assert.deepEqual([result.sent, result.remaining], [8, 0]);
  const sizes = collector.requests.filter((r) => r.path === "/v1/reports").map((r) => JSON.parse(r.body).reports.length);
  assert.deepEqual(sizes.slice(0, 3), [8, 4, 2]);
  await c.close();
});

test("queue limits drop the oldest reports and count them", async () => {
  const c = client(tmp(), fakeCollector(), { specs: [LOAD], policy: { maxReports: null }, queueLimits: { maxReports: 3 } });
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await c.record("load_ms", i)).reportId);
  const status = await c.status();
  assert.equal(status.pending, 3);
  assert.equal(status.dropped.dropped_count_limit, 2);
  await c.close();
});

test("a write torn by a crash is cut off; other damage is a StateFileError (record returns state_error)", async () => {
  const dir = tmp();
  const offline = { fetch: async () => { throw new TypeError("fetch failed"); } };
  let c = client(dir, offline, { specs: [BROWSER] });
  await c.record("browser", "chrome");
  await c.close();
  const journal = join(dir, "ldp-telemetry.journal");
  appendFileSync(journal, '{"put":{"id":"x"');
  c = client(dir, fakeCollector(), { specs: [BROWSER] });
  assert.equal((await c.status()).pending, 1);
  await c.close();
  writeFileSync(journal, "garbage\n");
  c = client(dir, fakeCollector(), { specs: [BROWSER] });
  assert.equal((await c.record("browser", "chrome")).status, "state_error");
  await c.close();
});

test("RAPPOR: the device secret is stored with the first report and the permanent response never changes", async () => {
  const dir = tmp();
  const collector = fakeCollector();
  const policy = { maxReports: null };
  let c = client(dir, collector, { specs: [HOME], policy });
  await c.record("home", "/about");
  const journal = readFileSync(join(dir, "ldp-telemetry.journal"), "utf8");
  const secret = JSON.parse(journal.split("\n").find((l) => l.startsWith('{"secret"'))).secret;
  assert.equal(secret.length, 64);
  const cohort = [...(await c.flush(5), collector.reports.values())][0].payload.cohort;
  await c.close();
  c = client(dir, collector, { specs: [HOME], policy });
  for (let i = 0; i < 3; i++) await c.record("home", "/about");
  await c.flush(5);
  const cohorts = new Set([...collector.reports.values()].map((r) => r.payload.cohort));
  assert.deepEqual([...cohorts], [cohort], "one cohort per device across restarts");
  assert.ok(!JSON.stringify(collector.requests).includes(secret), "the secret never leaves the device");
  await c.close();
});

test("specs are fetched ahead with one GET and checked against their fingerprint", async () => {
  const collector = fakeCollector();
  const tampered = { ...BROWSER, epsilon: 5.0 };
  collector.answer = (r) => r.path === "/v1/campaigns"
    ? Response.json({ campaigns: [{ name: "browser", spec: tampered, fingerprint: loadSpec(BROWSER).fingerprint }] }) : null;
  const c = client(tmp(), collector, { campaigns: ["browser"], policy: { maxReports: null } });
  assert.equal(await c.prepare(), true);
  assert.equal((await c.record("browser", "chrome")).status, "held", "a spec that does not match its fingerprint is not used");
  collector.answer = null;
  await c.prepare();
  assert.equal((await c.record("browser", "chrome")).status, "queued");
  assert.equal(collector.requests.filter((r) => r.path === "/v1/campaigns").length, 2);
  await c.close();
});

test("a 413 naming the key's max_reports caps the batch at once, and doubling never passes it", async () => {
  const collector = fakeCollector();
  const c = client(tmp(), collector, { specs: [LOAD], policy: { maxReports: null }, batchSize: 16 });
  for (let i = 0; i < 12; i++) await c.record("load_ms", i);
  collector.answer = (r) => (r.path === "/v1/reports" && JSON.parse(r.body).reports.length > 3
    ? problemResponse(413, {}) && Response.json({ title: "too many", field: "reports", max_reports: 3 }, { status: 413 }) : null);
  assert.equal((await c.flush(5)).sent, 12);
  const sizes = collector.requests.filter((r) => r.path === "/v1/reports").map((r) => JSON.parse(r.body).reports.length);
  assert.deepEqual(sizes, [12, 3, 3, 3, 3]);
  await c.close();
});

test("browsers: on pagehide the page's unacknowledged reports go out in keepalive requests within 64 KiB", async () => {
  const listeners = {};
  globalThis.document = { visibilityState: "visible" };
  globalThis.addEventListener = (name, handler) => { listeners[name] = handler; };
  globalThis.removeEventListener = (name) => { delete listeners[name]; };
  try {
    const requests = [];
    const fetch = async (url, init) => {
      requests.push(init);
      if (!init.keepalive) throw new TypeError("offline"); // nothing delivered before the page goes away
      return Response.json({ accepted: 0, duplicate: 0, rejected: 0, errors: [] });
    };
    const c = client(tmp(), { fetch }, { specs: [LOAD, BROWSER], policy: { maxReports: null }, background: true });
    for (let i = 0; i < 600; i++) await c.record("load_ms", i);
    await c.record("browser", "chrome");
    assert.ok(listeners.pagehide && listeners.visibilitychange);
    globalThis.document.visibilityState = "hidden";
    listeners.pagehide();
    const keepalive = requests.filter((r) => r.keepalive);
    assert.equal(keepalive.length, 2, "one request per campaign");
    const bytes = keepalive.reduce((sum, r) => sum + new TextEncoder().encode(r.body).length, 0);
    assert.ok(bytes <= 60_000, `${bytes} bytes`);
    const sent = keepalive.flatMap((r) => JSON.parse(r.body).reports);
    assert.ok(sent.length > 100 && sent.length < 601, `${sent.length} reports`);
    assert.equal((await c.status()).pending, 601, "they stay stored until acknowledged");
    await c.close(0);
    assert.deepEqual(Object.keys(listeners), [], "close() removes the page hooks");
  } finally {
    delete globalThis.document;
    delete globalThis.addEventListener;
    delete globalThis.removeEventListener;
  }
});

test("a failed write (full disk) returns state_error and leaves no charge or report behind", async () => {
  class FullDisk extends FileStore {
    full = false;
    async persist(changes) {
      if (this.full) throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      return super.persist(changes);
    }
  }
  const store = new FullDisk(tmp());
  const c = client(null, fakeCollector(), { specs: [LOAD], store });
  await c.ready;
  store.full = true;
  assert.equal((await c.record("load_ms", 5)).status, "state_error");
  store.full = false;
  assert.deepEqual(await c.spent("load_ms"), { epsilon: 0, reports: 0 }, "the failed record charged nothing");
  assert.equal((await c.status()).pending, 0);
  assert.equal((await c.record("load_ms", 5)).status, "queued", "the day's report is still available");
  await c.close(0);
});

test("one client per state directory: a second one gets state_error until the first closes; a dead owner's lock is taken over", async () => {
  const dir = tmp();
  const first = client(dir, fakeCollector(), { specs: [LOAD] });
  assert.equal((await first.record("load_ms", 1)).status, "queued");
  const second = client(dir, fakeCollector(), { specs: [LOAD] });
  assert.equal((await second.record("load_ms", 2)).status, "state_error", "the ledger is not shared behind its back");
  await second.close(0);
  await first.close(0);
  writeFileSync(join(dir, "ldp-telemetry.lock"), "2147483646"); // a process that does not exist
  const third = client(dir, fakeCollector(), { specs: [LOAD] });
  assert.equal((await third.record("load_ms", 3)).status, "refused_by_policy", "the ledger of the first client");
  await third.close(0);
  assert.equal(existsSync(join(dir, "ldp-telemetry.lock")), false);
});

test("Node: a client with its background timer never keeps the process alive", async () => {
  const { spawnSync } = await import("node:child_process");
  const script = `
    import { Client } from ${JSON.stringify(new URL("../dist/node.js", import.meta.url).href)};
    const c = new Client({ url: "http://127.0.0.1:9", apiKey: "k", stateDir: ${JSON.stringify(tmp())},
      specs: [${JSON.stringify(LOAD)}], logger: { warn() {} } });
    console.log((await c.record("load_ms", 1)).status);`;
  const done = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
  assert.equal(done.status, 0, done.stderr);
  assert.equal(done.stdout.trim(), "queued");
});

test("a listing with a distributed campaign this client does not want loads no distributed code", async () => {
  const distributed = { name: "dist", trust: "distributed", prio3: "count", epsilon: 1.0, noise: "laplace" };
  const collector = fakeCollector([BROWSER]);
  collector.answer = (request) => request.path === "/v1/campaigns" && Response.json({ campaigns: [
    { name: "browser", spec: BROWSER, fingerprint: loadSpec(BROWSER).fingerprint },
    { name: "dist", spec: distributed, fingerprint: "0".repeat(32) }] });
  const c = client(tmp(), collector, { campaigns: ["browser"] });
  assert.ok(await c.prepare());
  assert.throws(() => loadSpec(distributed), (error) => error.field === "trust"); // the module was not loaded
  assert.equal((await c.record("browser", "chrome")).status, "queued");
  await c.close();
});
