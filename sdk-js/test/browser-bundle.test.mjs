// The conformance vectors against the minified browser bundle itself (dist/browser/): what minification and the
// modules loaded on demand do must not change a single payload byte or fingerprint.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const bundle = await import("../dist/browser/ldp-telemetry.min.js");
const load = (name) => JSON.parse(readFileSync(new URL(`../../conformance/${name}`, import.meta.url), "utf8"));
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));

function stream(bytes) {
  const source = { consumed: 0, tokenBytes(n) {
    assert.ok(source.consumed + n <= bytes.length, "the byte stream is exhausted");
    source.consumed += n;
    return bytes.slice(source.consumed - n, source.consumed);
  } };
  return source;
}

test("the browser bundle loads its randomizers on demand and draws byte-identical payloads", async () => {
  await bundle.loadMechanism("rappor");
  await bundle.loadMechanism("piecewise");
  for (const [i, c] of load("local/payloads.json").entries()) {
    const rng = stream(fromHex(c.random));
    const options = { rng, ...(c.secret ? { secret: fromHex(c.secret) } : {}) };
    assert.deepEqual(bundle.mechanismFromSpec(bundle.loadSpec(c.spec), options).perturb(c.value), c.payload, `case ${i}`);
    assert.equal(rng.consumed, c.random.length / 2, `case ${i} consumed`);
  }
});

test("the browser bundle fingerprints with WebCrypto exactly as the Python SDK", async () => {
  for (const c of load("local/specs.json").valid) {
    assert.equal((await bundle.fingerprinted(bundle.loadSpec(c.spec))).fingerprint, c.fingerprint, c.spec.name);
  }
  const tampered = { ...load("local/specs.json").valid[0].spec, fingerprint: "0".repeat(32) };
  await assert.rejects(bundle.fingerprinted(bundle.loadSpec(tampered)), (e) => e.field === "fingerprint");
});
