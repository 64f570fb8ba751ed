// The language-neutral conformance cases (../conformance/<kind>/*.json, and exp.json every kind shares), generated
// by the Python SDK: the same bytes give the same payload, the same spec the same fingerprint or the same error field.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { ByteStreamRandom, expRounded, loadKind, loadSpec, mechanismFromSpec, SpecError } from "../dist/node.js";
import { checkPayload } from "../dist/wire.js";

const ROOT = new URL("../../conformance/", import.meta.url);
const load = (name) => JSON.parse(readFileSync(new URL(name, ROOT), "utf8"));
/** The kinds whose directory holds ``name`` (a new kind adds its own directory). */
const kindsWith = (name) => readdirSync(ROOT, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(new URL(`${entry.name}/${name}`, ROOT))).map((entry) => entry.name);
const specCases = (part) => kindsWith("specs.json").flatMap((kind) => load(`${kind}/specs.json`)[part]);
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const toHex = (bytes) => Buffer.from(bytes).toString("hex");
for (const kind of kindsWith("specs.json")) await loadKind(kind); // the kinds Node loads on demand (repeated)

test("payload vectors: byte-identical payloads from the same random bytes", () => {
  const cases = load("local/payloads.json");
  assert.ok(cases.length > 50);
  for (const [i, c] of cases.entries()) {
    const bytes = fromHex(c.random);
    const rng = new ByteStreamRandom(bytes);
    const options = { rng };
    if (c.secret) options.secret = fromHex(c.secret);
    const payload = mechanismFromSpec(loadSpec(c.spec), options).perturb(c.value);
    assert.deepEqual(payload, c.payload, `case ${i} (${c.spec.name}, value ${JSON.stringify(c.value)})`);
    assert.equal(rng.consumed, bytes.length, `case ${i} (${c.spec.name}) consumed`);
  }
});

test("valid specs: resolved mechanism, epsilon and fingerprint", () => {
  assert.ok(kindsWith("specs.json").includes("local"));
  for (const c of specCases("valid")) {
    const spec = loadSpec(c.spec);
    assert.deepEqual([spec.mechanism, spec.fingerprint], [c.mechanism, c.fingerprint], c.spec.name);
    // RAPPOR's epsilon_1 is a logarithm (Math.log and libm may differ in the last bit); it is charged to the
    // ledger and bounds-checked, never drawn with nor fingerprinted
    assert.ok(Math.abs(spec.epsilon - c.epsilon) <= 1e-12 * c.epsilon, `${c.spec.name}: epsilon ${spec.epsilon}`);
  }
});

test("invalid specs: the same error and field", () => {
  for (const c of specCases("invalid")) {
    const source = typeof c.spec === "string" ? JSON.stringify(c.spec) : c.spec;
    assert.throws(() => loadSpec(source), (error) => {
      assert.ok(error instanceof SpecError, `${JSON.stringify(c.spec)}: ${error}`);
      assert.equal(error.name, c.error);
      assert.equal(error.field, c.field, JSON.stringify(c.spec));
      return true;
    });
  }
});

test("exp: bit-identical to the Python SDK's exp_rounded", () => {
  for (const [x, y] of load("exp.json")) assert.equal(expRounded(x), y, `exp(${x})`);
});

test("wire format: the payloads each mechanism accepts, and the field named for the others", () => {
  for (const c of load("local/wire.json")) {
    const spec = loadSpec(c.spec);
    if (c.valid) checkPayload(spec, c.payload);
    else assert.throws(() => checkPayload(spec, c.payload), (e) => e.field === c.field, JSON.stringify(c));
  }
});

test("prio3: the project's parameter sets shard to the Python SDK's bytes (conformance/prio3/shards.json)", async () => {
  const { ctxFor, deriveChunkLength, shardPrio3 } = await import("../dist/vdaf/index.js");
  const cases = load("prio3/shards.json");
  assert.deepEqual(new Set(cases.map((c) => c.prio3.type)), new Set(["count", "sum", "sumvec", "histogram", "multihot"]));
  assert.ok(cases.some((c) => c.prio3.noise === "coins"), "the coin variant");
  for (const c of cases) {
    const where = `${c.spec.name} ${JSON.stringify(c.measurement).slice(0, 40)}`;
    assert.equal(deriveChunkLength({ ...c.prio3, chunk_length: null }), c.prio3.chunk_length, `${where}: chunk_length`);
    const ctx = ctxFor(c.fingerprint);
    assert.equal(toHex(ctx), c.ctx, `${where}: ctx`);
    const { publicShare, inputShares } = shardPrio3(c.prio3, c.measurement, fromHex(c.nonce), fromHex(c.rand), ctx);
    assert.equal(toHex(publicShare), c.public_share, `${where}: public share`);
    assert.deepEqual(inputShares.map(toHex), c.input_shares, `${where}: input shares`);
  }
});
