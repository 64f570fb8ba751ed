// Poplar1 sharding (draft-irtf-cfrg-vdaf-20) against the draft's published vectors (tests/data/vdaf-test-vectors):
// every Poplar1 file's shard outputs from the report's rand, the IDPF's public share from its keys, and
// XofFixedKeyAes128's derived seed and expanded vector, under both AES primitives (WebCrypto and node:crypto).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { Poplar1, shardPoplar1 } from "../dist/vdaf/poplar1.js";
import { IdpfBBCGGI21 } from "../dist/vdaf/idpf.js";
import { Field255, sampleVec } from "../dist/vdaf/field255.js";
import { FixedKeyHasher, XofFixedKeyAes128 } from "../dist/vdaf/xofaes.js";
import { currentAes, registerAes, webCryptoAes } from "../dist/vdaf/aes.js";
import { nodeAes } from "../dist/vdaf/aesnode.js";
import { nobleAes } from "../dist/vdaf/aesnoble.js";
import { Field64, Field128 } from "../dist/vdaf/field.js";

const DIR = new URL("../../tests/data/vdaf-test-vectors/", import.meta.url);
const fromHex = (hex) => Uint8Array.from(Buffer.from(hex, "hex"));
const toHex = (bytes) => Buffer.from(bytes).toString("hex");
const vector = (file) => JSON.parse(readFileSync(new URL(file, DIR), "utf8"));
const files = (prefix) => readdirSync(DIR).filter((f) => f.startsWith(prefix) && f.endsWith(".json"));
const BACKENDS = [nobleAes, webCryptoAes, nodeAes];

async function withAes(primitive, body) {
  const before = currentAes();
  registerAes(primitive);
  try {
    return await body();
  } finally {
    registerAes(before);
  }
}

test("every Poplar1 vector's shard operations are reproduced byte for byte", async () => {
  let sharded = 0;
  for (const primitive of BACKENDS) {
    await withAes(primitive, async () => {
      for (const file of files("Poplar1_")) {
        const v = vector(file);
        const vdaf = new Poplar1(v.bits);
        for (const op of v.operations.filter((o) => o.operation === "shard")) {
          const report = v.reports[op.report_index];
          const where = `${file} report ${op.report_index} (${primitive.name})`;
          if (!op.success) {
            await assert.rejects(vdaf.shard(fromHex(v.ctx), report.measurement, fromHex(report.nonce), fromHex(report.rand)), where);
            continue;
          }
          const { publicShare, inputShares } = await vdaf.shard(fromHex(v.ctx), report.measurement, fromHex(report.nonce),
            fromHex(report.rand));
          assert.equal(toHex(publicShare), report.public_share, `${where}: public share`);
          assert.deepEqual(inputShares.map(toHex), report.input_shares, `${where}: input shares`);
          sharded++;
        }
      }
    });
  }
  assert.ok(sharded >= 2 * 3, `${sharded} reports sharded`);
});

test("every IdpfBBCGGI21 vector's public share is generated from its keys", async () => {
  const vectors = files("IdpfBBCGGI21_");
  assert.ok(vectors.length >= 1);
  for (const primitive of BACKENDS) {
    await withAes(primitive, async () => {
      for (const file of vectors) {
        const v = vector(file);
        const idpf = new IdpfBBCGGI21(v.beta_leaf.length, v.bits);
        const rand = Uint8Array.from([...fromHex(v.keys[0]), ...fromHex(v.keys[1])]);
        const { publicShare, keys } = await idpf.gen(v.alpha, v.beta_inner.map((b) => b.map(BigInt)), v.beta_leaf.map(BigInt),
          fromHex(v.ctx), fromHex(v.nonce), rand);
        assert.equal(toHex(idpf.encodePublicShare(publicShare)), v.public_share, `${file} (${primitive.name})`);
        assert.deepEqual(keys.map(toHex), v.keys);
      }
    });
  }
});

test("XofFixedKeyAes128 vector: derived seed and expanded Field128 vector, under either AES primitive", async () => {
  const v = vector("XofFixedKeyAes128.json");
  const [seed, dst, binder] = [v.seed, v.dst, v.binder].map(fromHex);
  for (const primitive of BACKENDS) {
    assert.equal(toHex(await XofFixedKeyAes128.deriveSeed(seed, dst, binder, primitive)), v.derived_seed, primitive.name);
    const vec = await XofFixedKeyAes128.expandIntoVec(Field128, seed, dst, binder, v.length, primitive);
    assert.equal(toHex(Field128.encodeVec(vec)), v.expanded_vec_field128, primitive.name);
  }
});

test("a stream read in pieces equals the batched blocks, and WebCrypto's and @noble/ciphers' blocks equal node:crypto's", async () => {
  const dst = new TextEncoder().encode("dst");
  const binder = new Uint8Array(16).fill(9);
  const seeds = [new Uint8Array(16).fill(1), Uint8Array.from({ length: 16 }, (_, i) => 255 - i)];
  const [noble, web, node] = await Promise.all(BACKENDS.map((p) => FixedKeyHasher.create(dst, binder, p)));
  const batched = await node.blocks(seeds, 3);
  assert.equal(toHex(await web.blocks(seeds, 3)), toHex(batched));
  assert.equal(toHex(await noble.blocks(seeds, 3)), toHex(batched));
  const xof = await XofFixedKeyAes128.create(seeds[1], dst, binder, nodeAes);
  const pieces = [await xof.next(5), await xof.next(20), await xof.next(23)].map(toHex).join("");
  assert.equal(pieces, toHex(batched.subarray(48, 96)));
  // a stream over the hasher from byte 16 (the IDPF's rejection fallback) continues the same stream
  assert.equal(toHex(await XofFixedKeyAes128.over(node, seeds[0], 16).next(32)), toHex(batched.subarray(16, 48)));
  assert.equal(toHex(await node.blocks(seeds.slice(0, 1), 2, 1)), toHex(batched.subarray(16, 48)));
});

test("Field255: encoding round trip, decode refuses values >= p, sampling masks the top bit and rejects", () => {
  const p = Field255.modulus;
  const values = [0n, 1n, p - 1n, 2n ** 254n + 12345n];
  const encoded = Field255.encodeVec(values);
  assert.equal(encoded.length, 128);
  assert.deepEqual(Field255.decodeVec(encoded), values);
  assert.equal(encoded[0], 0);
  assert.equal(encoded[32], 1);
  assert.throws(() => Field255.decodeVec(Field255.encodeVec([p])), RangeError);
  assert.throws(() => Field255.decodeVec(new Uint8Array(31)), RangeError);
  // a stream: p + 5 with bit 255 set (masked to p + 5: rejected), 2**255 + 3 (masked to 3), then 7
  const chunks = [Field255.encodeVec([p + 5n]), Field255.encodeVec([3n]), Field255.encodeVec([7n])];
  chunks[0][31] |= 0x80;
  chunks[1][31] |= 0x80;
  const stream = Uint8Array.from(chunks.flatMap((c) => [...c]));
  let at = 0;
  const read = (n) => {
    assert.ok(at + n <= stream.length, "read past the end of the stream");
    return stream.slice(at, (at += n));
  };
  assert.deepEqual(sampleVec(Field255, read, 2), [3n, 7n]);
  assert.equal(at, 96);
});

test("a measurement that is not bits-many bits is refused (TypeError or RangeError); rand and nonce sizes checked", async () => {
  const ctx = new TextEncoder().encode("ctx");
  const nonce = new Uint8Array(16);
  const vdaf = new Poplar1(4);
  assert.equal(vdaf.randSize, 128);
  for (const [measurement, error] of [[[true, false, true], TypeError], ["1011", TypeError], [null, TypeError],
    [[1, 0, 2, 0], RangeError], [[true, false, "1", false], RangeError]]) {
    await assert.rejects(shardPoplar1(4, measurement, nonce, null, ctx), error, JSON.stringify(measurement));
  }
  await assert.rejects(vdaf.shard(ctx, [1, 0, 1, 1], new Uint8Array(15), new Uint8Array(128)), RangeError);
  await assert.rejects(vdaf.shard(ctx, [1, 0, 1, 1], nonce, new Uint8Array(127)), RangeError);
  assert.throws(() => new Poplar1(0), RangeError);
  assert.throws(() => new Poplar1(65536), RangeError);
  const a = await shardPoplar1(4, [1, 0, 1, 1], nonce, null, ctx);
  const b = await shardPoplar1(4, [true, false, true, true], nonce, null, ctx);
  assert.notEqual(toHex(a.inputShares[0]), toHex(b.inputShares[0]), "fresh randomness per report");
  assert.equal(a.publicShare.length, 1 + 16 * 4 + 2 * 8 * 3 + 2 * 32);
  assert.equal(a.inputShares[0].length, 16 + 32 + 8 * 2 * 3 + 32 * 2);
  assert.ok(Field64.decodeVec(a.inputShares[1].subarray(48, 96)).every((x) => x < Field64.modulus));
});

test("the main entry points never import the Poplar1 modules but through the poplar1 kind's loader (loaded on demand)", () => {
  const poplar = ["poplar1.js", "idpf.js", "xofaes.js", "aes.js", "aesnode.js", "field255.js"];
  const seen = new Set();
  const lazy = [];
  const visit = (url) => {
    if (seen.has(url.href)) return;
    seen.add(url.href);
    const source = readFileSync(url, "utf8").replace(/\/\*[\s\S]*?\*\//g, ""); // not the imports doc comments show
    for (const [, spec, dynamic] of source.matchAll(/(?:import|export)\s[^"';]*?from\s*["'](\.[^"']+)["']|import\s*\(?\s*["'](\.[^"']+)["']/g)) {
      const path = spec ?? dynamic;
      // the kind registry's loader of the poplar1 kind: the lazily loaded chunk (test/browser-poplar1.test.mjs)
      if (dynamic && url.href.endsWith("/dist/kinds/index.js") && path === "./poplar1.js") {
        lazy.push(path);
        continue;
      }
      if (path) visit(new URL(path, url));
    }
  };
  for (const entry of ["index.js", "node.js", "vdaf/index.js"]) visit(new URL(`../dist/${entry}`, import.meta.url));
  assert.ok([...seen].some((href) => href.endsWith("/dist/numeric.js")), "side-effect imports are followed");
  assert.ok([...seen].some((href) => href.endsWith("/dist/vdaf/prio3.js")), "the Prio3 sharder is walked");
  const reached = [...seen].filter((href) => href.includes("/vdaf/") && poplar.some((name) => href.endsWith(`/vdaf/${name}`)));
  assert.deepEqual(reached, []);
  assert.ok(lazy.length > 0, "the poplar1 kind is registered with a loader");
  const bundle = readFileSync(new URL("../dist/browser/ldp-telemetry.min.js", import.meta.url), "utf8");
  assert.ok(!bundle.includes("aes-128-ecb") && !bundle.includes("AES-CBC"), "no Poplar1 AES in the main bundle");
});
