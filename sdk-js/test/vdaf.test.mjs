// Prio3 sharding against the draft's published test vectors (tests/data/vdaf-test-vectors, draft-irtf-cfrg-vdaf-20):
// from each report's rand, the public share and every input share byte for byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { Field128, XofTurboShake128, prio3Count, prio3Histogram, prio3MultihotCountVec, prio3Sum, prio3SumVec, randSize,
  shardPrio3 } from "../dist/vdaf/index.js";

const DIR = new URL("../../tests/data/vdaf-test-vectors/", import.meta.url);
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const toHex = (bytes) => Buffer.from(bytes).toString("hex");
const FACTORIES = {
  Prio3Count: (v) => prio3Count(v.shares),
  Prio3Sum: (v) => prio3Sum(v.max_measurement, v.shares),
  Prio3SumVec: (v) => prio3SumVec(v.length, v.max_measurement, v.chunk_length, v.shares),
  Prio3Histogram: (v) => prio3Histogram(v.length, v.chunk_length, v.shares),
  Prio3MultihotCountVec: (v) => prio3MultihotCountVec(v.length, v.max_weight, v.chunk_length, v.shares),
};
const vectorFiles = readdirSync(DIR).filter((f) => f.endsWith(".json"));

test("every Prio3 vector with a shard operation is reproduced byte for byte", () => {
  let sharded = 0;
  const kinds = new Set();
  for (const file of vectorFiles.filter((f) => f.startsWith("Prio3"))) {
    const v = JSON.parse(readFileSync(new URL(file, DIR), "utf8"));
    const vdaf = FACTORIES[file.split("_")[0]](v);
    for (const op of v.operations.filter((o) => o.operation === "shard")) {
      const report = v.reports[op.report_index];
      const { publicShare, inputShares } = vdaf.shard(fromHex(v.ctx), report.measurement, fromHex(report.nonce),
        fromHex(report.rand));
      assert.equal(toHex(publicShare), report.public_share, `${file} report ${op.report_index}: public share`);
      assert.deepEqual(inputShares.map(toHex), report.input_shares, `${file} report ${op.report_index}: input shares`);
      sharded++;
      kinds.add(file.split("_")[0]);
    }
  }
  assert.deepEqual([...kinds].sort(), Object.keys(FACTORIES).sort(), "every Prio3 type the collector accepts");
  assert.ok(sharded >= 10, `${sharded} reports sharded`);
});

test("XofTurboShake128 vector: derived seed and expanded Field128 vector", () => {
  const v = JSON.parse(readFileSync(new URL("XofTurboShake128.json", DIR), "utf8"));
  const [seed, dst, binder] = [v.seed, v.dst, v.binder].map(fromHex);
  assert.equal(toHex(XofTurboShake128.deriveSeed(seed, dst, binder)), v.derived_seed);
  const vec = XofTurboShake128.expandIntoVec(Field128, seed, dst, binder, v.length);
  assert.equal(toHex(Field128.encodeVec(vec)), v.expanded_vec_field128);
});

const CTX = new TextEncoder().encode("ldp-telemetry/v1 00112233445566778899aabbccddeeff");
const NONCE = new Uint8Array(16).fill(7);
const PARAMS = {
  count: { type: "count" },
  sum: { type: "sum", max_measurement: 100 },
  sumvec: { type: "sumvec", length: 3, max_measurement: 7, chunk_length: 3 },
  histogram: { type: "histogram", length: 16, chunk_length: 4 },
  multihot: { type: "multihot", length: 4, max_weight: 2, chunk_length: 2 },
  coins: { type: "histogram", length: 4, noise: "coins", coins: 2, chunk_length: 3 },
};

test("a measurement the circuit does not take is refused (TypeError or RangeError), never sharded", () => {
  const bad = [
    ["count", 2, RangeError], ["count", "1", TypeError], ["count", null, TypeError],
    ["sum", 101, RangeError], ["sum", -1, RangeError], ["sum", 1.5, TypeError], ["sum", "3", TypeError],
    ["sumvec", [1, 2], TypeError], ["sumvec", [1, 2, 8], RangeError], ["sumvec", 3, TypeError],
    ["histogram", 16, RangeError], ["histogram", -1, RangeError], ["histogram", 1.5, TypeError], ["histogram", "a", TypeError],
    ["multihot", [true, true, true, false], RangeError], ["multihot", [1, 2, 0, 0], RangeError], ["multihot", [1, "x", 0, 0], TypeError], ["multihot", [true], TypeError],
    ["coins", 4, RangeError], ["coins", [0, [0, 1]], TypeError], ["coins", [0, [0, 1, 2, 0, 0, 0, 0, 0]], RangeError],
  ];
  // RangeError and TypeError are standard errors (the sharder does not depend on the SDK's error classes)
  for (const [kind, measurement, error] of bad) {
    assert.throws(() => shardPrio3(PARAMS[kind], measurement, NONCE, null, CTX), error, `${kind} ${JSON.stringify(measurement)}`);
  }
  for (const [kind, measurement] of [["count", true], ["count", 0], ["sum", 100], ["sum", 0n], ["sumvec", [7, 0, 1]],
    ["histogram", 15], ["multihot", [true, false, false, true]], ["multihot", [0, 0, 0, 0]], ["coins", 3],
    ["coins", [3, [0, 1, 1, 0, 0, 0, 1, 1]]]]) {
    const { inputShares } = shardPrio3(PARAMS[kind], measurement, NONCE, null, CTX);
    assert.equal(inputShares.length, 2, kind);
  }
});

test("parameters and sizes are checked, naming the field", () => {
  assert.throws(() => randSize({ type: "sum" }), /max_measurement/);
  assert.throws(() => randSize({ type: "histogram", length: 0 }), /length/);
  assert.throws(() => randSize({ type: "multihot", length: 4 }), /max_weight/);
  assert.throws(() => randSize({ type: "histogram", length: 4, noise: "coins" }), /coins/);
  assert.throws(() => randSize({ type: "nope" }), /type/);
  assert.throws(() => randSize({ type: "histogram", length: 4, chunk_length: 0 }), /chunk_length/);
  assert.equal(randSize(PARAMS.count), 64);
  assert.equal(randSize(PARAMS.histogram), 128); // joint randomness: a blind per aggregator besides the seeds
  assert.throws(() => shardPrio3(PARAMS.count, true, new Uint8Array(15), null, CTX), /nonce/);
  assert.throws(() => shardPrio3(PARAMS.count, true, NONCE, new Uint8Array(63), CTX), /rand/);
});

test("rand comes from crypto.getRandomValues when not given (never Math.random); given, the shards are a function of it", () => {
  const original = crypto.getRandomValues.bind(crypto);
  const random = Math.random;
  let drawn = 0;
  crypto.getRandomValues = (array) => { drawn += array.byteLength; return original(array); };
  Math.random = () => { throw new Error("Math.random is not a source of randomness here"); };
  try {
    const a = shardPrio3(PARAMS.histogram, 3, NONCE, null, CTX);
    const b = shardPrio3(PARAMS.histogram, 3, NONCE, null, CTX);
    assert.equal(drawn, 2 * randSize(PARAMS.histogram));
    assert.notEqual(toHex(a.inputShares[1]), toHex(b.inputShares[1]));
    assert.notEqual(toHex(a.inputShares[0]), toHex(b.inputShares[0]));
    drawn = 0;
    shardPrio3(PARAMS.coins, 1, NONCE, null, CTX); // the coins too
    assert.equal(drawn, randSize(PARAMS.coins) + 1);
    drawn = 0;
    const rand = new Uint8Array(randSize(PARAMS.histogram)).fill(1);
    const c = shardPrio3(PARAMS.histogram, 3, NONCE, rand, CTX);
    const d = shardPrio3(PARAMS.histogram, 3, NONCE, rand, CTX);
    assert.equal(drawn, 0);
    assert.deepEqual([c.publicShare, ...c.inputShares].map(toHex), [d.publicShare, ...d.inputShares].map(toHex));
  } finally {
    crypto.getRandomValues = original;
    Math.random = random;
  }
});

test("the browser chunk dist/browser/vdaf.js shards the conformance cases to the same bytes", async () => {
  const browser = await import("../dist/browser/vdaf.js");
  const cases = JSON.parse(readFileSync(new URL("../../conformance/prio3/shards.json", import.meta.url), "utf8"));
  for (const c of cases.filter((_, i) => i % 3 === 0)) {
    const { publicShare, inputShares } = browser.shardPrio3(c.prio3, c.measurement, fromHex(c.nonce), fromHex(c.rand),
      browser.ctxFor(c.fingerprint));
    assert.deepEqual([publicShare, ...inputShares].map(toHex), [c.public_share, ...c.input_shares], c.spec.name);
  }
});
