/** XofTurboShake128 of draft-irtf-cfrg-vdaf-20 (section "Extendable Output Functions"): TurboSHAKE128 (RFC 9861,
 * from @noble/hashes) over len(dst) || dst || len(seed) || seed || binder with domain byte 1. */
import { turboshake128 } from "@noble/hashes/sha3-addons.js";
import type { Field } from "./field.js";

export const SEED_SIZE = 32;

function message(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array): Uint8Array {
  if (seed.length > 255) throw new RangeError("seed longer than 255 bytes");
  if (dst.length > 65535) throw new RangeError("dst longer than 65535 bytes");
  const out = new Uint8Array(3 + dst.length + seed.length + binder.length);
  out[0] = dst.length & 0xff;
  out[1] = dst.length >> 8;
  out.set(dst, 2);
  out[2 + dst.length] = seed.length;
  out.set(seed, 3 + dst.length);
  out.set(binder, 3 + dst.length + seed.length);
  return out;
}

/** A TurboSHAKE128 stream: ``next(n)`` returns the next n bytes. */
export class XofTurboShake128 {
  private readonly hash: ReturnType<typeof turboshake128.create>;

  constructor(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array) {
    this.hash = turboshake128.create({ D: 1 });
    this.hash.update(message(seed, dst, binder));
  }

  next(length: number): Uint8Array {
    return this.hash.xof(length);
  }

  /** The next ``length`` field elements by rejection sampling (draft: Xof.next_vec). The moduli lie just below
   * 2**64 and 2**128 (the encoded sizes), so no bits are masked off; values >= modulus are dropped. */
  nextVec(field: Field, length: number): bigint[] {
    const size = field.encodedSize;
    const vec = field.unpack(this.next(length * size));
    if (vec.every((x) => x < field.modulus)) return vec;
    const kept = vec.filter((x) => x < field.modulus);
    while (kept.length < length) {
      for (const x of field.unpack(this.next((length - kept.length) * size))) if (x < field.modulus) kept.push(x);
    }
    return kept;
  }

  static deriveSeed(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array): Uint8Array {
    return new XofTurboShake128(seed, dst, binder).next(SEED_SIZE);
  }

  static expandIntoVec(field: Field, seed: Uint8Array, dst: Uint8Array, binder: Uint8Array, length: number): bigint[] {
    return new XofTurboShake128(seed, dst, binder).nextVec(field, length);
  }
}
