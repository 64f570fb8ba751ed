/** XofFixedKeyAes128 of draft-irtf-cfrg-vdaf-20 (section "XofFixedKeyAes128"), as the Python SDK's
 * ``client_sdk/vdaf/xof.py`` and ``xof_aes.py``: the AES-128 key is TurboSHAKE128(len(dst) || dst || binder, D=2,
 * 16 bytes), and block i of seed's stream is AES(sigma) xor sigma with sigma = hi || (hi xor lo) for
 * lo || hi = seed xor le128(i) (GKWWY20's circular correlation-robust hash).
 *
 * ``FixedKeyHasher`` is one (dst, binder): the IDPF hashes every seed of a tree level under the same key, so the
 * key is derived once and a level's blocks go to the cipher in one call. Async because WebCrypto is (aes.ts). */
import { turboshake128 } from "@noble/hashes/sha3-addons.js";
import { type AesBlockCipher, type AesPrimitive, currentAes } from "./aes.js";
import { type PrimeField, unpackLittleEndian } from "./field255.js";

export const AES_SEED_SIZE = 16;

/** The fixed AES-128 key of (dst, binder). */
export function fixedKey(dst: Uint8Array, binder: Uint8Array): Uint8Array {
  if (dst.length > 65535) throw new RangeError("dst longer than 65535 bytes");
  const message = new Uint8Array(2 + dst.length + binder.length);
  message[0] = dst.length & 0xff;
  message[1] = dst.length >> 8;
  message.set(dst, 2);
  message.set(binder, 2 + dst.length);
  return turboshake128(message, { D: 2, dkLen: 16 });
}

/** The streams of XofFixedKeyAes128(seed, dst, binder) for any seeds under one (dst, binder). */
export class FixedKeyHasher {
  private constructor(private readonly cipher: AesBlockCipher) {}

  static async create(dst: Uint8Array, binder: Uint8Array, aes: AesPrimitive = currentAes()): Promise<FixedKeyHasher> {
    return new FixedKeyHasher(await aes.withKey(fixedKey(dst, binder)));
  }

  /** Blocks ``first .. first + count - 1`` of each seed's stream, seed after seed (16 * count bytes per seed). */
  async blocks(seeds: readonly Uint8Array[], count: number, first = 0): Promise<Uint8Array> {
    const sigma = new Uint8Array(16 * count * seeds.length);
    let at = 0;
    for (const seed of seeds) {
      if (seed.length !== AES_SEED_SIZE) throw new RangeError("incorrect seed size");
      for (let i = first; i < first + count; i++) {
        // lo || hi = seed xor le128(i); sigma = hi || (hi xor lo)
        let index = i;
        for (let b = 0; b < 8; b++) {
          const hi = seed[8 + b];
          sigma[at + b] = hi;
          sigma[at + 8 + b] = hi ^ seed[b] ^ (index & 0xff);
          index = Math.floor(index / 256);
        }
        at += 16;
      }
    }
    const out = await this.cipher.encryptBlocks(sigma);
    for (let j = 0; j < out.length; j++) out[j] ^= sigma[j];
    return out;
  }
}

/** One XofFixedKeyAes128 stream (the draft's object): ``next(n)``, ``nextVec(field, n)``. */
export class XofFixedKeyAes128 {
  private consumed = 0;

  private constructor(private readonly hasher: FixedKeyHasher, private readonly seed: Uint8Array) {}

  static async create(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array, aes?: AesPrimitive): Promise<XofFixedKeyAes128> {
    if (seed.length !== AES_SEED_SIZE) throw new RangeError("incorrect seed size");
    return new XofFixedKeyAes128(await FixedKeyHasher.create(dst, binder, aes), seed);
  }

  /** A stream over an existing hasher (same dst and binder), positioned at byte ``offset``. */
  static over(hasher: FixedKeyHasher, seed: Uint8Array, offset = 0): XofFixedKeyAes128 {
    const xof = new XofFixedKeyAes128(hasher, seed);
    xof.consumed = offset;
    return xof;
  }

  async next(length: number): Promise<Uint8Array> {
    const offset = this.consumed % 16;
    const first = Math.floor(this.consumed / 16);
    this.consumed += length;
    const last = Math.floor((this.consumed + 15) / 16);
    const blocks = await this.hasher.blocks([this.seed], last - first, first);
    return blocks.slice(offset, offset + length);
  }

  /** The draft's Xof.next_vec: rejection sampling, each element masked to the modulus' bit length. */
  async nextVec(field: PrimeField, length: number): Promise<bigint[]> {
    const size = field.encodedSize;
    const p = field.modulus;
    const mask = (1n << BigInt(p.toString(2).length)) - 1n;
    const kept: bigint[] = [];
    while (kept.length < length) {
      for (const x of unpackLittleEndian(await this.next((length - kept.length) * size), size)) {
        if ((x & mask) < p) kept.push(x & mask);
      }
    }
    return kept;
  }

  static async deriveSeed(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array, aes?: AesPrimitive): Promise<Uint8Array> {
    return (await XofFixedKeyAes128.create(seed, dst, binder, aes)).next(AES_SEED_SIZE);
  }

  static async expandIntoVec(field: PrimeField, seed: Uint8Array, dst: Uint8Array, binder: Uint8Array, length: number,
    aes?: AesPrimitive): Promise<bigint[]> {
    return (await XofFixedKeyAes128.create(seed, dst, binder, aes)).nextVec(field, length);
  }
}
