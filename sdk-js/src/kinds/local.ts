/** The local kind: the randomizers (``client_sdk/kinds/local.py``), their spec fields (mechanism, domain, catch_all,
 * range, RAPPOR's rappor and candidates; the envelope's unit for numeric mechanisms) validated as the Python SDK
 * validates them, and their reports. With trust ``shuffled`` the reports pass through a shuffler (the app sends to
 * it as to a collector), which batches them by the spec's shuffle_batch, shuffle_timeout and short_batch
 * (``client_sdk/kinds/shuffle_params.py``); those and the trust model enter the fingerprint. The categorical randomizers come with it; the numeric ones and RAPPOR load on
 * demand (numeric.ts, rappor.ts). Browsers load this module with the first local spec (dist/browser/local.js). */

import { PyFloat } from "../canonical.js";
import { GRR, Hadamard, OLH, UnaryEncoding } from "../categorical.js";
import { loadMechanism } from "../client.js";
import { SpecError } from "../errors.js";
import { isLoaded, localMechanism, registerMechanism } from "../mechanisms.js";
import { expRounded } from "../randomness.js";
import {
  CATEGORICAL_MECHANISMS, MAX_EPSILON, MIN_EPSILON, NUMERIC_MECHANISMS, Spec, forbid, rapporParser, text,
  validateDomain, type DomainValue,
} from "../spec.js";
import { notLoaded, provideKind, type CampaignKind, type Envelope } from "./index.js";

const ALLOWED = [...CATEGORICAL_MECHANISMS, ...NUMERIC_MECHANISMS, "rappor", "auto"];
const MAX_RANGE_MAGNITUDE = 1e15;
const MIN_RANGE_WIDTH = 1e-9;
const AUTO_OUE_MAX_DOMAIN = 4096;
const isFinite = Number.isFinite as (v: unknown) => v is number;

/** The lowest-variance frequency oracle: GRR when d < 3e + 2, else OUE up to 4,096 values, else OLH. */
export function resolveAuto(domainSize: number, epsilon: number): string {
  const e = expRounded(epsilon);
  if (domainSize < 3 * e + 2) return "grr";
  return domainSize <= AUTO_OUE_MAX_DOMAIN ? "oue" : "olh";
}

function validateRange(value: unknown): [number, number] {
  if (!Array.isArray(value) || value.length !== 2) throw new SpecError("range", "must be [low, high]");
  const [low, high] = value;
  if (!isFinite(low) || !isFinite(high)) throw new SpecError("range", "must be finite numbers");
  if (Math.max(Math.abs(low), Math.abs(high)) > MAX_RANGE_MAGNITUDE) {
    throw new SpecError("range", "must be within [-1e15, 1e15]");
  }
  if (!(high - low >= MIN_RANGE_WIDTH)) throw new SpecError("range", "needs high - low >= 1e-9");
  return [low, high];
}

const SHUFFLE_FIELDS = ["short_batch", "shuffle_batch", "shuffle_timeout"];
const MAX_SHUFFLE_TIMEOUT = 30 * 86400; // seconds (the message below says it)

/** A shuffled spec's batching rule as its fingerprint holds it (null for trust local); SpecError naming the field. */
function shuffleRule(d: Record<string, unknown>, trust: string): Record<string, unknown> | null {
  if (trust !== "shuffled") {
    forbid(d, SHUFFLE_FIELDS, "only with trust shuffled");
    return null;
  }
  const batch = d.shuffle_batch;
  if (!("shuffle_batch" in d)) throw new SpecError("shuffle_batch", "is required with trust shuffled");
  if (!Number.isInteger(batch) || !((batch as number) >= 2 && (batch as number) <= 1e6)) {
    throw new SpecError("shuffle_batch", "must be an integer in [2, 1000000]");
  }
  const timeout = d.shuffle_timeout;
  if (timeout != null && !(isFinite(timeout) && timeout > 0 && timeout <= MAX_SHUFFLE_TIMEOUT)) {
    throw new SpecError("shuffle_timeout", "must be in (0, 2592000] seconds");
  }
  const short = "short_batch" in d ? d.short_batch : "hold";
  if (short !== "hold" && short !== "send") throw new SpecError("short_batch", "must be hold or send");
  if (short === "send" && timeout == null) throw new SpecError("shuffle_timeout", "is required with short_batch send");
  return { shuffle_batch: batch, short_batch: short, ...(timeout == null ? {} : { shuffle_timeout: new PyFloat(timeout as number) }) };
}

function parse(d: Record<string, unknown>, envelope: Envelope): Spec {
  const shuffle = shuffleRule(d, envelope.trust);
  const spec = parseLocal(d, envelope);
  return shuffle ? Object.assign(spec, { shuffle }) : spec;
}

function parseLocal(d: Record<string, unknown>, { name, expires, delta }: Envelope): Spec {
  const mechanism = d.mechanism;
  if (typeof mechanism !== "string" || !ALLOWED.includes(mechanism)) {
    throw new SpecError("mechanism", `must be one of ${ALLOWED}`);
  }
  if (mechanism === "rappor") {
    const rappor = rapporParser();
    if (rappor === undefined) throw notLoaded("mechanism", mechanism);
    return rappor(d, name, expires, delta);
  }
  forbid(d, ["rappor", "candidates"], "only with mechanism rappor");
  const epsilon = d.epsilon;
  if (!isFinite(epsilon) || !(epsilon >= MIN_EPSILON && epsilon <= MAX_EPSILON)) {
    throw new SpecError("epsilon", `must be a number in [0.01, 20]${isFinite(epsilon) ? (epsilon < 1 ? ", too small" : ", too large") : ""}`);
  }
  if (NUMERIC_MECHANISMS.includes(mechanism)) {
    forbid(d, ["domain", "catch_all"], "not with a numeric mechanism");
    // 1-16 code points, none a control character (C0, DEL, C1) or a lone surrogate
    const unit = d.unit;
    if (unit != null && !(text(unit, 16) && /^\P{Cc}+$/u.test(unit))) {
      throw new SpecError("unit", "must be 1-16 characters, no controls");
    }
    return new Spec(name, mechanism, epsilon, null, null, validateRange(d.range), null, null, expires, unit);
  }
  forbid(d, ["range", "unit"], "not with a categorical mechanism");
  const domain = validateDomain(d.domain);
  const catchAll = d.catch_all;
  let catchAllValue: DomainValue | null = null;
  if (catchAll != null) {
    if (!domain.some((v) => v === catchAll)) throw new SpecError("catch_all", "must be in the domain");
    catchAllValue = catchAll as DomainValue;
  }
  const resolved = mechanism === "auto" ? resolveAuto(domain.length, epsilon) : mechanism;
  return new Spec(name, resolved, epsilon, domain, catchAllValue, null, null, null, expires);
}

/** Load the randomizer's module of a spec (or of its data). */
const load = ({ mechanism }: { mechanism?: unknown }): Promise<void> => loadMechanism(mechanism as string);

export const kind: CampaignKind = {
  name: "local",
  trustModels: ["local", "shuffled"],
  fields: ["mechanism", "domain", "catch_all", "range", "rappor", "candidates", ...SHUFFLE_FIELDS],
  parse,
  reporter: localMechanism,
  // a RAPPOR spec is parsed by RAPPOR's module
  ready: (d) => d.mechanism !== "rappor" || rapporParser() !== undefined,
  prepare: load,
  reporterReady: (spec) => isLoaded(spec.mechanism),
  prepareReporter: load,
};

registerMechanism("grr", (spec, rng) => new GRR(spec, rng));
for (const name of ["sue", "oue"]) registerMechanism(name, (spec, rng) => new UnaryEncoding(spec, rng));
registerMechanism("olh", (spec, rng) => new OLH(spec, rng));
registerMechanism("hadamard", (spec, rng) => new Hadamard(spec, rng));
provideKind(kind);
