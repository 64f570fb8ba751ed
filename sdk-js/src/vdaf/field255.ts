/** Field255 of draft-irtf-cfrg-vdaf-20 (GF(2**255 - 19), 32-byte little-endian elements): Poplar1's leaf field, as
 * the Python SDK's ``client_sdk/vdaf/field.py`` ``Field255``. It has no NTT subgroup, so it holds only what sharding
 * needs: the encoding and the XOFs' rejection sampling (``sampleVec``, which also serves Field64 and Field128). */

/** What encoding and sampling need of a prime field (Field64 and Field128 of field.ts fit it too). */
export interface PrimeField {
  readonly name: string;
  readonly modulus: bigint;
  readonly encodedSize: number;
  encodeVec(vec: readonly bigint[]): Uint8Array;
  decodeVec(bytes: Uint8Array): bigint[];
}

/** Little-endian integers of ``size`` bytes each, unchecked against any modulus. */
export function unpackLittleEndian(bytes: Uint8Array, size: number): bigint[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = Math.floor(bytes.length / size);
  const out = new Array<bigint>(count);
  for (let i = 0; i < count; i++) {
    let x = 0n;
    for (let w = size - 8; w >= 0; w -= 8) x = (x << 64n) | view.getBigUint64(i * size + w, true);
    out[i] = x;
  }
  return out;
}

const MASK64 = (1n << 64n) - 1n;

class Field255Class implements PrimeField {
  readonly name = "Field255";
  readonly modulus = 2n ** 255n - 19n;
  readonly encodedSize = 32;

  encodeVec(vec: readonly bigint[]): Uint8Array {
    const out = new Uint8Array(32 * vec.length);
    const view = new DataView(out.buffer);
    vec.forEach((x, i) => {
      for (let w = 0; w < 4; w++) view.setBigUint64(32 * i + 8 * w, (x >> BigInt(64 * w)) & MASK64, true);
    });
    return out;
  }

  /** RangeError on a ragged length or a value >= modulus. */
  decodeVec(bytes: Uint8Array): bigint[] {
    if (bytes.length % 32) throw new RangeError("input length must be a multiple of the size of an encoded field element");
    const vec = unpackLittleEndian(bytes, 32);
    if (vec.some((x) => x >= this.modulus)) throw new RangeError("modulus overflow");
    return vec;
  }
}

export const Field255: PrimeField = new Field255Class();

function bitLength(n: bigint): number {
  return n.toString(2).length;
}

/** The next ``length`` elements of ``field`` read from a byte stream by rejection sampling (draft: Xof.next_vec):
 * each ``encodedSize``-byte little-endian integer masked to the modulus' bit length, values >= modulus dropped. */
export function sampleVec(field: PrimeField, read: (length: number) => Uint8Array, length: number): bigint[] {
  const size = field.encodedSize;
  const p = field.modulus;
  const bits = bitLength(p);
  const mask = bits < 8 * size ? (1n << BigInt(bits)) - 1n : null;
  const take = (bytes: Uint8Array): bigint[] => {
    const vec = unpackLittleEndian(bytes, size);
    return mask === null ? vec : vec.map((x) => x & mask);
  };
  const vec = take(read(length * size));
  if (vec.every((x) => x < p)) return vec;
  const kept = vec.filter((x) => x < p);
  while (kept.length < length) for (const x of take(read((length - kept.length) * size))) if (x < p) kept.push(x);
  return kept;
}
