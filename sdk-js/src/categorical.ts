/** The categorical randomizers of the local kind (GRR, SUE/OUE, OLH, Hadamard), drawing exactly as the Python SDK's
 * ``client_sdk/mechanisms`` (wire formats, probabilities quantized to 2**-32, exact samplers). */

import { InvalidValueType, ValueNotInDomain } from "./errors.js";
import { bitsToHex } from "./hash.js";
import type { Mechanism, Payload } from "./mechanisms.js";
import {
  bernoulli, bernoulliMany, bitLength, expRounded, fromDouble, quantizeRatio, randbelowNumber, randbits, rational,
  threshold, toNumber, type RandomSource, type Rational,
} from "./randomness.js";
import type { Spec } from "./spec.js";

/** Python's round(): halves to even. */
function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** e/(e+others) quantized down from the exact rational of the double e (Python: quantize_down of a Fraction). */
function keepOf(e: number, others: number): Rational {
  const r = fromDouble(e);
  return quantizeRatio(r.n, r.n + BigInt(others) * r.d);
}

abstract class Categorical implements Mechanism {
  readonly d: number;
  abstract readonly pStar: number;
  abstract readonly qStar: number;
  constructor(readonly spec: Spec, readonly rng: RandomSource) {
    this.d = spec.domain!.length;
  }

  /** Index of ``value`` in the domain; the catch-all's index for other values when the spec names one. */
  encode(value: unknown): number {
    if (typeof value !== "string" && typeof value !== "number") {
      throw new InvalidValueType(`campaign ${this.spec.name} takes a string or an integer`);
    }
    let index = this.spec.indexOf(value);
    if (index === null) {
      if (this.spec.catchAll === null) {
        throw new ValueNotInDomain(`value is not in the domain of campaign ${this.spec.name} and the spec names no catch_all`);
      }
      index = this.spec.indexOf(this.spec.catchAll)!;
    }
    return index;
  }

  perturb(value: unknown): Payload {
    return this.perturbIndex(this.encode(value));
  }

  abstract perturbIndex(index: number): Payload;
}

export class GRR extends Categorical {
  readonly keep: Rational;
  readonly pStar: number;
  readonly qStar: number;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    this.keep = keepOf(expRounded(spec.epsilon), this.d - 1);
    this.pStar = toNumber(this.keep);
    this.qStar = (1 - this.pStar) / (this.d - 1);
  }
  perturbIndex(index: number): number {
    if (bernoulli(this.rng, this.keep)) return index;
    const other = randbelowNumber(this.rng, this.d - 1);
    return other < index ? other : other + 1;
  }
}

export class UnaryEncoding extends Categorical {
  readonly trueBitOne: Rational;
  readonly otherBitOne: Rational;
  readonly pStar: number;
  readonly qStar: number;
  readonly #threshold: number;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    const sue = spec.mechanism === "sue";
    const keep = keepOf(expRounded(sue ? spec.epsilon / 2 : spec.epsilon), 1); // 1/(e+1) rounded up is 1 - keep
    this.otherBitOne = rational(keep.d - keep.n, keep.d);
    this.trueBitOne = sue ? keep : rational(1n, 2n);
    this.#threshold = threshold(this.otherBitOne);
    this.pStar = toNumber(this.trueBitOne);
    this.qStar = toNumber(this.otherBitOne);
  }
  perturbIndex(index: number): string {
    const bits = bernoulliMany(this.rng, this.#threshold, this.d);
    bits[index] = bernoulli(this.rng, this.trueBitOne) ? 1 : 0;
    return bitsToHex(bits, this.d);
  }
}

export const OLH_MAX_RANGE = 2 ** 31;
const MASK64 = (1n << 64n) - 1n;

export function olhRange(e: number): number {
  return Math.max(2, roundHalfEven(Math.min(e + 1, OLH_MAX_RANGE)));
}

export function olhHash(a: bigint, b: bigint, x: number, g: number): number {
  return Number(((((a * BigInt(x) + b) & MASK64) >> 32n) * BigInt(g)) >> 32n);
}

export class OLH extends Categorical {
  readonly g: number;
  readonly keep: Rational;
  readonly pStar: number;
  readonly qStar: number;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    const e = expRounded(spec.epsilon);
    this.g = olhRange(e);
    this.keep = keepOf(e, this.g - 1);
    this.pStar = toNumber(this.keep);
    this.qStar = 1 / this.g;
  }
  perturbIndex(index: number): [string, number] {
    const a = randbits(this.rng, 64), b = randbits(this.rng, 64);
    const hashed = olhHash(a, b, index, this.g);
    let y = hashed;
    if (!bernoulli(this.rng, this.keep)) {
      const other = randbelowNumber(this.rng, this.g - 1);
      y = other < hashed ? other : other + 1;
    }
    return [a.toString(16).padStart(16, "0") + b.toString(16).padStart(16, "0"), y];
  }
}

export function hadamardSize(d: number): number {
  return 2 ** bitLength(BigInt(Math.max(0, d - 1)));
}

export class Hadamard extends Categorical {
  readonly size: number;
  readonly keep: Rational;
  readonly pStar: number;
  readonly qStar = 0.5;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    this.size = hadamardSize(this.d);
    this.keep = keepOf(expRounded(spec.epsilon), 1);
    this.pStar = toNumber(this.keep);
  }
  perturbIndex(index: number): [number, number] {
    const column = randbelowNumber(this.rng, this.size);
    let parity = index & column;
    parity ^= parity >>> 16; parity ^= parity >>> 8; parity ^= parity >>> 4; parity ^= parity >>> 2; parity ^= parity >>> 1;
    let bit = parity & 1;
    if (!bernoulli(this.rng, this.keep)) bit ^= 1;
    return [column, bit];
  }
}

