/** Distributed (Prio3) campaign specs, validated exactly as ``Spec._distributed_from_dict`` in client_sdk/spec.py
 * (the same field named in each SpecError) with the same identity, so the same fingerprint. */

import { PyFloat, canonicalJson } from "../canonical.js";
import { SpecError } from "../errors.js";
import { toHex, utf8 } from "../hash.js";
import { sha256 } from "../sha256.js";
import { Spec, validateDomain } from "../spec.js";
import type { ReportPolicy } from "../store.js";
import { batchOf } from "./messages.js";
import { deriveChunkLength, encodedLength, type Prio3Params as SharderParams, type Prio3Type } from "../vdaf/index.js";

export const PRIO3_TYPES: string[] = ["count", "sum", "histogram", "sumvec", "multihot"];
const NOISE_MODES = ["gaussian", "laplace", "coins"];
const MAX_PRIO3_LENGTH = 4096;
const MAX_PRIO3_ENCODED_LENGTH = 16384;
const MAX_PRIO3_MEASUREMENT = 2 ** 32 - 1;
const MAX_COINS = 64;
const MAX_MIN_BATCH = 2 ** 31;
/** A batch's length in seconds by ``window`` (``client_sdk.spec_prio3.WINDOW_SECONDS``): minutes or hours dividing a
 * day, or the day. */
export const WINDOW_SECONDS: Record<string, number> = Object.fromEntries([
  ...[1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].map((n) => [`${n}m`, 60 * n]),
  ...[1, 2, 3, 4, 6, 8, 12].map((n) => [`${n}h`, 3600 * n]), ["day", 86_400]]);
const WINDOWS = Object.keys(WINDOW_SECONDS);

/** The Prio3 circuit and the release's DP parameters (``client_sdk.spec.Prio3Params``; field names as in JSON). */
export interface Prio3Params extends SharderParams {
  type: Prio3Type;
  length: number | null;
  max_measurement: number | null;
  max_weight: number | null;
  chunk_length: number | null;
  noise: string;
  coins: number | null;
  honest_fraction: number | null;
  min_batch: number;
  window: string;
}

/** A distributed campaign's spec: mechanism "prio3", its Prio3 parameters at ``prio3``, the listing's
 * ``aggregators`` block (the leader's and the helper's HPKE configs, checked before sealing) at ``aggregators``. */
export class DistributedSpec extends Spec {
  readonly trust = "distributed";
  constructor(name: string, epsilon: number, domain: (string | number)[] | null, expires: string | null,
    readonly delta: number | null, readonly prio3: Prio3Params, readonly aggregators: unknown) {
    super(name, "prio3", epsilon, domain, null, null, null, null, expires);
    (this as { fingerprint: string }).fingerprint = toHex(sha256(utf8(canonicalJson(this.identity())))).slice(0, 32);
  }

  /** The length of one batch, in seconds (its ``window``). */
  get batchSeconds(): number {
    return WINDOW_SECONDS[this.prio3.window]!;
  }

  /** ``policy`` with this campaign's batch as its period if it names none (``ReportPolicy.for_period``). */
  policyFor(policy: ReportPolicy): ReportPolicy {
    return policy.periodSeconds === null ? { ...policy, periodSeconds: this.batchSeconds } : policy;
  }

  /** The batch a report made at ``now`` (seconds since the epoch) is for (``Prio3Params.batch_at``). */
  batchAt(now: number): string {
    return batchOf(now, this.batchSeconds);
  }

  /** A distributed report charges the release's (epsilon, delta). */
  override charge(): [number, number] {
    return [this.epsilon, this.delta ?? 0];
  }

  override identity(): Record<string, unknown> {
    const p = this.prio3;
    const out: Record<string, unknown> = { name: this.name, mechanism: "prio3", prio3: p.type, noise: p.noise,
      min_batch: p.min_batch, window: p.window, trust: "distributed", epsilon: new PyFloat(this.epsilon) };
    if (p.type === "sumvec") out.length = p.length;
    for (const key of ["max_measurement", "max_weight", "chunk_length", "coins"] as const) {
      if (p[key] !== null) out[key] = p[key];
    }
    if (p.honest_fraction !== null) out.honest_fraction = new PyFloat(p.honest_fraction);
    if (this.delta !== null) out.delta = new PyFloat(this.delta);
    if (this.domain) out.domain = this.domain;
    if (this.expires) out.expires = this.expires;
    return out;
  }
}

function integer(field: string, value: unknown, low: number, high: number): number {
  if (!Number.isInteger(value) || (value as number) < low || (value as number) > high) {
    throw new SpecError(field, `must be an integer in [${low}, ${high}]`);
  }
  return value as number;
}

/** A distributed spec from its JSON object (name, expires and delta already checked by spec.ts). */
export function distributedFromDict(d: Record<string, unknown>, name: string, expires: string | null,
  delta: number | null): DistributedSpec {
  if ((d.mechanism ?? "prio3") !== "prio3") throw new SpecError("mechanism", "must be prio3 (or absent) with trust distributed");
  for (const field of ["range", "catch_all", "rappor", "candidates", "unit"]) {
    if (field in d) throw new SpecError(field, "not allowed with trust distributed");
  }
  const kind = d.prio3 as Prio3Type;
  if (!PRIO3_TYPES.includes(kind)) throw new SpecError("prio3", `must be one of ${PRIO3_TYPES}`);
  const epsilon = d.epsilon;
  if (typeof epsilon !== "number" || !(epsilon >= 0.01 && epsilon <= 20)) {
    throw new SpecError("epsilon", "must be a number in [0.01, 20]");
  }
  const noise = d.noise as string;
  if (!NOISE_MODES.includes(noise)) throw new SpecError("noise", `must be one of ${NOISE_MODES}`);
  if (noise === "coins" && kind !== "histogram") throw new SpecError("noise", "coins is only available for prio3 histogram");
  if ((noise === "gaussian" || noise === "coins") && delta == null) throw new SpecError("delta", `is required with noise ${noise}`);
  const wanted = (field: string, used: boolean, why: string): boolean => {
    if (field in d && !used) throw new SpecError(field, `only allowed ${why}`);
    if (used && !(field in d) && ["domain", "max_measurement", "length", "max_weight"].includes(field)) {
      throw new SpecError(field, `is required for prio3 ${kind}`);
    }
    return used;
  };
  let domain: (string | number)[] | null = null;
  if (wanted("domain", kind === "histogram" || kind === "multihot", "for prio3 histogram and multihot")) {
    domain = validateDomain(d.domain);
    if (domain.length > MAX_PRIO3_LENGTH) throw new SpecError("domain", `has more than ${MAX_PRIO3_LENGTH} entries`);
  }
  let maxMeasurement: number | null = null;
  let length: number | null = null;
  let maxWeight: number | null = null;
  if (wanted("max_measurement", kind === "sum" || kind === "sumvec", "for prio3 sum and sumvec")) {
    maxMeasurement = integer("max_measurement", d.max_measurement, 1, MAX_PRIO3_MEASUREMENT);
  }
  if (wanted("length", kind === "sumvec", "for prio3 sumvec")) length = integer("length", d.length, 1, MAX_PRIO3_LENGTH);
  if (domain !== null) length = domain.length;
  if (wanted("max_weight", kind === "multihot", "for prio3 multihot")) {
    maxWeight = integer("max_weight", d.max_weight, 1, domain?.length ?? 0);
  }
  let coins: number | null = null;
  let honest: number | null = null;
  if (wanted("coins", noise === "coins", "with noise coins")) {
    coins = integer("coins", d.coins ?? 1, 1, MAX_COINS);
    const fraction = d.honest_fraction ?? 0.5;
    if (typeof fraction !== "number" || !(fraction > 0 && fraction <= 1)) {
      throw new SpecError("honest_fraction", "must be a number with 0 < honest_fraction <= 1");
    }
    honest = fraction;
  } else if ("honest_fraction" in d) {
    throw new SpecError("honest_fraction", "only allowed with noise coins");
  }
  const minBatch = integer("min_batch", d.min_batch ?? 100, 2, MAX_MIN_BATCH);
  const window = d.window ?? "day";
  if (typeof window !== "string" || !Object.hasOwn(WINDOW_SECONDS, window)) {
    throw new SpecError("window", `must be one of ${WINDOWS} (a batch's length: minutes, hours or a day)`);
  }
  const params: Prio3Params = { type: kind, length, max_measurement: maxMeasurement, max_weight: maxWeight,
    chunk_length: null, noise, coins, honest_fraction: honest, min_batch: minBatch, window };
  const encoded = encodedLength(params);
  if (encoded > MAX_PRIO3_ENCODED_LENGTH) {
    throw new SpecError(noise === "coins" ? "coins" : "length", `the encoded measurement would have ${encoded} field elements`);
  }
  params.chunk_length = deriveChunkLength(params);
  return new DistributedSpec(name, epsilon, domain, expires, delta ?? null, params, d.aggregators ?? null);
}
