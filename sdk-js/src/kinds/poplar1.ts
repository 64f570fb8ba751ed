/** The poplar1 kind (``client_sdk/kinds/poplar1/``): frequent strings of an unknown dictionary found by the leader's
 * and the helper's Poplar1 prefix-tree walk. A string is its UTF-8 bytes (or a Uint8Array as given), cut
 * (``overflow: "truncate"``) or refused (``"refuse"``) at ``bits / 8`` bytes, padded with 0x00 to exactly that, its
 * bits most significant first; the report is Poplar1's public share and two input shares, sealed through the same
 * distributed envelope as a Prio3 report (distributed.ts ``sealShards``). The spec's identity, hence its fingerprint,
 * is the Python kind's. Loaded with the first poplar1 spec (browsers: dist/browser/poplar1.js, which imports the
 * Poplar1 sharder, IDPF and XofFixedKeyAes128 within itself: never downloaded by a local-campaign page). */

import { PyFloat } from "../canonical.js";
import { DistributedSealer, sealShards } from "../distributed.js";
import type { HpkeConfig } from "../distributed/hpke.js";
import { batchOf, reportNonce } from "../distributed/messages.js";
import { InvalidValue, InvalidValueType, SpecError } from "../errors.js";
import type { Payload } from "../mechanisms.js";
import { Spec } from "../spec.js";
import type { ReportPolicy } from "../store.js";
import { ctxFor } from "../vdaf/index.js";
import { poplar1For, shardPoplar1, type Poplar1Shards } from "../vdaf/poplar1.js";
import { provideKind, type CampaignKind, type Envelope } from "./index.js";

/** The bounds and defaults (``client_sdk/kinds/poplar1/limits.py``). */
export const KIND_NAME = "poplar1";
const FIELDS = ["bits", "overflow", "threshold", "stride", "min_batch", "aggregators"];
const MIN_BITS = 8, MAX_BITS = 256, MAX_STRIDE = 8, DEFAULT_STRIDE = 4, MAX_MIN_BATCH = 2 ** 31;
const OVERFLOWS = ["truncate", "refuse"];
const NOISE = "gaussian";
const DAY = 86_400;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A poplar1 campaign's parameters (``Poplar1Params``; field names as in JSON). */
export interface Poplar1Params {
  bits: number;
  overflow: string;
  threshold: number;
  stride: number;
  min_batch: number;
}

const integer = (field: string, value: unknown, low: number, high: number): number => {
  if (typeof value !== "number" || !Number.isInteger(value) || value < low || value > high) {
    throw new SpecError(field, `must be an integer in [${low}, ${high}]`);
  }
  return value;
};

/** The parameters of a spec's JSON (``params_from_dict``): SpecError naming the field. */
export function poplar1ParamsFromDict(d: Record<string, unknown>, delta: number | null): Poplar1Params {
  const epsilon = d.epsilon;
  if (typeof epsilon !== "number" || !(epsilon >= 0.01 && epsilon <= 20)) throw new SpecError("epsilon", "must be a number in [0.01, 20]");
  if (delta == null) throw new SpecError("delta", "is required: each level's noise is discrete Gaussian, calibrated at delta");
  const bits = d.bits;
  if (typeof bits !== "number" || !Number.isInteger(bits) || bits < MIN_BITS || bits > MAX_BITS || bits % 8) {
    throw new SpecError("bits", `must be a multiple of 8 in [${MIN_BITS}, ${MAX_BITS}] (strings are bits / 8 bytes)`);
  }
  const overflow = d.overflow === undefined ? "truncate" : d.overflow; // null is refused, as in Python
  if (!OVERFLOWS.includes(overflow as string)) throw new SpecError("overflow", `must be one of ${OVERFLOWS}`);
  const threshold = d.threshold;
  if (typeof threshold !== "number" || !Number.isFinite(threshold) || !(threshold > 0 && threshold < 1)) {
    throw new SpecError("threshold", "must be a number with 0 < threshold < 1 (a fraction of the batch's reports)");
  }
  const stride = integer("stride", d.stride === undefined ? DEFAULT_STRIDE : d.stride, 1, MAX_STRIDE);
  if (bits % stride) throw new SpecError("stride", `must divide bits = ${bits}`);
  // required, as in the Python kind (no default: a spec without it is refused by both SDKs)
  if (d.min_batch === undefined) throw new SpecError("min_batch", "is required: the fewest reports a level may aggregate (at least 2)");
  const minBatch = integer("min_batch", d.min_batch, 2, MAX_MIN_BATCH);
  return { bits, overflow: overflow as string, threshold, stride, min_batch: minBatch };
}

/** A poplar1 spec: the envelope, the parameters, the listing's aggregators block; a report's batch is a UTC day. */
export class Poplar1Spec extends Spec {
  readonly trust = "distributed";
  constructor(envelope: Envelope, epsilon: number, readonly delta: number, readonly params: Poplar1Params,
    readonly aggregators: unknown) {
    super(envelope.name, KIND_NAME, epsilon, null, null, null, null, null, envelope.expires);
  }

  /** The batch a report made at ``now`` (seconds since the epoch) is for: its UTC day. */
  batchAt(now: number): string {
    return batchOf(now, DAY);
  }

  /** ``policy`` with the day as its period if it names none. */
  policyFor(policy: ReportPolicy): ReportPolicy {
    return policy.periodSeconds === null ? { ...policy, periodSeconds: DAY } : policy;
  }

  /** The whole collection's (epsilon, delta), once per batch. */
  override charge(): [number, number] {
    return [this.epsilon, this.delta];
  }

  override identity(): Record<string, unknown> {
    const p = this.params;
    const out: Record<string, unknown> = { name: this.name, kind: KIND_NAME, bits: p.bits, overflow: p.overflow,
      threshold: new PyFloat(p.threshold), stride: p.stride, min_batch: p.min_batch, noise: NOISE, trust: "distributed",
      epsilon: new PyFloat(this.epsilon), delta: new PyFloat(this.delta) };
    if (this.expires) out.expires = this.expires;
    return out;
  }
}

/** The measurement of ``value`` (``encode_value``): a string's UTF-8 bytes or a Uint8Array's, cut or refused at
 * ``bits / 8`` bytes, padded with 0x00, as ``bits`` booleans, most significant bit of the first byte first. */
export function encodePoplar1Value(params: Poplar1Params, value: unknown): boolean[] {
  let data: Uint8Array;
  if (typeof value === "string") {
    if (LONE_SURROGATE.test(value)) throw new InvalidValue("a poplar1 value must be well-formed Unicode (a lone surrogate has no UTF-8)");
    data = new TextEncoder().encode(value);
  } else if (value instanceof Uint8Array) {
    data = value;
  } else {
    throw new InvalidValueType(`a poplar1 campaign takes a string or a Uint8Array, got ${value === null ? "null" : typeof value}`);
  }
  const length = params.bits / 8;
  if (data.length > length) {
    if (params.overflow === "refuse") {
      throw new InvalidValue(`the value is ${data.length} bytes, above the campaign's ${length} (bits / 8; overflow 'refuse')`);
    }
    data = data.subarray(0, length);
  }
  const bits: boolean[] = [];
  for (let i = 0; i < params.bits; i++) bits.push((((data[i >> 3] ?? 0) >> (7 - (i & 7))) & 1) === 1);
  return bits;
}

/** The payload of one poplar1 report: shard with ``rand`` (fresh CSPRNG bytes by default), then the distributed
 * envelope. */
export async function sealPoplar1(spec: Poplar1Spec, measurement: readonly boolean[], leader: HpkeConfig, helper: HpkeConfig,
  reportId: string, batch: string, rand?: Uint8Array): Promise<Payload> {
  const shards: Poplar1Shards = await shardPoplar1(spec.params.bits, measurement, reportNonce(reportId),
    rand ?? crypto.getRandomValues(new Uint8Array(poplar1For(spec.params.bits).randSize)), ctxFor(spec.fingerprint));
  return sealShards(spec, shards, leader, helper, reportId, batch);
}

/** A poplar1 campaign's mechanism: the string encoded on ``record``, sharded and sealed before it is queued. */
export class Poplar1Sealer extends DistributedSealer {
  declare readonly spec: Poplar1Spec;

  perturb(value: unknown): Payload {
    return encodePoplar1Value(this.spec.params, value) as unknown as Payload;
  }

  sealWith(measurement: unknown, leader: HpkeConfig, helper: HpkeConfig, reportId: string, batch: string): Promise<Payload> {
    return sealPoplar1(this.spec, measurement as boolean[], leader, helper, reportId, batch);
  }
}

export const kind: CampaignKind = {
  name: KIND_NAME,
  trustModels: ["distributed"],
  fields: FIELDS,
  parse: (d, envelope) => {
    for (const field of ["mechanism", "domain", "range", "rappor", "candidates", "unit", "prio3"]) {
      if (field in d) throw new SpecError(field, "not allowed in a poplar1 campaign");
    }
    const params = poplar1ParamsFromDict(d, envelope.delta);
    return new Poplar1Spec(envelope, d.epsilon as number, envelope.delta!, params, d.aggregators ?? null);
  },
  reporter: (spec) => new Poplar1Sealer(spec as Poplar1Spec),
};

provideKind(kind);
export { shardPoplar1 } from "../vdaf/poplar1.js"; // for the browser test and benchmark (scripts/browser-poplar1.mjs)
