/** The incremental distributed point function of BBCGGI21 (draft-irtf-cfrg-vdaf-20, section "IDPF Specification",
 * ``IdpfBBCGGI21``), key generation only (devices generate; the aggregators' evaluation is the Python SDK's
 * ``client_sdk/vdaf/idpf.py``): two keys whose evaluations at a node of a binary tree of depth ``bits`` are
 * additive shares of ``beta[level]`` on the path to ``alpha`` and of zero elsewhere. Inner levels carry Field64
 * values (extended and converted with XofFixedKeyAes128), the leaves Field255 (with XofTurboShake128). Seeds are
 * 16-byte arrays; the integer the draft reads from them is little-endian, so its low bit is bit 0 of byte 0. */
import { Field64 } from "./field.js";
import { Field255, type PrimeField, sampleVec } from "./field255.js";
import { FixedKeyHasher, XofFixedKeyAes128 } from "./xofaes.js";
import { XofTurboShake128 } from "./xof.js";

export const IDPF_KEY_SIZE = 16;
const VERSION = 18;

/** One level of the public share: the seed correction, the two control-bit corrections, the value correction. */
export interface CorrectionWord {
  seed: Uint8Array;
  ctrl: [boolean, boolean];
  payload: bigint[];
}

/** VERSION || algorithm class || algorithm id (uint32) || usage (uint16), big-endian, then ctx. */
export function domainSeparationTag(algoClass: number, algo: number, usage: number, ctx: Uint8Array): Uint8Array {
  const dst = new Uint8Array(8 + ctx.length);
  const view = new DataView(dst.buffer);
  dst[0] = VERSION;
  dst[1] = algoClass;
  view.setUint32(2, algo);
  view.setUint16(6, usage);
  dst.set(ctx, 8);
  return dst;
}

function xor(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i];
  return out;
}

/** A 16-byte block as (seed with its low bit cleared, that bit). */
function splitControl(block: Uint8Array): [Uint8Array, boolean] {
  const seed = block.slice(0, 16);
  const bit = (seed[0] & 1) === 1;
  seed[0] &= 0xfe;
  return [seed, bit];
}

interface Hashers {
  extendDst: Uint8Array;
  convertDst: Uint8Array;
  nonce: Uint8Array;
  extend: FixedKeyHasher;
  convert: FixedKeyHasher;
}

export class IdpfBBCGGI21 {
  static readonly SHARES = 2;
  static readonly NONCE_SIZE = 16;
  readonly randSize = 2 * IDPF_KEY_SIZE;

  constructor(readonly valueLen: number, readonly bits: number) {
    for (const [name, value] of [["valueLen", valueLen], ["bits", bits]] as const) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
    }
    if (bits > 0xffff) throw new RangeError("bits must be at most 65535 (the aggregation parameter's level is a uint16)");
  }

  currentField(level: number): PrimeField {
    return level < this.bits - 1 ? Field64 : Field255;
  }

  /** The public share and the two keys (rand's two halves) programming ``beta`` on the path to ``alpha``. */
  async gen(alpha: readonly boolean[], betaInner: readonly (readonly bigint[])[], betaLeaf: readonly bigint[],
    ctx: Uint8Array, nonce: Uint8Array, rand: Uint8Array): Promise<{ publicShare: CorrectionWord[]; keys: [Uint8Array, Uint8Array] }> {
    if (alpha.length !== this.bits) throw new RangeError(`alpha must be a sequence of ${this.bits} bits`);
    if (betaInner.length !== this.bits - 1) throw new RangeError("incorrect beta_inner length");
    if (rand.length !== this.randSize) throw new RangeError("incorrect rand size");
    if (nonce.length !== IdpfBBCGGI21.NONCE_SIZE) throw new RangeError("incorrect nonce size");
    const keys: [Uint8Array, Uint8Array] = [rand.slice(0, IDPF_KEY_SIZE), rand.slice(IDPF_KEY_SIZE)];
    const extendDst = domainSeparationTag(1, 0, 0, ctx);
    const convertDst = domainSeparationTag(1, 0, 1, ctx);
    const [extend, convert] = await Promise.all([FixedKeyHasher.create(extendDst, nonce), FixedKeyHasher.create(convertDst, nonce)]);
    const hashers: Hashers = { extendDst, convertDst, nonce, extend, convert };
    let seeds = [keys[0], keys[1]];
    const ctrl = [false, true];
    const publicShare: CorrectionWord[] = [];
    for (let level = 0; level < this.bits; level++) {
      const bit = alpha[level];
      const keep = bit ? 1 : 0;
      const lose = 1 - keep;
      const [[s0, t0], [s1, t1]] = await this.extend(level, seeds, hashers);
      const seedCw = xor(s0[lose], s1[lose]);
      const ctrlCw: [boolean, boolean] = [t0[0] !== t1[0] !== !bit, t0[1] !== t1[1] !== bit];
      const x0 = ctrl[0] ? xor(s0[keep], seedCw) : s0[keep];
      const x1 = ctrl[1] ? xor(s1[keep], seedCw) : s1[keep];
      ctrl[0] = ctrl[0] ? t0[keep] !== ctrlCw[keep] : t0[keep];
      ctrl[1] = ctrl[1] ? t1[keep] !== ctrlCw[keep] : t1[keep];
      const converted = await this.convert(level, [x0, x1], hashers);
      seeds = converted.seeds;
      const [w0, w1] = converted.values;
      const beta = level < this.bits - 1 ? betaInner[level] : betaLeaf;
      if (beta.length !== this.valueLen) throw new RangeError("length of beta must match the value length");
      const p = this.currentField(level).modulus;
      let wCw = beta.map((b, i) => (((b - w0[i] + w1[i]) % p) + p) % p);
      if (ctrl[1]) wCw = wCw.map((x) => (x === 0n ? 0n : p - x));
      publicShare.push({ seed: seedCw, ctrl: ctrlCw, payload: wCw });
    }
    return { publicShare, keys };
  }

  /** Control bits (two per level, least significant first), then every seed correction, then every payload. */
  encodePublicShare(publicShare: readonly CorrectionWord[]): Uint8Array {
    const packedSize = Math.ceil((2 * publicShare.length) / 8);
    const payloads = publicShare.map((cw, level) => this.currentField(level).encodeVec(cw.payload));
    const out = new Uint8Array(packedSize + IDPF_KEY_SIZE * publicShare.length + payloads.reduce((n, b) => n + b.length, 0));
    publicShare.forEach((cw, level) => {
      cw.ctrl.forEach((bit, j) => { if (bit) out[(2 * level + j) >> 3] |= 1 << ((2 * level + j) & 7); });
      out.set(cw.seed, packedSize + IDPF_KEY_SIZE * level);
    });
    let at = packedSize + IDPF_KEY_SIZE * publicShare.length;
    for (const payload of payloads) {
      out.set(payload, at);
      at += payload.length;
    }
    return out;
  }

  /** Each seed's two children (low bit cleared) and their control bits. */
  private async extend(level: number, seeds: readonly Uint8Array[],
    hashers: Hashers): Promise<[Uint8Array[], boolean[]][]> {
    const blocks = level < this.bits - 1 ? await hashers.extend.blocks(seeds, 2)
      : new Uint8Array(seeds.flatMap((seed) => [...new XofTurboShake128(seed, hashers.extendDst, hashers.nonce).next(32)]));
    return seeds.map((_, i) => {
      const [a, ta] = splitControl(blocks.subarray(32 * i, 32 * i + 16));
      const [b, tb] = splitControl(blocks.subarray(32 * i + 16, 32 * i + 32));
      return [[a, b], [ta, tb]];
    });
  }

  /** Each seed's next seed and its valueLen field elements. */
  private async convert(level: number, seeds: readonly Uint8Array[],
    hashers: Hashers): Promise<{ seeds: Uint8Array[]; values: bigint[][] }> {
    const field = this.currentField(level);
    if (level === this.bits - 1) {
      const streams = seeds.map((seed) => new XofTurboShake128(seed, hashers.convertDst, hashers.nonce));
      return { seeds: streams.map((xof) => xof.next(IDPF_KEY_SIZE)),
        values: streams.map((xof) => sampleVec(field, (n) => xof.next(n), this.valueLen)) };
    }
    const count = 1 + Math.ceil(this.valueLen / 2); // the seed's block, then two Field64 elements per block
    const blocks = await hashers.convert.blocks(seeds, count);
    const size = 16 * count;
    const out = { seeds: [] as Uint8Array[], values: [] as bigint[][] };
    for (let i = 0; i < seeds.length; i++) {
      out.seeds.push(blocks.slice(size * i, size * i + 16));
      let vec = Field64.unpack(blocks.subarray(size * i + 16, size * (i + 1))).slice(0, this.valueLen);
      if (vec.some((x) => x >= field.modulus)) { // rejection needs more of the stream (probability about 2**-32)
        vec = await XofFixedKeyAes128.over(hashers.convert, seeds[i], IDPF_KEY_SIZE).nextVec(field, this.valueLen);
      }
      out.values.push(vec);
    }
    return out;
  }
}
