// The kind registry (issue 32): a kind from outside the package, registered with registerKind from the public entry,
// loaded on demand, parses its own field and makes reports through the Client, with no edit to sdk-js/src.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, MemoryStore, SpecError, loadKind, loadSpec, registerKind } from "../dist/node.js";
import { fakeCollector, quiet } from "./helpers.mjs";

const SPEC = { name: "sizes", kind: "buckets", epsilon: 1.0, buckets: 4 };
let loads = 0;
registerKind("buckets", () => {
  loads += 1;
  return import("./kinds/buckets-kind.mjs");
});

test("an outside kind loads on demand and validates its own fields, the envelope's by the SDK", async () => {
  assert.throws(() => loadSpec(SPEC), (e) => e instanceof SpecError && e.field === "kind"); // not loaded yet
  await loadKind("buckets");
  const spec = loadSpec(SPEC);
  assert.equal(spec.kind, "buckets");
  assert.match(spec.fingerprint, /^[0-9a-f]{32}$/);
  assert.notEqual(loadSpec({ ...SPEC, buckets: 5 }).fingerprint, spec.fingerprint, "its field is fingerprinted");
  for (const [change, field] of [[{ buckets: 1 }, "buckets"], [{ domain: ["a", "b"] }, "domain"], [{ name: "-x" }, "name"],
    [{ trust: "distributed" }, "trust"], [{ kind: "nope" }, "kind"], [{ expires: "2031-02-29" }, "expires"]]) {
    assert.throws(() => loadSpec({ ...SPEC, ...change }), (e) => e instanceof SpecError && e.field === field, field);
  }
  assert.equal(loads, 1);
});

test("an outside kind's reports go through the Client", async () => {
  const collector = fakeCollector([]);
  const c = new Client({ url: "http://collector.test", apiKey: "k", store: new MemoryStore(), background: false,
    fetch: collector.fetch, specs: [SPEC], logger: quiet });
  const recorded = await c.record("sizes", 2);
  assert.equal(recorded.status, "queued");
  await assert.rejects(async () => c.record("sizes", 9), (e) => e.name === "InvalidValueType");
  const result = await c.flush(5);
  assert.equal(result.sent, 1);
  const [report] = collector.reports.values();
  assert.equal(report.campaign, "sizes");
  assert.equal(report.fingerprint, loadSpec(SPEC).fingerprint);
  assert.ok([0, 1, 2, 3].includes(report.payload.bucket), JSON.stringify(report.payload));
  await c.close();
});
