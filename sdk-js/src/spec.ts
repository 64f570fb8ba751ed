/** The campaign spec: the envelope (the fields every kind has) validated here, the rest by the spec's kind
 * (kinds/), exactly as the Python SDK's ``client_sdk/spec.py`` validates it (the same field named in each SpecError),
 * with the same fingerprint (SHA-256 of the canonical JSON of the identity fields). conformance/<kind>/specs.json
 * holds the cases both SDKs run. */

import { budgetIdentity, exceeds, parseBudget, type Budget } from "./budget.js";
import { PyFloat, canonicalJson } from "./canonical.js";
import { SpecError } from "./errors.js";
import { toHex, utf8 } from "./hash.js";
import type { RapporParams } from "./rapporparams.js";
import { ENVELOPE_FIELDS, kindName, loadedKind, notLoaded, type Envelope } from "./kinds/index.js";

export const CATEGORICAL_MECHANISMS = ["grr", "sue", "oue", "olh", "hadamard"];
export const NUMERIC_MECHANISMS = ["laplace", "duchi", "piecewise", "hybrid"];
export const MIN_EPSILON = 0.01;
export const MAX_EPSILON = 20.0;
const MAX_DOMAIN_SIZE = 1 << 20;
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$/;

export type DomainValue = string | number;

/** A synchronous SHA-256 (Node's entry point registers one; browsers fingerprint with WebCrypto, see
 * {@link fingerprinted}). */
let syncSha256: ((data: Uint8Array) => Uint8Array) | null = null;

export function registerSha256(hash: (data: Uint8Array) => Uint8Array): void {
  syncSha256 = hash;
}

/** ``spec`` with its fingerprint computed (WebCrypto when no synchronous SHA-256 is registered) and the
 * fingerprint the source carried, if any, checked. */
export async function fingerprinted(spec: Spec): Promise<Spec> {
  if (!spec.fingerprint) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(canonicalJson(fingerprintInput(spec))) as BufferSource));
    (spec as { fingerprint: string }).fingerprint = toHex(digest).slice(0, 32);
  }
  checkClaim(spec);
  return spec;
}

/** RAPPOR's specs are parsed by rappor.ts (loaded on demand: browsers download its checks with it), called by the
 * local kind with the envelope's fields (name, expires, delta) already checked; rappor.ts also gives a RAPPOR spec's
 * identity fields (rappor and candidates), for the fingerprint. */
type SpecParser = (d: Record<string, unknown>, name: string, expires: string | null, delta: number | null) => Spec;
let rapporSupport: { parse: SpecParser; identity: (spec: Spec) => Record<string, unknown> } | undefined;

export function registerRappor(parse: SpecParser, identity: (spec: Spec) => Record<string, unknown>): void {
  rapporSupport = { parse, identity };
}

/** A validated campaign spec (build it with {@link loadSpec}). */
export class Spec {
  /** SHA-256 (hex, first 32 characters) of the canonical JSON of {@link identity}; "" in browsers until
   * {@link fingerprinted} has computed it. */
  readonly fingerprint: string = "";
  /** The campaign kind that parsed it and makes its reports (kinds/index.ts). */
  readonly kind: string = "local";
  /** The fingerprint the source carried (a spec as served), checked against {@link fingerprint}. */
  claimed: unknown = null;
  /** What one device may spend over the campaign's life (budget.ts), null for no cap; fingerprinted when given. */
  readonly budget: Budget | null = null;
  /** A shuffled local campaign's batching rule as its fingerprint holds it (kinds/local.ts), else null. */
  readonly shuffle: Record<string, unknown> | null = null;
  #index: Map<string, number> | null = null;

  constructor(
    readonly name: string,
    readonly mechanism: string,
    readonly epsilon: number,
    readonly domain: DomainValue[] | null,
    readonly catchAll: DomainValue | null,
    readonly range: [number, number] | null,
    readonly rappor: RapporParams | null,
    readonly candidates: string[] | null,
    readonly expires: string | null,
    readonly unit?: string | null,
  ) {}

  get isNumeric(): boolean {
    return NUMERIC_MECHANISMS.includes(this.mechanism);
  }

  /** Position of ``value`` in the domain, or null (booleans never match; strings and integers are distinct). */
  indexOf(value: unknown): number | null {
    if (this.#index === null) {
      this.#index = new Map((this.domain ?? []).map((v, i) => [domainKey(v)!, i]));
    }
    const key = domainKey(value);
    return key === null ? null : this.#index.get(key) ?? null;
  }

  /** The fields that change what a report means: the input of the fingerprint. */
  identity(): Record<string, unknown> {
    const out: Record<string, unknown> = { name: this.name, mechanism: this.mechanism };
    if (this.rappor !== null) Object.assign(out, rapporSupport!.identity(this));
    else out.epsilon = new PyFloat(this.epsilon);
    if (this.domain) out.domain = this.domain;
    if (this.catchAll !== null) out.catch_all = this.catchAll;
    if (this.range) out.range = this.range.map((x) => new PyFloat(x));
    if (this.expires) out.expires = this.expires;
    if (this.unit) out.unit = this.unit;
    if (this.shuffle) Object.assign(out, { trust: "shuffled" }, this.shuffle);
    return out;
  }

  /** The (epsilon, delta) one report charges the device's ledger (``CampaignKind.ledger_charge`` without a report). */
  charge(): [number, number] {
    return [this.epsilon, 0];
  }

  /** Whether the campaign no longer records on UTC ``day`` (YYYY-MM-DD). */
  expiredOn(day: string): boolean {
    return this.expires !== null && day > this.expires;
  }
}

function domainKey(value: unknown): string | null {
  if (typeof value === "string") return `s${value}`;
  if (Number.isInteger(value)) return `i${value}`;
  return null;
}

/** A spec from a plain object or its JSON text; throws SpecError naming the field.  A spec has no field
 * ``aggregators`` (refused, as by the Python SDK); ``listed`` (the client's own use, not an app's) reads a listing's
 * item as the client keeps it: the spec with the listing's aggregators block there (a distributed campaign's HPKE
 * configs and helper URL, checked before sealing). */
export function loadSpec(source: unknown, listed = false): Spec {
  if (source instanceof Spec) return source;
  if (typeof source === "string") {
    try {
      source = JSON.parse(source);
    } catch (error) {
      throw new SpecError("spec", `is not valid JSON (${(error as Error).message})`);
    }
  }
  return specFromDict(source, listed);
}

const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed(); // no lone surrogates
/** A string of at most ``max`` code points, without lone surrogates. */
export const text = (v: unknown, max: number): v is string => typeof v == "string" && [...v].length <= max && wellFormed(v);

/** A spec from its JSON object: the envelope checked here, the rest by the spec's kind (kinds/index.ts). */
export function specFromDict(data: unknown, listed = false): Spec {
  if (data === null || typeof data !== "object" || Array.isArray(data)) throw new SpecError("spec", "must be a JSON object");
  const d = data as Record<string, unknown>;
  const has = (key: string): boolean => key in d;
  const kindOf = kindName(d);
  const kind = loadedKind(kindOf);
  // named: the field the kind comes from (its module is not loaded yet)
  if (kind === undefined) throw notLoaded(has("kind") ? "kind" : "trust", kindOf);
  const known = new Set([...ENVELOPE_FIELDS, ...kind.fields]);
  if (!listed) known.delete("aggregators"); // the listing's block, kept with a listed spec only: never a spec's field
  const unknown = Object.keys(d).filter((k) => !known.has(k)).sort();
  if (unknown.length) throw new SpecError(unknown[0], "unknown field");
  const name = d.name;
  if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
    throw new SpecError("name", "must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
  }
  const trust = has("trust") ? d.trust : kind.trustModels[0];
  if (!kind.trustModels.includes(trust as string)) throw new SpecError("trust", `must be one of ${kind.trustModels} (kind ${kindOf})`);
  const description = has("description") ? d.description : "";
  if (!text(description, 1000)) {
    throw new SpecError("description", "must be a string (<= 1000 characters)");
  }
  const version = has("version") ? d.version : 1;
  if (!Number.isInteger(version) || (version as number) < 1 || (version as number) > 2 ** 31) {
    throw new SpecError("version", "must be a positive integer");
  }
  const delta = d.delta;
  if (delta != null && (typeof delta != "number" || !(delta > 0 && delta < 1))) {
    throw new SpecError("delta", "must be in (0, 1)");
  }
  const envelope: Envelope = { name, kind: kindOf, trust: trust as string, description, version: version as number,
    delta: (delta as number | null) ?? null, expires: validateDay(d.expires) };
  const spec = kind.parse(d, envelope);
  (spec as { kind: string }).kind = kindOf;
  if (d.budget != null) {
    const budget = parseBudget(d.budget);
    if (exceeds(budget, [0, 0], spec.charge())) throw new SpecError("budget", "is below one report's charge");
    Object.assign(spec, { budget, fingerprint: "" }); // a kind's own fingerprint (prio3, repeated) has no budget
  }
  // fingerprinted once the kind has set its fields (prio3 fingerprints its specs itself, browsers included)
  if (!spec.fingerprint && syncSha256 !== null) {
    (spec as { fingerprint: string }).fingerprint = toHex(syncSha256(utf8(canonicalJson(fingerprintInput(spec))))).slice(0, 32);
  }
  return checked(d, spec);
}

/** The fingerprint's input: the kind's identity, with the envelope's budget when the spec has one. */
const fingerprintInput = (spec: Spec): Record<string, unknown> =>
  (spec.budget ? { ...spec.identity(), budget: budgetIdentity(spec.budget) } : spec.identity());

/** RAPPOR's spec parser, once rappor.ts has registered it (the local kind calls it for mechanism "rappor"). */
export const rapporParser = (): SpecParser | undefined => rapporSupport?.parse;

/** Throws SpecError naming the first of ``fields`` that ``d`` has. */
export function forbid(d: Record<string, unknown>, fields: string[], why: string): void {
  for (const field of fields) if (field in d) throw new SpecError(field, why);
}

function checked(d: Record<string, unknown>, spec: Spec): Spec {
  spec.claimed = d.fingerprint ?? null;
  if (spec.fingerprint) checkClaim(spec);
  return spec;
}

function checkClaim(spec: Spec): void {
  if (spec.claimed !== null && spec.claimed !== spec.fingerprint) throw new SpecError("fingerprint", "does not match the spec");
}

export function validateDomain(domain: unknown): DomainValue[] {
  if (!Array.isArray(domain) || domain.length === 0) {
    throw new SpecError("domain", "must be a list");
  }
  if (domain.length < 2) throw new SpecError("domain", "needs at least 2 entries");
  if (domain.length > MAX_DOMAIN_SIZE) throw new SpecError("domain", "is too long");
  for (const entry of domain) {
    if (typeof entry === "string") {
      if (!wellFormed(entry)) throw new SpecError("domain", "has invalid Unicode");
    } else if (!Number.isInteger(entry)) {
      throw new SpecError("domain", "takes strings and integers");
    } else if (!Number.isSafeInteger(entry)) {
      // JSON.parse has already rounded such an integer: its fingerprint cannot be the collector's
      throw new SpecError("domain", "integers beyond 2**53 are not supported");
    }
  }
  if (new Set(domain.map(domainKey)).size !== domain.length) throw new SpecError("domain", "entries must be unique");
  return domain as DomainValue[];
}

function validateDay(value: unknown): string | null {
  if (value == null) return null;
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const [y, m, day] = value.split("-").map(Number);
    // the month's last day; Date.UTC reads years 0-99 as 1900-1999, which have the same leap years for y >= 1
    if (y >= 1 && m >= 1 && m <= 12 && day >= 1 && day <= new Date(Date.UTC(y, m, 0)).getUTCDate()) return value;
  }
  throw new SpecError("expires", "must be a date YYYY-MM-DD");
}
