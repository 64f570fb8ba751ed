/** The local randomizers, one class per mechanism, drawing exactly as the Python SDK's
 * ``client_sdk/mechanisms`` (wire formats, probabilities quantized to 2**-32, exact samplers). */

import { InvalidValueType, SpecError, ValueNotInDomain } from "./errors.js";
import { fromHex, toHex } from "./hash.js";
import {
  MIN_SECRET_BYTES, cohortFromSecret, prrWords, valueBitPositions, PRR_CACHE_SIZE, type RapporParams,
} from "./rappor.js";
import {
  bernoulli, bernoulliMany, bitLength, discreteLaplace, expRounded, fromDouble, quantizeDown, quantizeUp, randbelowNumber,
  randbits, randomWords, rational, secureRandom, threshold, toNumber, uniformUnit, type RandomSource, type Rational,
} from "./randomness.js";
import type { Spec } from "./spec.js";

export type Payload = number | string | (string | number)[] | { cohort: number; bits: string };

export interface Mechanism {
  readonly spec: Spec;
  perturb(value: unknown): Payload;
}

/** Pack 0/1 bytes into big-endian hex, zero-padded to whole bytes. */
export function bitsToHex(bits: Uint8Array, width: number): string {
  const out = new Uint8Array((width + 7) >> 3);
  for (let i = 0; i < width; i++) if (bits[i]) out[i >> 3] |= 0x80 >> (i & 7);
  return toHex(out);
}

/** Python's round(): halves to even. */
function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
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
    const e = expRounded(spec.epsilon);
    this.keep = quantizeDown(e / (e + this.d - 1));
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
  private readonly threshold: number;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    if (spec.mechanism === "sue") {
      this.otherBitOne = quantizeUp(1 / (expRounded(spec.epsilon / 2) + 1));
      this.trueBitOne = rational(this.otherBitOne.d - this.otherBitOne.n, this.otherBitOne.d);
    } else {
      this.trueBitOne = rational(1n, 2n);
      this.otherBitOne = quantizeUp(1 / (expRounded(spec.epsilon) + 1));
    }
    this.threshold = threshold(this.otherBitOne);
    this.pStar = toNumber(this.trueBitOne);
    this.qStar = toNumber(this.otherBitOne);
  }
  perturbIndex(index: number): string {
    const bits = bernoulliMany(this.rng, this.threshold, this.d);
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
    this.keep = quantizeDown(e / (e + this.g - 1));
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
    const e = expRounded(spec.epsilon);
    this.keep = quantizeDown(e / (e + 1));
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

// -- numeric --------------------------------------------------------------------------------------------------
export const GRID = 1 << 12;
export const PM_CELLS = 1 << 16;
const HYBRID_MIN_EPSILON = 0.61;

abstract class Numeric implements Mechanism {
  readonly low: number;
  readonly high: number;
  constructor(readonly spec: Spec, readonly rng: RandomSource) {
    [this.low, this.high] = spec.range!;
  }
  /** Clamp to the range and map to [-1, 1]; non-numbers and NaN throw before any draw. */
  toUnit(value: unknown): number {
    if (typeof value !== "number" || Number.isNaN(value)) throw new InvalidValueType(`campaign ${this.spec.name} takes a number`);
    const clamped = Math.min(Math.max(value, this.low), this.high);
    return Math.min(Math.max(2 * (clamped - this.low) / (this.high - this.low) - 1, -1), 1);
  }
  perturb(value: unknown): Payload {
    return this.perturbUnit(this.toUnit(value));
  }
  abstract perturbUnit(t: number): Payload;
  randomizedRound(scaled: number): number {
    const low = Math.floor(scaled);
    return low + (bernoulli(this.rng, fromDouble(scaled - low)) ? 1 : 0);
  }
}

export class Laplace extends Numeric {
  readonly scaleSteps: Rational;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    const eps = fromDouble(spec.epsilon);
    this.scaleSteps = rational(BigInt(2 * GRID) * eps.d, eps.n);
  }
  perturbUnit(t: number): number {
    return this.randomizedRound(t * GRID) + Number(discreteLaplace(this.rng, this.scaleSteps));
  }
}

export class Duchi extends Numeric {
  readonly slope: Rational;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    const e = expRounded(spec.epsilon);
    this.slope = quantizeDown((e - 1) / (e + 1));
  }
  perturbUnit(t: number): number {
    const x = fromDouble(t), s = this.slope;
    return bernoulli(this.rng, rational(x.d * s.d + x.n * s.n, 2n * x.d * s.d)) ? 1 : 0;
  }
}

export class Piecewise extends Numeric {
  readonly magnitude: number;
  readonly central: Rational;
  readonly cellWidth: number;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    const z = expRounded(spec.epsilon / 2);
    this.magnitude = (z + 1) / (z - 1);
    this.central = quantizeDown(z / (z + 1));
    this.cellWidth = 2 * this.magnitude / PM_CELLS;
  }
  sampleContinuous(t: number): number {
    const c = this.magnitude;
    const left = (c + 1) * t / 2 - (c - 1) / 2;
    const right = left + c - 1;
    const u = uniformUnit(this.rng);
    if (bernoulli(this.rng, this.central)) return left + u * (c - 1);
    const position = u * (c + 1);
    const below = left + c;
    return position < below ? -c + position : right + (position - below);
  }
  perturbUnit(t: number): number {
    const x = this.sampleContinuous(t);
    return Math.min(Math.max(this.randomizedRound((x + this.magnitude) / this.cellWidth), 0), PM_CELLS);
  }
}

export class Hybrid extends Numeric {
  readonly piecewise: Piecewise;
  readonly duchi: Duchi;
  readonly alpha: Rational;
  constructor(spec: Spec, rng: RandomSource) {
    super(spec, rng);
    this.piecewise = new Piecewise(spec, rng);
    this.duchi = new Duchi(spec, rng);
    this.alpha = quantizeDown(spec.epsilon > HYBRID_MIN_EPSILON ? 1 - expRounded(-spec.epsilon / 2) : 0.0);
  }
  perturbUnit(t: number): [number, number] {
    if (bernoulli(this.rng, this.alpha)) return [1, this.piecewise.perturbUnit(t)];
    return [0, this.duchi.perturbUnit(t)];
  }
}

// -- RAPPOR ---------------------------------------------------------------------------------------------------
export class Rappor implements Mechanism {
  readonly params: RapporParams;
  readonly secret: Uint8Array;
  readonly cohort: number;
  readonly prrThreshold: number;
  readonly pThreshold: number;
  readonly qThreshold: number;
  private readonly candidateIndex: Map<string, number> | null = null;
  private readonly prrCache = new Map<string, Uint8Array>();

  constructor(readonly spec: Spec, readonly rng: RandomSource, secret?: Uint8Array, cohort?: number) {
    const params = (this.params = spec.rappor!);
    if (params.encoding === "basic") {
      if (spec.candidates === null || spec.candidates.length !== params.k) {
        throw new SpecError("candidates", "the basic encoding needs exactly k candidates (one bit each)");
      }
      this.candidateIndex = new Map(spec.candidates.map((c, i) => [c, i]));
    }
    this.secret = secret ?? rng.tokenBytes(MIN_SECRET_BYTES);
    if (this.secret.length < MIN_SECRET_BYTES) throw new RangeError(`secret must be at least ${MIN_SECRET_BYTES} bytes`);
    this.cohort = cohort ?? cohortFromSecret(this.secret, params.m);
    this.prrThreshold = threshold(quantizeUp(params.f / 2));
    this.pThreshold = threshold(quantizeUp(params.p));
    this.qThreshold = threshold(quantizeDown(params.q));
  }

  bloomBits(value: unknown): Uint8Array {
    const bits = new Uint8Array(this.params.k);
    for (const position of valueBitPositions(this.params, value, this.cohort, this.candidateIndex)) bits[position] = 1;
    return bits;
  }

  /** The memoized PRR: a deterministic function of the secret, the campaign and the Bloom bits (never sent). */
  permanentBits(value: unknown): Uint8Array {
    const bloom = this.bloomBits(value);
    const key = bitsToHex(bloom, bloom.length);
    let cached = this.prrCache.get(key);
    if (cached === undefined) {
      const words = prrWords(this.secret, this.spec.name, fromHex(key), this.params.k);
      const t = this.prrThreshold;
      cached = bloom.map((b, i) => (words[i] < t ? 1 : words[i] < 2 * t ? 0 : b));
      if (this.prrCache.size >= PRR_CACHE_SIZE) this.prrCache.delete(this.prrCache.keys().next().value!);
      this.prrCache.set(key, cached);
    }
    return cached.slice();
  }

  perturb(value: unknown): { cohort: number; bits: string } {
    const prr = this.permanentBits(value);
    const words = randomWords(this.rng, prr.length);
    const irr = prr.map((b, i) => (b ? (words[i] < this.qThreshold ? 1 : 0) : words[i] < this.pThreshold ? 1 : 0));
    return { cohort: this.cohort, bits: bitsToHex(irr, this.params.k) };
  }
}

export interface MechanismOptions {
  rng?: RandomSource;
  /** RAPPOR: the device secret (at least 32 bytes); without it a fresh one protects nothing across sessions. */
  secret?: Uint8Array;
  cohort?: number;
}

/** The randomizer for ``spec``; randomness from the platform CSPRNG unless ``rng`` is given. */
export function mechanismFromSpec(spec: Spec, options: MechanismOptions = {}): Mechanism {
  const rng = options.rng ?? secureRandom;
  switch (spec.mechanism) {
    case "grr": return new GRR(spec, rng);
    case "sue": case "oue": return new UnaryEncoding(spec, rng);
    case "olh": return new OLH(spec, rng);
    case "hadamard": return new Hadamard(spec, rng);
    case "laplace": return new Laplace(spec, rng);
    case "duchi": return new Duchi(spec, rng);
    case "piecewise": return new Piecewise(spec, rng);
    case "hybrid": return new Hybrid(spec, rng);
    case "rappor": return new Rappor(spec, rng, options.secret, options.cohort);
    default: throw new SpecError("mechanism", `unknown mechanism ${spec.mechanism}`);
  }
}
