/** The RAPPOR randomizer (Erlingsson, Pihur, Korolova, CCS 2014): Bloom hashing, the device's cohort and
 * memoized permanent randomized response (PRR) derived from its secret, a fresh instantaneous response (IRR) per
 * report; the tags and byte orders of the Python SDK's ``client_sdk/rappor.py``. Browsers load this module on demand
 * (``loadRappor()``), so pages without RAPPOR campaigns do not download it. */

import { PyFloat } from "./canonical.js";
import { SpecError, ValueNotInDomain, InvalidValueType } from "./errors.js";
import { bitsToHex, fromHex, utf8 } from "./hash.js";
import { hmacSha256, md5 } from "./hmac.js";
import { registerMechanism, type Mechanism } from "./mechanisms.js";
import { quantizeDown, quantizeUp, randomWords, threshold, type RandomSource } from "./randomness.js";
import {
  MIN_SECRET_BYTES, PRR_CACHE_SIZE, epsilonOne, hashBytes, rapporFromDict, rapporIdentity, type RapporParams,
} from "./rapporparams.js";
import { MAX_EPSILON, MIN_EPSILON, Spec, forbid, registerRappor } from "./spec.js";

const PRR_TAG = utf8("ldp-telemetry/rappor/prr/v1\0");
const COHORT_TAG = utf8("ldp-telemetry/rappor/cohort/v1");

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

// -- RAPPOR ---------------------------------------------------------------------------------------------------
export class Rappor implements Mechanism {
  readonly params: RapporParams;
  readonly secret: Uint8Array;
  readonly cohort: number;
  readonly prrThreshold: number;
  readonly pThreshold: number;
  readonly qThreshold: number;
  readonly #candidateIndex: Map<string, number> | null = null;
  readonly #prrCache = new Map<string, Uint8Array>();

  constructor(readonly spec: Spec, readonly rng: RandomSource, secret?: Uint8Array, cohort?: number) {
    const params = (this.params = spec.rappor!);
    if (params.encoding === "basic") {
      if (spec.candidates === null || spec.candidates.length !== params.k) {
        throw new SpecError("candidates", "the basic encoding needs exactly k candidates (one bit each)");
      }
      this.#candidateIndex = new Map(spec.candidates.map((c, i) => [c, i]));
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
    for (const position of valueBitPositions(this.params, value, this.cohort, this.#candidateIndex)) bits[position] = 1;
    return bits;
  }

  /** The memoized PRR: a deterministic function of the secret, the campaign and the Bloom bits (never sent). */
  permanentBits(value: unknown): Uint8Array {
    const bloom = this.bloomBits(value);
    const key = bitsToHex(bloom, bloom.length);
    let cached = this.#prrCache.get(key);
    if (cached === undefined) {
      const words = prrWords(this.secret, this.spec.name, fromHex(key), this.params.k);
      const t = this.prrThreshold;
      cached = bloom.map((b, i) => (words[i] < t ? 1 : words[i] < 2 * t ? 0 : b));
      if (this.#prrCache.size >= PRR_CACHE_SIZE) this.#prrCache.delete(this.#prrCache.keys().next().value!);
      this.#prrCache.set(key, cached);
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

registerMechanism("rappor", (spec, rng, options) => new Rappor(spec, rng, options.secret, options.cohort));
const MAX_CANDIDATES = 1 << 20; // as a domain's size

/** A RAPPOR campaign's spec (the parser spec.ts calls for mechanism "rappor"; the common fields are checked). */
function rapporSpec(d: Record<string, unknown>, name: string, expires: string | null): Spec {
  forbid(d, ["domain", "range", "catch_all", "unit"], "not with mechanism rappor");
  const params = rapporFromDict(d.rappor);
  const epsilon = epsilonOne(params);
  if (!(epsilon >= MIN_EPSILON && epsilon <= MAX_EPSILON)) {
    throw new SpecError("rappor", `gives epsilon ${epsilon}, outside [0.01, 20]`);
  }
  if (d.epsilon != null) {
    const claimed = d.epsilon as number;
    if (!Number.isFinite(claimed) || Math.abs(claimed - epsilon) > 1e-9 * Math.max(Math.abs(claimed), Math.abs(epsilon))) {
      throw new SpecError("epsilon", `is derived for RAPPOR (${epsilon})`);
    }
  }
  let candidates: string[] | null = null;
  if (d.candidates != null) {
    const list = d.candidates;
    if (!Array.isArray(list) || !list.every((c) => typeof c === "string" && (c as string & { isWellFormed(): boolean }).isWellFormed())) {
      throw new SpecError("candidates", "must be strings");
    }
    if (list.length > MAX_CANDIDATES) throw new SpecError("candidates", "is too long");
    if (new Set(list).size !== list.length) throw new SpecError("candidates", "entries must be unique");
    candidates = list as string[];
  }
  return new Spec(name, "rappor", epsilon, null, null, null, params, candidates, expires);
}

/** The identity fields of a RAPPOR spec: its parameters (f, p, q as floats) and candidates (always with the basic
 * encoding, which reports them by position). */
function identity(spec: Spec): Record<string, unknown> {
  const rappor = rapporIdentity(spec.rappor!);
  for (const key of ["f", "p", "q"]) rappor[key] = new PyFloat(rappor[key] as number);
  const out: Record<string, unknown> = { rappor };
  if (spec.rappor!.encoding === "basic") out.candidates = spec.candidates ?? [];
  else if (spec.candidates !== null) out.candidates = spec.candidates;
  return out;
}

registerRappor(rapporSpec, identity);
