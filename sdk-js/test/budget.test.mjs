// The spec's budget on the device (client_sdk/budget.py's rule): the ledger refuses a report once the campaign's own
// charges, added up (basic composition), would pass the budget's epsilon or delta, in every store, across restarts.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, MemoryStore, SpecError, loadKind, loadSpec } from "../dist/node.js";
import { BROWSER, fakeCollector, quiet } from "./helpers.mjs";

const made = [];
const tmp = () => made[made.push(mkdtempSync(join(tmpdir(), "ldp-js-budget-"))) - 1];
after(() => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });
const UNCAPPED = { maxReports: null, periodSeconds: null, maxEpsilon: null }; // only the budget caps these reports

function client(spec, extra = {}) {
  return new Client({ url: "http://collector.test", apiKey: "k", fetch: fakeCollector([spec]).fetch, background: false,
    logger: quiet, specs: [spec], policy: UNCAPPED, ...extra });
}

async function statuses(c, campaign, value, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await c.record(campaign, value)).status);
  return out;
}

test("a budget of 2.5 epsilons takes two reports of epsilon 1, and refuses the third, also after a restart", async () => {
  const spec = { ...BROWSER, name: "budgeted", budget: { epsilon: 2.5 } };
  const dir = tmp();
  let c = client(spec, { stateDir: dir });
  assert.deepEqual(await statuses(c, "budgeted", "chrome", 3), ["queued", "queued", "refused_by_policy"]);
  assert.deepEqual(await c.spent("budgeted"), { epsilon: 2, reports: 2, delta: 0 });
  await c.close(0);
  c = client(spec, { stateDir: dir }); // the file store's ledger, replayed
  assert.equal((await c.record("budgeted", "safari")).status, "refused_by_policy");
  await c.close(0);
  const unbudgeted = client({ ...BROWSER, name: "budgeted" }, { stateDir: tmp() });
  assert.deepEqual(await statuses(unbudgeted, "budgeted", "chrome", 3), ["queued", "queued", "queued"], "no budget, no cap");
  await unbudgeted.close(0);
});

test("k charges fit a budget of k epsilons despite rounding (0.1 + 0.1 + 0.1 > 0.3 in floats), the next does not", async () => {
  const spec = { name: "tenth", mechanism: "laplace", epsilon: 0.1, range: [0, 1], budget: { epsilon: 0.3 } };
  assert.ok(0.1 + 0.1 + 0.1 > 0.3);
  const c = client(spec, { store: new MemoryStore() });
  assert.deepEqual(await statuses(c, "tenth", 0.5, 4), ["queued", "queued", "queued", "refused_by_policy"]);
  await c.close(0);
});

test("the budget's delta caps the charges' delta; a local report charges none", async () => {
  // a local campaign's reports are pure epsilon-DP: a budget's delta never refuses them
  const local = client({ ...BROWSER, name: "d", budget: { epsilon: 3, delta: 1e-9 } }, { store: new MemoryStore() });
  assert.deepEqual(await statuses(local, "d", "chrome", 4), ["queued", "queued", "queued", "refused_by_policy"]);
  await local.close(0);
  // the rule itself, as the stores apply it (a distributed report charges its spec's delta: distributed.test.mjs)
  const { exceeds } = await import("../dist/budget.js");
  const budget = { epsilon: 10, delta: 2e-6 };
  assert.equal(exceeds(budget, [1, 1e-6], [1, 1e-6]), false);
  assert.equal(exceeds(budget, [2, 2e-6], [1, 1e-6]), true);
  assert.equal(exceeds({ epsilon: 10, delta: null }, [2, 2e-6], [1, 1e-6]), false);
  assert.equal(exceeds(budget, [9.5, 0], [1, 0]), true);
  assert.equal(exceeds(null, [1e9, 1], [1, 1]), false);
});

test("a spec whose budget is below one report's charge is refused naming budget; the budget enters the fingerprint", async () => {
  await loadKind("prio3");
  assert.throws(() => loadSpec({ ...BROWSER, budget: { epsilon: 0.5 } }), (e) => e instanceof SpecError && e.field === "budget");
  const distributed = { name: "crashed", trust: "distributed", prio3: "count", epsilon: 1, delta: 1e-6, noise: "gaussian" };
  assert.throws(() => loadSpec({ ...distributed, budget: { epsilon: 5, delta: 1e-7 } }), (e) => e.field === "budget");
  const plain = loadSpec(BROWSER).fingerprint;
  assert.equal(loadSpec({ ...BROWSER, budget: null }).fingerprint, plain);
  const fingerprints = new Set([plain, ...[{ epsilon: 5 }, { epsilon: 6 }, { epsilon: 5, delta: 1e-6 }]
    .map((budget) => loadSpec({ ...BROWSER, budget }).fingerprint)]);
  assert.equal(fingerprints.size, 4);
  assert.deepEqual(loadSpec({ ...BROWSER, budget: { epsilon: 5 } }).budget, { epsilon: 5, delta: null });
});
