/** The repeated-collection kind's parameters (``client_sdk/kinds/repeated/params.py``): its spec fields validated
 * in the same order with the same field named in each SpecError, its identity (the fingerprint's input) and the
 * exact probabilities (multiples of 2**-32) the device draws with: 1BitMean's q = ceil(2**32 / (1 + e^eps)) / 2**32,
 * dBitFlip's with eps / 2, p = 1 - q, gamma quantized up. Fields: mode ("mean" | "histogram"), range, period
 * ("hour" | "day" | "week"), rounding_points (mean), buckets and bits (histogram), gamma (optional). */

import { SpecError } from "../errors.js";
import { MAX_EPSILON, MIN_EPSILON } from "../spec.js";
import { expRounded, fromDouble } from "../randomness.js";

export const KIND_NAME = "repeated";
export const MODES = ["mean", "histogram"];
export const PERIOD_SECONDS: Record<string, number> = { hour: 3600, day: 86_400, week: 7 * 86_400 };
const DEFAULT_PERIOD = "day";
const MAX_ROUNDING_POINTS = 4096;
const MAX_BUCKETS = 1 << 16;
const MAX_RANGE_MAGNITUDE = 1e15;
const MIN_RANGE_WIDTH = 1e-9;
export const FIELDS = ["mode", "range", "period", "rounding_points", "buckets", "bits", "gamma"];
const MODE_FIELDS: Record<string, string[]> = { mean: ["rounding_points"], histogram: ["buckets", "bits"] };
const TWO32 = 1n << 32n;
const PROB_DENOMINATOR = 2 ** 32; // probabilities are multiples of 2**-32 (randomness.ts)

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** One repeated campaign's parameters (validated: build with {@link parseParams}). */
export class RepeatedParams {
  /** q * 2**32: P(bit = 1) at the bottom rounding point (mean) or for another bucket (histogram). */
  readonly flipThreshold: number;
  /** gamma * 2**32 (0 without output perturbation): a sent bit flips when randbits(32) < it. */
  readonly gammaThreshold: number;

  constructor(readonly mode: string, readonly low: number, readonly high: number, readonly epsilon: number,
    readonly period: string, readonly roundingPoints: number | null, readonly buckets: number | null,
    readonly bits: number | null, readonly gamma: number | null) {
    const e = fromDouble(expRounded(mode === "mean" ? epsilon : epsilon / 2));
    // quantize_up(1 / (1 + e)) exactly: ceil(2**32 d / (d + n)) for e = n / d
    const denominator = e.d + e.n;
    this.flipThreshold = Number((TWO32 * e.d + denominator - 1n) / denominator);
    this.gammaThreshold = gamma === null ? 0 : Math.ceil(gamma * PROB_DENOMINATOR);
  }

  get periodSeconds(): number {
    return PERIOD_SECONDS[this.period]!;
  }

  /** p * 2**32: P(bit = 1) at the top rounding point (mean) or for the device's own bucket (histogram). */
  get keepThreshold(): number {
    return PROB_DENOMINATOR - this.flipThreshold;
  }

  /** (numerator, denominator) of P(memoized bit = 1) at rounding point ``point``: q + (p - q) point / (s - 1) over
   * the fixed denominator 2**32 (s - 1), never reduced (it decides how many bytes the draw reads). */
  pointThreshold(point: number): [number, number] {
    const steps = this.roundingPoints! - 1;
    const q = this.flipThreshold;
    return [q * steps + (PROB_DENOMINATOR - 2 * q) * point, PROB_DENOMINATOR * steps];
  }

  /** The kind's fields as the spec JSON holds them (``to_dict``). */
  toDict(): Record<string, unknown> {
    const out: Record<string, unknown> = { mode: this.mode, range: [this.low, this.high], period: this.period };
    if (this.mode === "mean") out.rounding_points = this.roundingPoints;
    else Object.assign(out, { buckets: this.buckets, bits: this.bits });
    if (this.gamma !== null) out.gamma = this.gamma;
    return out;
  }
}

/** The parameters of a repeated spec's JSON; SpecError naming the field otherwise (``parse_params``). */
export function parseParams(d: Record<string, unknown>): RepeatedParams {
  const epsilon = validateEpsilon(d.epsilon);
  const mode = d.mode;
  if (typeof mode !== "string" || !MODES.includes(mode)) throw new SpecError("mode", `must be one of ${MODES}`);
  const foreign = FIELDS.filter((f) => !["mode", "range", "period", "gamma", ...MODE_FIELDS[mode]!].includes(f)).sort();
  for (const field of foreign) {
    if (field in d) throw new SpecError(field, `only a ${mode === "mean" ? "histogram" : "mean"} campaign takes ${field}`);
  }
  const [low, high] = validateRange(d.range);
  const period = "period" in d ? d.period : DEFAULT_PERIOD;
  if (typeof period !== "string" || !Object.hasOwn(PERIOD_SECONDS, period)) {
    throw new SpecError("period", `must be one of ${Object.keys(PERIOD_SECONDS)}`);
  }
  const gamma = validateGamma(d.gamma);
  if (mode === "mean") {
    const s = requiredInt(d, "rounding_points", 2, MAX_ROUNDING_POINTS);
    return new RepeatedParams(mode, low, high, epsilon, period, s, null, null, gamma);
  }
  const k = requiredInt(d, "buckets", 2, MAX_BUCKETS);
  const bits = requiredInt(d, "bits", 1, k);
  return new RepeatedParams(mode, low, high, epsilon, period, null, k, bits, gamma);
}

function validateEpsilon(epsilon: unknown): number {
  const allowed = `must be a number in [${MIN_EPSILON}, ${MAX_EPSILON}]`;
  if (!finite(epsilon) || epsilon < MIN_EPSILON || epsilon > MAX_EPSILON) throw new SpecError("epsilon", allowed);
  return epsilon;
}

function validateRange(value: unknown): [number, number] {
  if (!Array.isArray(value) || value.length !== 2) throw new SpecError("range", "must be a list [low, high] of two numbers");
  const [low, high] = value;
  if (!finite(low) || !finite(high)) throw new SpecError("range", "low and high must be finite numbers");
  if (Math.max(Math.abs(low), Math.abs(high)) > MAX_RANGE_MAGNITUDE) {
    throw new SpecError("range", "low and high must be within [-1e+15, 1e+15]");
  }
  if (!(high - low >= MIN_RANGE_WIDTH)) throw new SpecError("range", "low must be below high by at least 1e-09");
  return [low, high];
}

function requiredInt(d: Record<string, unknown>, field: string, low: number, high: number): number {
  if (!(field in d)) throw new SpecError(field, `is required: an integer in [${low}, ${high}]`);
  const value = d[field];
  if (!Number.isInteger(value) || (value as number) < low || (value as number) > high) {
    throw new SpecError(field, `must be an integer in [${low}, ${high}]`);
  }
  return value as number;
}

function validateGamma(gamma: unknown): number | null {
  if (gamma == null) return null;
  const allowed = "must be a number in (0, 0.5): the probability that a sent bit is flipped";
  if (!finite(gamma) || !(gamma > 0 && gamma < 0.5)) throw new SpecError("gamma", allowed);
  if (Math.ceil(gamma * PROB_DENOMINATOR) * 2 >= PROB_DENOMINATOR) throw new SpecError("gamma", `${allowed} (at least 2**-32 below 0.5)`);
  return gamma;
}
