/** RAPPOR's parameters, validated as the Python SDK validates them (part of the RAPPOR module, rappor.ts, which
 * browsers load on demand). RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): parameters, Bloom hashing, cohort and PRR derivations, as
 * ``client_sdk/rappor.py`` (the encodings, tags and byte orders are documented there and in docs/rappor.md). */

import { SpecError } from "./errors.js";
import { expRounded, fromDouble, quantizeDown, quantizeUp, type Rational } from "./randomness.js";

export const MAX_BLOOM_BITS = 1 << 16;
export const MAX_COHORTS = 1 << 10;
export const MAX_COHORT_BITS = 1 << 22;
export const MIN_SECRET_BYTES = 32;
export const PRR_CACHE_SIZE = 4096;
const ENCODINGS = ["bloom", "basic", "boolean"];
const DEFAULTS: Record<string, number> = { f: 0.5, p: 0.5, q: 0.75 };

export interface RapporParams {
  k: number; h: number; m: number; f: number; p: number; q: number; encoding: string;
}

const defaultEncoding = (k: number): string => (k === 1 ? "boolean" : "bloom");
export const hashBytes = (k: number): number => (k <= 256 ? 1 : 2);

function positiveInt(data: Record<string, unknown>, name: string, fallback: number): number {
  const value = name in data ? data[name] : fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new SpecError(`rappor.${name}`, "must be a positive integer");
  }
  return value;
}

function probability(data: Record<string, unknown>, name: string): number {
  const value = name in data ? data[name] : DEFAULTS[name];
  if (typeof value !== "number" || !Number.isFinite(value)) throw new SpecError(`rappor.${name}`, "must be a number");
  return value;
}

export function rapporFromDict(data: unknown): RapporParams {
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new SpecError("rappor", "must be an object with k, h, m, f, p, q");
  }
  const record = data as Record<string, unknown>;
  const unknown = Object.keys(record).filter((k) => !["k", "h", "m", "f", "p", "q", "encoding"].includes(k)).sort();
  if (unknown.length) throw new SpecError(`rappor.${unknown[0]}`, "unknown field; allowed: k, h, m, f, p, q, encoding");
  const k = positiveInt(record, "k", 16);
  const encoding = "encoding" in record ? record.encoding : defaultEncoding(k);
  if (typeof encoding !== "string" || !ENCODINGS.includes(encoding)) {
    throw new SpecError("rappor.encoding", `must be one of ${ENCODINGS.join(", ")}`);
  }
  const h = positiveInt(record, "h", encoding === "bloom" ? 2 : 1);
  const m = positiveInt(record, "m", 64);
  checkShape(k, h, m, encoding);
  const f = probability(record, "f"), p = probability(record, "p"), q = probability(record, "q");
  if (!(f >= 0 && f < 1)) throw new SpecError("rappor.f", "must satisfy 0 <= f < 1");
  if (!(p >= 0 && p < q && q <= 1)) throw new SpecError("rappor.p", "must satisfy 0 <= p < q <= 1");
  if (compare(quantizeDown(q), quantizeUp(p)) <= 0) {
    throw new SpecError("rappor.q", "must exceed p by at least 2**-32 (probabilities are quantized)");
  }
  return { k, h, m, f, p, q, encoding };
}

function compare(a: Rational, b: Rational): number {
  const d = a.n * b.d - b.n * a.d;
  return d > 0n ? 1 : d < 0n ? -1 : 0;
}

function checkShape(k: number, h: number, m: number, encoding: string): void {
  if (k > MAX_BLOOM_BITS) throw new SpecError("rappor.k", `must be at most ${MAX_BLOOM_BITS}`);
  if (encoding === "bloom") {
    if (k < 2) throw new SpecError("rappor.k", "must be at least 2 for the bloom encoding");
    const most = 16 / hashBytes(k);
    if (h > most) throw new SpecError("rappor.h", `must be at most ${most} for k = ${k}`);
  } else if (h !== 1) {
    throw new SpecError("rappor.h", `must be 1 for the ${encoding} encoding`);
  }
  if (encoding === "boolean" && k !== 1) throw new SpecError("rappor.k", "must be 1 for the boolean encoding");
  if (m & (m - 1)) throw new SpecError("rappor.m", "must be a power of two");
  if (m > MAX_COHORTS) throw new SpecError("rappor.m", `must be at most ${MAX_COHORTS}`);
  if (m * k > MAX_COHORT_BITS) throw new SpecError("rappor.m", `m * k must be at most ${MAX_COHORT_BITS}`);
  if (h > k) throw new SpecError("rappor.h", "must be at most k");
}

export function rapporIdentity(params: RapporParams): Record<string, unknown> {
  const out: Record<string, unknown> = { k: params.k, h: params.h, m: params.m, f: params.f, p: params.p, q: params.q };
  if (params.encoding !== defaultEncoding(params.k)) out.encoding = params.encoding;
  return out;
}

export function p11(x: RapporParams): number {
  return x.q * (1 - x.f / 2) + x.p * x.f / 2;
}

export function p01(x: RapporParams): number {
  return x.p * (1 - x.f / 2) + x.q * x.f / 2;
}

/** Privacy of one report: h ln(p11 (1 - p01) / (p01 (1 - p11))), rounded up until e**epsilon provably covers the
 * exact ratio of the quantized probabilities the IRR draws with (as the Python SDK's epsilon_one). */
export function epsilonOne(x: RapporParams): number {
  const a = p11(x), b = p01(x);
  if (b <= 0 || a >= 1) return Infinity;
  let epsilon = x.h * Math.log(a * (1 - b) / (b * (1 - a)));
  const [f, p, q] = [quantizeUp(x.f / 2), quantizeUp(x.p), quantizeDown(x.q)].map((r) => (r.n << 32n) / r.d);
  const unit = 1n << 32n, one = q * (unit - f) + p * f, zero = p * (unit - f) + q * f, h = BigInt(x.h);
  const num = (one * (unit * unit - zero)) ** h, den = (zero * (unit * unit - one)) ** h;
  for (let e; epsilon <= 64 && (e = fromDouble(expRounded(epsilon))).n * den < num * e.d;) epsilon *= 1 + 2 ** -52;
  return epsilon;
}

/** Long-term privacy of one value under the memoized PRR: 2h ln((1 - f/2) / (f/2)). */
export function epsilonInf(x: RapporParams): number {
  return x.f === 0 ? Infinity : 2 * x.h * Math.log((1 - x.f / 2) / (x.f / 2));
}
