// The poplar1 kind in the JS Client (the bytes against Python: tests/sdk_js/test_poplar1_interop.py): the spec's
// fields refused by name, strings encoded as padded bytes, and a recorded string sealed, charged once per UTC day
// and delivered in the distributed envelope, with nothing of the string in the clear.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidValue, InvalidValueType, MemoryStore, SpecError, loadMechanism, loadSpec } from "../dist/node.js";
import { encodePoplar1Value } from "../dist/kinds/poplar1.js";
import { b64url, fromB64url } from "../dist/distributed/messages.js";
import { quiet } from "./helpers.mjs";

const SPEC = { name: "top_paths", kind: "poplar1", trust: "distributed", epsilon: 1.0, delta: 1e-6, bits: 32,
  threshold: 0.01, min_batch: 100 };
const LEADER_URL = "https://leader.test", HELPER_URL = "https://helper.test";

test("a poplar1 spec's fields are checked as the Python kind checks them, each error naming its field", async () => {
  await loadMechanism("poplar1");
  const spec = loadSpec(SPEC);
  assert.deepEqual(spec.params, { bits: 32, overflow: "truncate", threshold: 0.01, stride: 4, min_batch: 100 });
  for (const [change, field] of [[{ bits: 12 }, "bits"], [{ bits: 264 }, "bits"], [{ bits: true }, "bits"],
    [{ threshold: 1 }, "threshold"], [{ threshold: 0 }, "threshold"], [{ stride: 3 }, "stride"], [{ stride: 9 }, "stride"],
    [{ min_batch: 1 }, "min_batch"], [{ min_batch: undefined }, "min_batch"], [{ overflow: "wrap" }, "overflow"],
    [{ overflow: null }, "overflow"], [{ stride: null }, "stride"], [{ delta: undefined }, "delta"],
    [{ epsilon: 0 }, "epsilon"], [{ domain: ["a"] }, "domain"], [{ prio3: "count" }, "prio3"]]) {
    assert.throws(() => loadSpec({ ...SPEC, ...change }), (e) => e instanceof SpecError && e.field === field,
      JSON.stringify(change));
  }
  assert.notEqual(loadSpec({ ...SPEC, stride: 8 }).fingerprint, spec.fingerprint, "the stride is in the identity");
});

test("strings are their UTF-8 bytes, cut or refused at bits / 8 and padded with 0x00, most significant bit first", () => {
  const params = { bits: 24, overflow: "truncate", threshold: 0.1, stride: 8, min_batch: 2 };
  const bytesOf = (bits) => Array.from({ length: bits.length / 8 }, (_, i) =>
    bits.slice(8 * i, 8 * i + 8).reduce((b, bit) => 2 * b + Number(bit), 0));
  assert.deepEqual(bytesOf(encodePoplar1Value(params, "a")), [0x61, 0, 0]);
  assert.deepEqual(bytesOf(encodePoplar1Value(params, "ü/x")), [0xc3, 0xbc, 0x2f]);
  assert.deepEqual(bytesOf(encodePoplar1Value(params, new Uint8Array([1, 2, 3, 4]))), [1, 2, 3]);
  assert.throws(() => encodePoplar1Value({ ...params, overflow: "refuse" }, "abcd"), InvalidValue);
  assert.throws(() => encodePoplar1Value(params, "\ud800"), InvalidValue);
  for (const bad of [5, null, ["a"], { a: 1 }]) assert.throws(() => encodePoplar1Value(params, bad), InvalidValueType);
});

async function hpkeConfig(id) {
  const pair = await crypto.subtle.generateKey({ name: "X25519" }, true, ["deriveBits"]);
  return { id, kem_id: 0x20, kdf_id: 1, aead_id: 1, public_key: b64url(new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey))) };
}

test("a recorded string is sharded, sealed, charged once for the day and delivered in the distributed envelope", async () => {
  await loadMechanism("poplar1");
  const leader = await hpkeConfig(1), helper = await hpkeConfig(2);
  const reports = new Map();
  const fetch = async (url, init = {}) => {
    const { origin, pathname } = new URL(url);
    if (origin === HELPER_URL && pathname === "/v1/hpke_config") return Response.json({ configs: [helper] });
    if (origin === LEADER_URL && pathname === "/v1/campaigns") {
      return Response.json({ campaigns: [{ name: SPEC.name, spec: SPEC, fingerprint: loadSpec(SPEC).fingerprint,
        aggregators: { leader: { hpke_config: leader }, helper: { url: HELPER_URL, hpke_config: helper } } }] });
    }
    if (origin === LEADER_URL && pathname === "/v1/reports") {
      for (const report of JSON.parse(init.body).reports) reports.set(report.report_id, report);
      return Response.json({ accepted: 1, duplicate: 0, rejected: 0, errors: [] });
    }
    return new Response("{}", { status: 404 });
  };
  const c = new Client({ url: LEADER_URL, apiKey: "k", store: new MemoryStore(), fetch, background: false, logger: quiet,
    campaigns: [SPEC.name], aggregators: { helper: HELPER_URL } });
  assert.ok(await c.prepare());
  assert.throws(() => c.record(SPEC.name, 42), InvalidValueType);
  assert.deepEqual(await c.spent(SPEC.name), { epsilon: 0, reports: 0 }, "nothing charged for a refused value");
  const recorded = await c.record(SPEC.name, "/secret/path");
  assert.equal(recorded.status, "queued");
  const day = new Date().toISOString().slice(0, 10);
  assert.deepEqual(await c.spent(SPEC.name), { epsilon: 1, reports: 1, delta: 1e-6, lastBatch: day });
  assert.notEqual((await c.record(SPEC.name, "/other")).status, "queued", "one report per day");
  assert.equal((await c.flush(5)).sent, 1);
  const { payload, fingerprint } = reports.get(recorded.reportId);
  assert.equal(fingerprint, loadSpec(SPEC).fingerprint);
  assert.deepEqual(Object.keys(payload).sort(), ["batch", "helper_share", "leader_share", "public_share"]);
  assert.equal(payload.batch, day);
  assert.ok(fromB64url(payload.public_share).length > 32 * 16, "32 correction words");
  assert.ok(!JSON.stringify(payload).includes("secret"));
  await c.close();
});
