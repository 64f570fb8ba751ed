/** RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): parameters, Bloom hashing, cohort and PRR derivations, as
 * ``client_sdk/rappor.py`` (the encodings, tags and byte orders are documented there and in docs/rappor.md). */

import { SpecError, ValueNotInDomain, InvalidValueType } from "./errors.js";
import { hmacSha256, md5, utf8 } from "./hash.js";
import { quantizeDown, quantizeUp, type Rational } from "./randomness.js";

export const MAX_BLOOM_BITS = 1 << 16;
export const MAX_COHORTS = 1 << 10;
export const MAX_COHORT_BITS = 1 << 22;
export const MIN_SECRET_BYTES = 32;
export const PRR_CACHE_SIZE = 4096;
const ENCODINGS = ["bloom", "basic", "boolean"];
const DEFAULTS: Record<string, number> = { f: 0.5, p: 0.5, q: 0.75 };
const PRR_TAG = utf8("ldp-telemetry/rappor/prr/v1\0");
const COHORT_TAG = utf8("ldp-telemetry/rappor/cohort/v1");

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

/** Privacy of one report: h ln(p11 (1 - p01) / (p01 (1 - p11))). */
export function epsilonOne(x: RapporParams): number {
  const a = p11(x), b = p01(x);
  if (b <= 0 || a >= 1) return Infinity;
  return x.h * Math.log(a * (1 - b) / (b * (1 - a)));
}

/** Long-term privacy of one value under the memoized PRR: 2h ln((1 - f/2) / (f/2)). */
export function epsilonInf(x: RapporParams): number {
  return x.f === 0 ? Infinity : 2 * x.h * Math.log((1 - x.f / 2) / (x.f / 2));
}

/** The Bloom bits of ``value`` in ``cohort`` under the params' encoding. */
export function valueBitPositions(params: RapporParams, value: unknown, cohort: number,
  candidates: Map<string, number> | null): number[] {
  if (params.encoding === "bloom") {
    if (typeof value !== "string") throw new InvalidValueType("RAPPOR values must be strings");
    const text = utf8(value);
    const message = new Uint8Array(4 + text.length);
    new DataView(message.buffer).setUint32(0, cohort);
    message.set(text, 4);
    const digest = md5(message);
    const out: number[] = [];
    for (let i = 0; i < params.h; i++) {
      out.push(hashBytes(params.k) === 1 ? digest[i] % params.k : ((digest[2 * i] << 8) | digest[2 * i + 1]) % params.k);
    }
    return out;
  }
  if (params.encoding === "boolean") {
    if (value !== true && value !== false && value !== 0 && value !== 1) {
      throw new InvalidValueType("boolean RAPPOR values must be true or false");
    }
    return value ? [0] : [];
  }
  const index = typeof value === "string" && candidates ? candidates.get(value) : undefined;
  if (index === undefined) throw new ValueNotInDomain("value is not one of the campaign's candidates (basic RAPPOR)");
  return [index];
}

/** The device's cohort among m: HMAC-SHA256(secret, tag) mod m (the first 8 digest bytes, big-endian). */
export function cohortFromSecret(secret: Uint8Array, m: number): number {
  const digest = hmacSha256(secret, COHORT_TAG);
  let value = 0n;
  for (const byte of digest.subarray(0, 8)) value = (value << 8n) | BigInt(byte);
  return Number(value % BigInt(m));
}

/** ``count`` 32-bit words from HMAC-SHA256(secret, tag || len || campaign || Bloom bits), counter-mode expanded. */
export function prrWords(secret: Uint8Array, campaign: string, bloomBytes: Uint8Array, count: number): Uint32Array {
  const name = utf8(campaign);
  const message = new Uint8Array(PRR_TAG.length + 2 + name.length + bloomBytes.length);
  message.set(PRR_TAG);
  new DataView(message.buffer).setUint16(PRR_TAG.length, name.length);
  message.set(name, PRR_TAG.length + 2);
  message.set(bloomBytes, PRR_TAG.length + 2 + name.length);
  const key = hmacSha256(secret, message);
  const blocks = Math.ceil((4 * count) / 32);
  const stream = new Uint8Array(blocks * 32);
  const counter = new Uint8Array(4);
  for (let i = 0; i < blocks; i++) {
    new DataView(counter.buffer).setUint32(0, i);
    stream.set(hmacSha256(key, counter), 32 * i);
  }
  const view = new DataView(stream.buffer);
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) out[i] = view.getUint32(4 * i);
  return out;
}
