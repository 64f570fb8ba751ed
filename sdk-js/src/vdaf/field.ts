/** The NTT-friendly prime fields of draft-irtf-cfrg-vdaf-20 (Field64, Field128) and the polynomial helpers the FLP
 * prover needs, as in the Python SDK's ``client_sdk/vdaf/field.py``.
 *
 * Elements are ``bigint`` values in ``[0, modulus)``; vectors are ``bigint[]``. Polynomials are kept in the
 * Lagrange basis over the first n powers of the principal n-th root of unity (draft section "Polynomial
 * Representation") and converted through a radix-2 NTT. */

/** Smallest power of two >= n (n >= 1). */
export function nextPowerOf2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** base ** exponent mod modulus (square and multiply). */
export function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  let b = base % modulus;
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
    e >>= 1n;
  }
  return result;
}

const MASK64 = (1n << 64n) - 1n;

interface NttPlan {
  reversal: Int32Array;
  twiddles: bigint[][]; // per stage (half-length 1, 2, 4, ...), the twiddle factors of that stage
}

export class Field {
  readonly generator: bigint;
  private readonly roots = new Map<number, bigint[]>();
  private readonly plans = new Map<string, NttPlan>();
  private readonly doubling = new Map<number, bigint[]>();

  constructor(
    readonly name: string,
    readonly modulus: bigint,
    readonly encodedSize: 8 | 16,
    readonly genOrder: bigint,
    generatorBase: bigint,
    generatorExponent: bigint,
  ) {
    this.generator = modPow(generatorBase, generatorExponent, modulus);
  }

  inv(x: bigint): bigint {
    return modPow(x, this.modulus - 2n, this.modulus);
  }

  /** Little-endian, encodedSize bytes per element. */
  encodeVec(vec: readonly bigint[]): Uint8Array {
    const out = new Uint8Array(vec.length * this.encodedSize);
    this.encodeInto(vec, out, 0);
    return out;
  }

  encodeInto(vec: readonly bigint[], out: Uint8Array, offset: number): number {
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    let at = offset;
    if (this.encodedSize === 8) {
      for (const x of vec) { view.setBigUint64(at, x, true); at += 8; }
    } else {
      for (const x of vec) {
        view.setBigUint64(at, x & MASK64, true);
        view.setBigUint64(at + 8, x >> 64n, true);
        at += 16;
      }
    }
    return at;
  }

  /** The little-endian integers of bytes (a multiple of encodedSize long), unchecked against the modulus. */
  unpack(bytes: Uint8Array): bigint[] {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const count = Math.floor(bytes.length / this.encodedSize);
    const out = new Array<bigint>(count);
    if (this.encodedSize === 8) {
      for (let i = 0; i < count; i++) out[i] = view.getBigUint64(8 * i, true);
    } else {
      for (let i = 0; i < count; i++) {
        out[i] = view.getBigUint64(16 * i, true) | (view.getBigUint64(16 * i + 8, true) << 64n);
      }
    }
    return out;
  }

  /** Parse encoded elements; RangeError on a ragged length or a value >= modulus. */
  decodeVec(bytes: Uint8Array): bigint[] {
    if (bytes.length % this.encodedSize) throw new RangeError("input length must be a multiple of the size of an encoded field element");
    const vec = this.unpack(bytes);
    if (vec.some((x) => x >= this.modulus)) throw new RangeError("modulus overflow");
    return vec;
  }

  /** [w**i for i < n], w the principal n-th root of unity (cached: the same tables serve every report). */
  rootPowers(n: number): bigint[] {
    let powers = this.roots.get(n);
    if (powers === undefined) {
      if (n !== nextPowerOf2(n) || BigInt(n) > this.genOrder) throw new RangeError(`${n} is not a power of two within the NTT subgroup`);
      const w = modPow(this.generator, this.genOrder / BigInt(n), this.modulus);
      powers = new Array<bigint>(n);
      powers[0] = 1n;
      for (let i = 1; i < n; i++) powers[i] = (powers[i - 1] * w) % this.modulus;
      this.roots.set(n, powers);
    }
    return powers;
  }

  /** Evaluations on the n-th roots (natural order) of the polynomial with coefficients ``coeffs`` (n = length, a
   * power of two); with ``inverse``, the unscaled inverse transform. */
  ntt(coeffs: readonly bigint[], inverse = false): bigint[] {
    const n = coeffs.length;
    const p = this.modulus;
    const { reversal, twiddles } = this.plan(n, inverse);
    const a = new Array<bigint>(n);
    for (let i = 0; i < n; i++) a[i] = coeffs[reversal[i]];
    for (let half = 1, stage = 0; half < n; half *= 2, stage++) {
      const tw = twiddles[stage];
      for (let start = 0; start < n; start += 2 * half) {
        for (let j = 0; j < half; j++) {
          const u = a[start + j];
          const v = j === 0 ? a[start + half] : (a[start + j + half] * tw[j]) % p; // the first twiddle is 1
          const sum = u + v;
          a[start + j] = sum >= p ? sum - p : sum;
          a[start + j + half] = u >= v ? u - v : u - v + p;
        }
      }
    }
    return a;
  }

  /** Coefficients of the polynomial of degree < n given by its values on the n-th roots. */
  invNtt(values: readonly bigint[]): bigint[] {
    const p = this.modulus;
    const nInv = this.inv(BigInt(values.length));
    return this.ntt(values, true).map((x) => (x * nInv) % p);
  }

  /** 2n evaluations (on the 2n-th roots, natural order) of the polynomial given by its n evaluations. */
  doubleEvaluations(values: readonly bigint[]): bigint[] {
    const n = values.length;
    const p = this.modulus;
    const multipliers = this.doublingMultipliers(n);
    const coeffs = this.ntt(values, true);
    for (let i = 0; i < n; i++) coeffs[i] = (coeffs[i] * multipliers[i]) % p;
    const odd = this.ntt(coeffs);
    const out = new Array<bigint>(2 * n);
    for (let i = 0; i < n; i++) {
      out[2 * i] = values[i];
      out[2 * i + 1] = odd[i];
    }
    return out;
  }

  /** n**-1 * s**i for i < n, s the principal 2n-th root: the inverse NTT's scaling and the coset shift at once. */
  private doublingMultipliers(n: number): bigint[] {
    let multipliers = this.doubling.get(n);
    if (multipliers === undefined) {
      const s = this.rootPowers(2 * n);
      const nInv = this.inv(BigInt(n));
      multipliers = Array.from({ length: n }, (_, i) => (nInv * s[i]) % this.modulus);
      this.doubling.set(n, multipliers);
    }
    return multipliers;
  }

  private plan(n: number, inverse: boolean): NttPlan {
    const key = `${n}${inverse ? "i" : "f"}`;
    let plan = this.plans.get(key);
    if (plan === undefined) {
      const powers = this.rootPowers(n);
      const bits = Math.log2(n);
      const reversal = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        let r = 0;
        for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
        reversal[i] = r;
      }
      const twiddles: bigint[][] = [];
      for (let half = 1; half < n; half *= 2) {
        const step = n / (2 * half);
        twiddles.push(Array.from({ length: half }, (_, j) => powers[inverse ? (n - j * step) % n : j * step]));
      }
      plan = { reversal, twiddles };
      this.plans.set(key, plan);
    }
    return plan;
  }
}

/** GF(2**32 * 4294967295 + 1), 8-byte elements. */
export const Field64 = new Field("Field64", 2n ** 32n * 4294967295n + 1n, 8, 2n ** 32n, 7n, 4294967295n);
/** GF(2**66 * 4611686018427387897 + 1), 16-byte elements. */
export const Field128 = new Field("Field128", 2n ** 66n * 4611686018427387897n + 1n, 16, 2n ** 66n, 7n,
  4611686018427387897n);
