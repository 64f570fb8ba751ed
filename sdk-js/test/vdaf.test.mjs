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
