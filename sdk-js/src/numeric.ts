/** Means of bounded numbers: Laplace (exact, on a grid), Duchi et al., Piecewise and Hybrid (N. Wang et al. 2019),
 * drawing exactly as the Python SDK's ``client_sdk/mechanisms/numeric.py`` (wire formats documented there).
 * Browsers load this module on demand, with the first numeric campaign. */

import { InvalidValueType } from "./errors.js";
import { registerMechanism, type Mechanism, type Payload } from "./mechanisms.js";
import {
  bernoulli, expRounded, fromDouble, quantizeDown, quantizeRatio, randbelow, randbits, rational, uniformUnit,
  type RandomSource, type Rational,
} from "./randomness.js";
import type { Spec } from "./spec.js";

/** True with probability exp(-gamma), gamma >= 0 rational (Canonne, Kamath, Steinke 2020, Algorithm 1). */
export function bernoulliExp(rng: RandomSource, gamma: Rational): boolean {
  const one = rational(1n);
  while (gamma.n > gamma.d) {
    if (!bernoulliExpUnit(rng, one)) return false;
    gamma = rational(gamma.n - gamma.d, gamma.d);
  }
  return bernoulliExpUnit(rng, gamma);
}

function bernoulliExpUnit(rng: RandomSource, gamma: Rational): boolean {
  let k = 1n;
  while (randbelow(rng, gamma.d * k) < gamma.n) k += 1n;
  return k % 2n === 1n;
}

/** An integer Y with P(Y = y) proportional to exp(-|y| / scale), exactly (CKS 2020, Algorithm 2). */
export function discreteLaplace(rng: RandomSource, scale: Rational): bigint {
  if (scale.n <= 0n) throw new RangeError("scale must be positive");
  const t = scale.n, s = scale.d;
  const one = rational(1n);
  for (;;) {
    const u = randbelow(rng, t);
    if (!bernoulliExp(rng, rational(u, t))) continue;
    let v = 0n;
    while (bernoulliExp(rng, one)) v += 1n;
    const y = (u + t * v) / s; // non-negative: BigInt division truncates as floor here
    const negative = randbits(rng, 1) === 1n;
    if (negative && y === 0n) continue;
    return negative ? -y : y;
  }
}

// -- mechanisms --------------------------------------------------------------------------------------------------
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
    const e = fromDouble(expRounded(spec.epsilon));
    this.slope = quantizeRatio(e.n - e.d, e.n + e.d); // (e-1)/(e+1), exactly, rounded down
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
    const z = expRounded(spec.epsilon / 2), r = fromDouble(z);
    // C = (z+1)/(z-1) rounded up (as the Python SDK's piecewise_magnitude), so (C+1)/(C-1) <= z
    let c = (z + 1) / (z - 1);
    for (let m = fromDouble(c); m.n * (r.n - r.d) < (r.n + r.d) * m.d; m = fromDouble(c)) c *= 1 + 2 ** -52;
    this.magnitude = c;
    this.central = quantizeRatio(r.n, r.n + r.d);
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


for (const [name, Class] of [["laplace", Laplace], ["duchi", Duchi], ["piecewise", Piecewise], ["hybrid", Hybrid]] as const) {
  registerMechanism(name, (spec, rng) => new Class(spec, rng));
}
