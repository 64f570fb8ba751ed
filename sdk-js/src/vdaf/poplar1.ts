/** Poplar1 sharding (draft-irtf-cfrg-vdaf-20, section "Poplar1"), the device side, byte for byte as the Python
 * SDK's ``client_sdk/vdaf/poplar1.py`` (whose preparation, aggregation and unsharding the aggregators run): a
 * ``bits``-bit string becomes an IDPF (idpf.ts) programming (1, k) at every level, k the sketch's random
 * authenticator, plus each aggregator's share of the sketch's correlations. Async because XofFixedKeyAes128 may
 * run on WebCrypto (aes.ts); not imported by the main bundle. */
import { Field64 } from "./field.js";
import { Field255, type PrimeField, sampleVec } from "./field255.js";
import { type CorrectionWord, IdpfBBCGGI21, domainSeparationTag } from "./idpf.js";
import { SEED_SIZE, XofTurboShake128 } from "./xof.js";

export const POPLAR1_ALGORITHM_ID = 0x00000006;
export const POPLAR1_NONCE_SIZE = 16;
const USAGE_SHARD_RAND = 1;
const USAGE_CORR_INNER = 2;
const USAGE_CORR_LEAF = 3;

/** The encoded shards of one report: the public share (the IDPF's) and both input shares (the leader's first). */
export interface Poplar1Shards {
  publicShare: Uint8Array;
  inputShares: [Uint8Array, Uint8Array];
}

const mod = (x: bigint, p: bigint): bigint => ((x % p) + p) % p;

/** Poplar1 over ``bits``-bit strings: two aggregators, XofTurboShake128, IdpfBBCGGI21(2, bits). */
export class Poplar1 {
  readonly idpf: IdpfBBCGGI21;
  /** Bytes of randomness one report consumes: the IDPF's two keys, two correlation seeds, the shard seed. */
  readonly randSize: number;

  constructor(readonly bits: number) {
    this.idpf = new IdpfBBCGGI21(2, bits);
    this.randSize = 3 * SEED_SIZE + this.idpf.randSize;
  }

  private dst(usage: number, ctx: Uint8Array): Uint8Array {
    return domainSeparationTag(0, POPLAR1_ALGORITHM_ID, usage, ctx);
  }

  /** Shard ``measurement`` (``bits`` booleans or 0/1, most significant first) with ``rand`` (randSize bytes). */
  async shard(ctx: Uint8Array, measurement: readonly (boolean | number)[], nonce: Uint8Array,
    rand: Uint8Array): Promise<Poplar1Shards> {
    const alpha = this.checkMeasurement(measurement);
    if (nonce.length !== POPLAR1_NONCE_SIZE) throw new RangeError(`nonce must be ${POPLAR1_NONCE_SIZE} bytes, got ${nonce.length}`);
    if (rand.length !== this.randSize) throw new RangeError(`rand must be ${this.randSize} bytes, got ${rand.length}`);
    const bits = this.bits;
    const idpfRand = rand.subarray(0, this.idpf.randSize);
    const rest = rand.subarray(this.idpf.randSize);
    const corrSeeds = [rest.subarray(0, SEED_SIZE), rest.subarray(SEED_SIZE, 2 * SEED_SIZE)];
    const xof = new XofTurboShake128(rest.subarray(2 * SEED_SIZE), this.dst(USAGE_SHARD_RAND, ctx), nonce);
    const read = (n: number): Uint8Array => xof.next(n);

    // each level programs (1, k): the data value and the sketch's random authenticator
    const authInner = sampleVec(Field64, read, bits - 1);
    const authLeaf = sampleVec(Field255, read, 1);
    const { publicShare, keys } = await this.idpf.gen(alpha, authInner.map((k) => [1n, k]), [1n, authLeaf[0]], ctx,
      nonce, idpfRand);

    // (a, b, c) per level, shared through the two correlation seeds; (A, B) shared explicitly
    const offsets = [...this.corrSum(Field64, corrSeeds, USAGE_CORR_INNER, ctx, nonce, 3 * (bits - 1)),
      ...this.corrSum(Field255, corrSeeds, USAGE_CORR_LEAF, ctx, nonce, 3)];
    const helperInner = sampleVec(Field64, read, 2 * (bits - 1));
    const helperLeaf = sampleVec(Field255, read, 2);
    const corr: [bigint[], bigint[]] = [[], []];
    for (let level = 0; level < bits; level++) {
      const p = this.idpf.currentField(level).modulus;
      const k = level < bits - 1 ? authInner[level] : authLeaf[0];
      const [a, b, c] = offsets.slice(3 * level, 3 * level + 3);
      const bigA = mod(k - 2n * a, p);
      const bigB = mod(a * a + b - a * k + c, p);
      const helper = level < bits - 1 ? helperInner.slice(2 * level, 2 * level + 2) : helperLeaf;
      corr[0].push(mod(bigA - helper[0], p), mod(bigB - helper[1], p));
      corr[1].push(...helper);
    }
    const cut = 2 * (bits - 1);
    const encodeInput = (i: 0 | 1): Uint8Array => concat([keys[i], corrSeeds[i], Field64.encodeVec(corr[i].slice(0, cut)),
      Field255.encodeVec(corr[i].slice(cut))]);
    return { publicShare: this.encodePublicShare(publicShare), inputShares: [encodeInput(0), encodeInput(1)] };
  }

  encodePublicShare(publicShare: readonly CorrectionWord[]): Uint8Array {
    return this.idpf.encodePublicShare(publicShare);
  }

  private checkMeasurement(measurement: readonly (boolean | number)[]): boolean[] {
    if (!Array.isArray(measurement) || measurement.length !== this.bits) {
      throw new TypeError(`poplar1: the measurement must be an array of ${this.bits} bits`);
    }
    return measurement.map((bit) => {
      if (typeof bit === "boolean") return bit;
      if (bit === 0 || bit === 1) return bit === 1;
      throw new RangeError(`poplar1: each bit must be true/false or 0/1, got ${JSON.stringify(bit)}`);
    });
  }

  private corrSum(field: PrimeField, seeds: readonly Uint8Array[], usage: number, ctx: Uint8Array, nonce: Uint8Array,
    length: number): bigint[] {
    const dst = this.dst(usage, ctx);
    const [first, second] = [0, 1].map((i) => {
      const xof = new XofTurboShake128(seeds[i], dst, concat([Uint8Array.of(i), nonce]));
      return sampleVec(field, (n) => xof.next(n), length);
    });
    return first.map((x, i) => (x + second[i]) % field.modulus);
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const instances = new Map<number, Poplar1>();

/** The Poplar1 instance for ``bits``-bit inputs (memoized). */
export function poplar1For(bits: number): Poplar1 {
  let vdaf = instances.get(bits);
  if (vdaf === undefined) {
    vdaf = new Poplar1(bits);
    if (instances.size >= 16) instances.clear();
    instances.set(bits, vdaf);
  }
  return vdaf;
}

/** Shard a ``bits``-bit measurement between the leader and the helper. ``rand`` (randSize bytes) defaults to fresh
 * bytes from crypto.getRandomValues; ``nonce`` is the report id's 16 bytes. */
export async function shardPoplar1(bits: number, measurement: readonly (boolean | number)[], nonce: Uint8Array,
  rand: Uint8Array | null | undefined, ctx: Uint8Array): Promise<Poplar1Shards> {
  const vdaf = poplar1For(bits);
  return vdaf.shard(ctx, measurement, nonce, rand ?? crypto.getRandomValues(new Uint8Array(vdaf.randSize)));
}
