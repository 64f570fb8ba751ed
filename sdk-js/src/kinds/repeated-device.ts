/** The device side of repeated collection, drawing exactly as ``client_sdk/kinds/repeated/device.py`` (whose
 * docstring documents the byte consumption and the state): alpha-point rounding, the d sampled buckets, the
 * memoized answers and the output perturbation. The same bytes give the same payload and the same state.
 *
 *   mean:       {"version": 1, "identity": {...}, "alpha": a,            "answers": {"<point>": 0 | 1}}
 *   histogram:  {"version": 1, "identity": {...}, "buckets": [j_1..j_d], "answers": {"<bucket>" | "other": "<hex>"}}
 *
 * One {@link makeReport} draws, in order: only for a new state alpha = randbits(32) (mean) or the d buckets by a
 * partial Fisher-Yates shuffle (histogram); only for an answer not memoized yet, randbelow(2**32 (s - 1)) < N_j
 * (mean) or d draws randbits(32) < T (histogram, ascending buckets); only with gamma, one randbits(32) < gamma 2**32
 * per sent bit. */

import { InvalidValueType, LDPError } from "../errors.js";
import { bitsToHex } from "../hash.js";
import { fromDouble, randbelowNumber, randbits, type RandomSource, type Rational } from "../randomness.js";
import { KIND_NAME, type RepeatedParams } from "./repeated-params.js";

export const STATE_VERSION = 1;
const OTHER = "other"; // the answer key of every bucket the device did not sample
const TWO32 = 1n << 32n;
const MONDAY_OFFSET = 3 * 86_400; // 1970-01-01 was a Thursday: the Monday before it was 3 days earlier

export type RepeatedState = Record<string, unknown>;
export type Answer = number | { buckets: number[]; bits: string };

/** The device state of a campaign cannot be used (``client_sdk.errors.DeviceStateError``): ``field`` names what. */
export class DeviceStateError extends LDPError {
  constructor(readonly field: string, readonly reason: string) {
    super(`${field}: ${reason}`);
  }
}

// -- periods (``periods.py``) ---------------------------------------------------------------------------------------
/** The UTC second the period holding ``timestamp`` starts at (weeks start on Mondays). */
export function periodStart(params: RepeatedParams, timestamp: number): number {
  const seconds = params.periodSeconds;
  const offset = params.period === "week" ? MONDAY_OFFSET : 0;
  return Math.floor((Math.trunc(timestamp) + offset) / seconds) * seconds - offset;
}

/** The label of the period holding ``timestamp``: ``2026-01-05T13`` (hour), ``2026-01-05`` (day, week's Monday). */
export function periodOf(params: RepeatedParams, timestamp: number): string {
  const iso = new Date(periodStart(params, timestamp) * 1000).toISOString();
  return iso.slice(0, params.period === "hour" ? 13 : 10);
}

// -- rounding -----------------------------------------------------------------------------------------------------
/** The value clamped to the range, as an exact rational; InvalidValueType (not a number) or RangeError (NaN). */
export function clampedValue(params: RepeatedParams, value: unknown): Rational {
  if (typeof value !== "number") throw new InvalidValueType(`a repeated campaign takes a number, not ${typeOf(value)}`);
  if (Number.isNaN(value)) throw new RangeError("a repeated campaign cannot report NaN");
  return fromDouble(Math.min(Math.max(value, params.low), params.high));
}

const typeOf = (value: unknown): string => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);

/** (v - low) * scale / (high - low) as numerator / denominator (exact: doubles are dyadic rationals). */
function position(params: RepeatedParams, v: Rational, scale: number): [bigint, bigint] {
  const low = fromDouble(params.low), high = fromDouble(params.high);
  // (v.n/v.d - l.n/l.d) / (h.n/h.d - l.n/l.d) * scale
  const top = (v.n * low.d - low.n * v.d) * high.d * low.d * BigInt(scale);
  const bottom = (high.n * low.d - low.n * high.d) * v.d * low.d;
  return [top, bottom];
}

/** The rounding point (0..s-1) a device with ``alpha`` reports the clamped value ``v`` at. */
export function roundedPoint(params: RepeatedParams, alpha: number, v: Rational): number {
  const steps = params.roundingPoints! - 1;
  const [top, bottom] = position(params, v, steps);
  const point = top / bottom; // floor: both non-negative
  if (point >= BigInt(steps)) return steps;
  const remainder = top - point * bottom; // fraction = remainder / bottom
  return Number(point) + (BigInt(alpha) * bottom < remainder * TWO32 ? 1 : 0);
}

/** The bucket (0..k-1) of the clamped value ``v``. */
export function bucketOf(params: RepeatedParams, v: Rational): number {
  const [top, bottom] = position(params, v, params.buckets!);
  return Math.min(Number(top / bottom), params.buckets! - 1);
}

/** d distinct buckets of 0..k-1, uniformly (partial Fisher-Yates, d draws), sorted ascending. */
export function drawBuckets(rng: RandomSource, k: number, d: number): number[] {
  const moved = new Map<number, number>(); // the shuffled positions that no longer hold their own index
  const chosen: number[] = [];
  for (let i = 0; i < d; i++) {
    const r = i + randbelowNumber(rng, k - i);
    chosen.push(moved.get(r) ?? r);
    moved.set(r, moved.get(i) ?? i);
  }
  return chosen.sort((a, b) => a - b);
}

/** ``count`` draws randbits(32) (4 bytes big-endian each), each compared with its threshold. */
function draws(rng: RandomSource, thresholds: number[]): number[] {
  const bytes = rng.tokenBytes(4 * thresholds.length);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return thresholds.map((t, i) => (view.getUint32(4 * i, false) < t ? 1 : 0));
}

// -- the state ------------------------------------------------------------------------------------------------------
/** What a state was drawn for: the campaign's identity (its kind and fields) and its epsilon. */
export function stateIdentity(params: RepeatedParams): Record<string, unknown> {
  return { kind: KIND_NAME, ...params.toDict(), epsilon: params.epsilon };
}

/** A new state: alpha (mean) or the d buckets (histogram), drawn once, and no answers yet. */
export function newState(rng: RandomSource, params: RepeatedParams): RepeatedState {
  const state: RepeatedState = { version: STATE_VERSION, identity: stateIdentity(params) };
  if (params.mode === "mean") state.alpha = Number(randbits(rng, 32));
  else state.buckets = drawBuckets(rng, params.buckets!, params.bits!);
  state.answers = {};
  return state;
}

/** (answer, newAnswer) for one period's ``value``; ``state`` (the campaign's persisted object) is updated in place.
 * ``newAnswer``: this report memoized a new answer (the ledger charges epsilon then, nothing for a reused one). */
export function makeReport(rng: RandomSource, params: RepeatedParams, state: RepeatedState, value: unknown): [Answer, boolean] {
  const v = clampedValue(params, value); // before any draw or state change
  ensureState(rng, params, state);
  const answers = state.answers as Record<string, number | string>;
  const buckets = state.buckets as number[];
  let key: string;
  if (params.mode === "mean") key = String(roundedPoint(params, state.alpha as number, v));
  else {
    const bucket = bucketOf(params, v);
    key = buckets.includes(bucket) ? String(bucket) : OTHER;
  }
  const isNew = !Object.hasOwn(answers, key);
  if (isNew) answers[key] = drawAnswer(rng, params, buckets, key);
  let bits = params.mode === "mean" ? [answers[key] as number] : unpack(answers[key] as string, buckets.length);
  if (params.gammaThreshold) bits = draws(rng, bits.map(() => params.gammaThreshold)).map((flip, i) => bits[i]! ^ flip);
  const answer: Answer = params.mode === "mean" ? bits[0]! : { buckets: [...buckets], bits: bitsToHex(Uint8Array.from(bits), bits.length) };
  return [answer, isNew];
}

function drawAnswer(rng: RandomSource, params: RepeatedParams, buckets: number[], key: string): number | string {
  if (params.mode === "mean") {
    const [numerator, denominator] = params.pointThreshold(Number(key));
    return randbelowNumber(rng, denominator) < numerator ? 1 : 0;
  }
  const bits = draws(rng, buckets.map((b) => (String(b) === key ? params.keepThreshold : params.flipThreshold)));
  return bitsToHex(Uint8Array.from(bits), bits.length);
}

function unpack(packed: string, width: number): number[] {
  return Array.from({ length: width }, (_, i) => (parseInt(packed[i >> 2]!, 16) >> (3 - (i & 3))) & 1);
}

/** Whether two JSON values are equal (numbers by value: 1 and 1.0 are one JSON number). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a), keysB = Object.keys(b);
  return keysA.length === keysB.length && keysA.every((k) => Object.hasOwn(b, k)
    && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Draw the state when it is empty or was made for other parameters; DeviceStateError when it is damaged. */
function ensureState(rng: RandomSource, params: RepeatedParams, state: RepeatedState): void {
  if (state.version === STATE_VERSION && sameJson(state.identity, stateIdentity(params))) {
    checkState(params, state);
    return;
  }
  if (Object.keys(state).length && state.version != null && state.version !== STATE_VERSION) {
    throw new DeviceStateError("version", `${JSON.stringify(state.version)} is not a readable version of this state`);
  }
  for (const key of Object.keys(state)) delete state[key];
  Object.assign(state, newState(rng, params));
}

function checkState(params: RepeatedParams, state: RepeatedState): void {
  const answers = state.answers;
  if (answers === null || typeof answers !== "object" || Array.isArray(answers)) throw new DeviceStateError("answers", "must be an object");
  const values = Object.values(answers);
  if (params.mode === "mean") {
    const alpha = state.alpha;
    if (!Number.isInteger(alpha) || !((alpha as number) >= 0 && (alpha as number) < 2 ** 32)
      || values.some((answer) => answer !== 0 && answer !== 1)) {
      throw new DeviceStateError("alpha", "alpha or an answer is damaged");
    }
    return;
  }
  const buckets = state.buckets;
  if (!Array.isArray(buckets) || buckets.length !== params.bits
    || !buckets.every((b, i) => Number.isInteger(b) && b >= 0 && b < params.buckets! && (i === 0 || b > buckets[i - 1]))) {
    throw new DeviceStateError("buckets", "must be the d sampled buckets, distinct and ascending");
  }
  const width = 2 * ((params.bits! + 7) >> 3);
  if (values.some((answer) => typeof answer !== "string" || answer.length !== width || !/^[0-9a-fA-F]*$/.test(answer))) {
    throw new DeviceStateError("answers", `each answer must be ${width} hex digits`);
  }
}
