/** Validity circuits of draft-irtf-cfrg-vdaf-20 ("Variants"): Count, Sum, SumVec, Histogram, MultihotCountVec; and
 * HistogramWithCoins (the project's, not in the draft) for distributed coin-flip noise. The same circuits as the
 * Python SDK's ``client_sdk/vdaf/circuits.py``; constants added inside a circuit are scaled by 1/numShares so that
 * it also runs on additive shares. */
import { type Field, modPow } from "./field.js";
import { type Circuit, type Gadget, Mul, ParallelSum, PolyEval } from "./flp.js";

function bitLength(n: bigint): number {
  return n.toString(2).length;
}

function checkPositive(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
}

function integer(value: unknown, what: string): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  throw new TypeError(`${what} must be an integer, got ${typeof value === "number" ? value : typeof value}`);
}

/** A 0/1 measurement entry: a boolean, or 0 or 1. */
function bit(value: unknown, what: string): bigint {
  if (value === true || value === 1) return 1n;
  if (value === false || value === 0) return 0n;
  if (typeof value === "number" && Number.isInteger(value)) throw new RangeError(`${what} must be 0 or 1, got ${value}`);
  throw new TypeError(`${what} must be a boolean (or 0 or 1), got ${String(value)}`);
}

/** Bits of ``value`` under weights 1, 2, 4, ..., 2**(bits-2), and a last weight making the weights sum to
 * maxMeasurement: any 0/1 vector decodes into [0, maxMeasurement] and every value there has an encoding. */
export function encodeRangeCheckedInt(value: unknown, maxMeasurement: bigint, what = "measurement"): bigint[] {
  const v = integer(value, what);
  if (v < 0n || v > maxMeasurement) throw new RangeError(`${what} must be in [0, ${maxMeasurement}], got ${v}`);
  const bits = bitLength(maxMeasurement);
  const restAllOnes = (1n << BigInt(bits - 1)) - 1n;
  const lastWeight = maxMeasurement - restAllOnes;
  const [rest, last] = v <= restAllOnes ? [v, 0n] : [v - lastWeight, 1n];
  const out: bigint[] = [];
  for (let i = 0; i < bits - 1; i++) out.push((rest >> BigInt(i)) & 1n);
  out.push(last);
  return out;
}

/** Weighted sum of the range-checked bits (linear: it maps shares to shares). */
function decodeRangeCheckedInt(field: Field, encoded: readonly bigint[], maxMeasurement: bigint): bigint {
  const bits = bitLength(maxMeasurement);
  const lastWeight = maxMeasurement - ((1n << BigInt(bits - 1)) - 1n);
  let total = lastWeight * encoded[bits - 1];
  for (let i = 0; i < bits - 1; i++) total += encoded[i] << BigInt(i);
  return total % field.modulus;
}

/** Sum over chunks i of ParallelSum(Mul)(r_i**(j+1) * x_j, x_j - 1/numShares for j in chunk i): zero for a 0/1
 * vector, non-zero with high probability otherwise (r_i is joint randomness). */
function rangeCheckChunks(field: Field, gadget: Gadget, calls: number, chunkLength: number, meas: readonly bigint[],
  jointRand: readonly bigint[], numShares: number): bigint {
  const p = field.modulus;
  const sharesInv = field.inv(BigInt(numShares));
  let total = 0n;
  const inputs = new Array<bigint>(2 * chunkLength);
  for (let i = 0; i < calls; i++) {
    const r = jointRand[i];
    let power = r;
    for (let j = 0; j < chunkLength; j++) {
      const x = meas[i * chunkLength + j] ?? 0n;
      inputs[2 * j] = (power * x) % p;
      inputs[2 * j + 1] = x >= sharesInv ? x - sharesInv : x - sharesInv + p;
      power = (power * r) % p;
    }
    total += gadget.eval(field, inputs);
  }
  return total % p;
}

/** Scaled constant: 1/numShares. */
function sumCheck(field: Field, values: readonly bigint[], numShares: number): bigint {
  const p = field.modulus;
  const total = values.reduce((a, b) => a + b, 0n);
  return (((total - modPow(BigInt(numShares), p - 2n, p)) % p) + p) % p;
}

/** A measurement in {0, 1}: x * x - x == 0 */
export class Count implements Circuit {
  readonly gadgets = [new Mul()];
  readonly gadgetCalls = [1];
  readonly measLen = 1;
  readonly jointRandLen = 0;
  readonly evalOutputLen = 1;
  readonly outputLen = 1;
  constructor(readonly field: Field) {}

  encode(measurement: unknown): bigint[] {
    return [bit(measurement, "a Count measurement")];
  }

  eval(meas: readonly bigint[], _jointRand: readonly bigint[], _numShares: number, gadgets: readonly Gadget[]): bigint[] {
    const squared = gadgets[0].eval(this.field, [meas[0], meas[0]]);
    return [(squared - meas[0] + this.field.modulus) % this.field.modulus];
  }
}

/** An integer in [0, maxMeasurement] as range-checked bits, each checked by PolyEval(x**2 - x). */
export class Sum implements Circuit {
  readonly gadgets: Gadget[];
  readonly gadgetCalls: number[];
  readonly measLen: number;
  readonly jointRandLen = 0;
  readonly evalOutputLen: number;
  readonly outputLen = 1;
  readonly maxMeasurement: bigint;

  constructor(readonly field: Field, maxMeasurement: number | bigint) {
    this.maxMeasurement = integer(maxMeasurement, "max_measurement");
    if (this.maxMeasurement < 1n || this.maxMeasurement >= field.modulus) {
      throw new RangeError(`max_measurement must be in [1, ${field.name} modulus), got ${maxMeasurement}`);
    }
    const bits = bitLength(this.maxMeasurement);
    this.gadgets = [new PolyEval([0, -1, 1], bits)];
    this.gadgetCalls = [bits];
    this.measLen = this.evalOutputLen = bits;
  }

  encode(measurement: unknown): bigint[] {
    return encodeRangeCheckedInt(measurement, this.maxMeasurement, "a Sum measurement");
  }

  eval(meas: readonly bigint[], _jointRand: readonly bigint[], _numShares: number, gadgets: readonly Gadget[]): bigint[] {
    return meas.map((b) => gadgets[0].eval(this.field, [b]));
  }
}

/** The circuits whose range check is one ParallelSum(Mul) over chunks of the encoded measurement. */
abstract class ChunkedCircuit implements Circuit {
  readonly gadgets: Gadget[];
  readonly gadgetCalls: number[];
  readonly jointRandLen: number;
  abstract readonly evalOutputLen: number;

  constructor(readonly field: Field, readonly measLen: number, readonly outputLen: number, readonly chunkLength: number) {
    checkPositive("chunk_length", chunkLength);
    this.gadgets = [new ParallelSum(new Mul(), chunkLength)];
    this.gadgetCalls = [Math.ceil(measLen / chunkLength)];
    this.jointRandLen = this.gadgetCalls[0];
  }

  abstract encode(measurement: unknown): bigint[];

  protected rangeCheck(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint {
    return rangeCheckChunks(this.field, gadgets[0], this.gadgetCalls[0], this.chunkLength, meas, jointRand, numShares);
  }

  abstract eval(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint[];
}

/** ``length`` integers, each in [0, maxMeasurement]; all their range-checked bits checked by one ParallelSum(Mul). */
export class SumVec extends ChunkedCircuit {
  readonly evalOutputLen = 1;
  readonly maxMeasurement: bigint;

  constructor(field: Field, readonly length: number, maxMeasurement: number | bigint, chunkLength: number) {
    checkPositive("length", length);
    const top = integer(maxMeasurement, "max_measurement");
    if (top < 1n) throw new RangeError(`max_measurement must be positive, got ${top}`);
    super(field, length * bitLength(top), length, chunkLength);
    this.maxMeasurement = top;
  }

  encode(measurement: unknown): bigint[] {
    if (!Array.isArray(measurement) || measurement.length !== this.length) {
      throw new TypeError(`a SumVec measurement is an array of ${this.length} integers`);
    }
    return measurement.flatMap((v, i) => encodeRangeCheckedInt(v, this.maxMeasurement, `measurement[${i}]`));
  }

  eval(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint[] {
    return [this.rangeCheck(meas, jointRand, numShares, gadgets)];
  }
}

/** A one-hot vector of ``length`` buckets: every entry 0/1 (ParallelSum(Mul)) and the entries sum to 1. */
export class Histogram extends ChunkedCircuit {
  readonly evalOutputLen = 2;

  constructor(field: Field, readonly length: number, chunkLength: number) {
    checkPositive("length", length);
    super(field, length, length, chunkLength);
  }

  encode(measurement: unknown): bigint[] {
    return oneHot(measurement, this.length);
  }

  eval(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint[] {
    return [this.rangeCheck(meas, jointRand, numShares, gadgets), sumCheck(this.field, meas, numShares)];
  }
}

function oneHot(bucket: unknown, length: number): bigint[] {
  if (typeof bucket !== "number" || !Number.isSafeInteger(bucket)) throw new TypeError(`a histogram bucket is an integer index, got ${String(bucket)}`);
  if (bucket < 0 || bucket >= length) throw new RangeError(`a histogram bucket is an index in [0, ${length}), got ${bucket}`);
  const encoded = new Array<bigint>(length).fill(0n);
  encoded[bucket] = 1n;
  return encoded;
}

/** A 0/1 vector of ``length`` entries with at most ``maxWeight`` ones (the weight is sent range-checked). */
export class MultihotCountVec extends ChunkedCircuit {
  readonly evalOutputLen = 2;
  private readonly maxWeight: bigint;

  constructor(field: Field, readonly length: number, maxWeight: number, chunkLength: number) {
    checkPositive("length", length);
    checkPositive("max_weight", maxWeight);
    if (maxWeight > length) throw new RangeError("max_weight must be at most length");
    super(field, length + bitLength(BigInt(maxWeight)), length, chunkLength);
    this.maxWeight = BigInt(maxWeight);
  }

  encode(measurement: unknown): bigint[] {
    if (!Array.isArray(measurement) || measurement.length !== this.length) {
      throw new TypeError(`a MultihotCountVec measurement is an array of ${this.length} booleans`);
    }
    const counts = measurement.map((v, i) => bit(v, `measurement[${i}]`));
    const weight = counts.reduce((a, b) => a + b, 0n);
    return [...counts, ...encodeRangeCheckedInt(weight, this.maxWeight, "the measurement's weight (its number of ones)")];
  }

  eval(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint[] {
    const p = this.field.modulus;
    const weight = meas.slice(0, this.length).reduce((a, b) => a + b, 0n);
    const reported = decodeRangeCheckedInt(this.field, meas.slice(this.length), this.maxWeight);
    return [this.rangeCheck(meas, jointRand, numShares, gadgets), (((weight - reported) % p) + p) % p];
  }
}

/** A Histogram followed by ``coins`` coin bits per bucket, every entry proven to be 0/1 (the project's coin-flip
 * noise, "Our Data, Ourselves"; not a variant of the draft). Encoding: the one-hot buckets, then the coins of bucket
 * 0, of bucket 1, ... A measurement is a bucket index (the coins then come from crypto.getRandomValues) or
 * ``[bucket, coinBits]`` with length * coins bits. */
export class HistogramWithCoins extends ChunkedCircuit {
  readonly evalOutputLen = 2;

  constructor(field: Field, readonly length: number, readonly coins: number, chunkLength: number) {
    checkPositive("length", length);
    checkPositive("coins", coins);
    super(field, length * (1 + coins), length * (1 + coins), chunkLength);
  }

  encode(measurement: unknown): bigint[] {
    const count = this.length * this.coins;
    let bucket = measurement;
    let coins: bigint[];
    if (Array.isArray(measurement)) {
      if (measurement.length !== 2 || !Array.isArray(measurement[1]) || measurement[1].length !== count) {
        throw new TypeError(`a measurement with coins is [bucket, an array of ${count} coin bits]`);
      }
      bucket = measurement[0];
      coins = (measurement[1] as unknown[]).map((v, i) => bit(v, `coin bit ${i}`));
    } else {
      const bytes = new Uint8Array(Math.ceil(count / 8));
      crypto.getRandomValues(bytes);
      coins = Array.from({ length: count }, (_, i) => BigInt((bytes[i >> 3] >> (i & 7)) & 1));
    }
    return [...oneHot(bucket, this.length), ...coins];
  }

  eval(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint[] {
    return [this.rangeCheck(meas, jointRand, numShares, gadgets), sumCheck(this.field, meas.slice(0, this.length), numShares)];
  }
}
