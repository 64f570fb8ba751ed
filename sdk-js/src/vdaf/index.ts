/** Prio3 for distributed campaigns (draft-irtf-cfrg-vdaf-20): the device side, sharding, as the Python SDK's
 * ``client_sdk/vdaf`` and ``client_sdk/distributed.py`` do it. A separate entry point (``ldp-telemetry/vdaf``; in
 * browsers ``dist/browser/vdaf.js``, loaded on demand) so that local-only pages never download it.
 *
 * ``shardPrio3(params, measurement, nonce, rand, ctx)`` takes the campaign's prio3 parameters as the spec lists them
 * (``{type, length, max_measurement, max_weight, chunk_length, noise, coins}``) and a Prio3 measurement: count a
 * boolean, sum an integer in [0, max_measurement], sumvec an array of ``length`` such integers, histogram a bucket
 * index (with ``noise: "coins"`` also ``[index, coinBits]``), multihot an array of ``length`` booleans with at most
 * ``max_weight`` true. TypeError or RangeError for a measurement or parameters the circuit does not take. */
import { Prio3, prio3Count, prio3Histogram, prio3HistogramWithCoins, prio3MultihotCountVec, prio3Sum, prio3SumVec } from "./prio3.js";

export { Field, Field64, Field128 } from "./field.js";
export { XofTurboShake128 } from "./xof.js";
export { NONCE_SIZE, Prio3, type Shards, prio3Count, prio3Histogram, prio3HistogramWithCoins, prio3MultihotCountVec,
  prio3Sum, prio3SumVec } from "./prio3.js";

export type Prio3Type = "count" | "sum" | "histogram" | "sumvec" | "multihot";

/** A distributed campaign's Prio3 parameters (the Python SDK's ``Prio3Params``; snake_case as in the spec). */
export interface Prio3Params {
  type: Prio3Type;
  length?: number | null;
  max_measurement?: number | null;
  max_weight?: number | null;
  /** Derived by the spec (``deriveChunkLength``) when absent. */
  chunk_length?: number | null;
  noise?: string;
  coins?: number | null;
}

/** The Prio3 application context of a campaign: ``"ldp-telemetry/v1 " + fingerprint`` (ASCII). */
export const CTX_PREFIX = "ldp-telemetry/v1 ";

export function ctxFor(fingerprint: string): Uint8Array {
  return new TextEncoder().encode(CTX_PREFIX + fingerprint);
}

function bitLength(n: number): number {
  return n > 0 ? n.toString(2).length : 0;
}

/** Field elements of the encoded measurement (what the range checks run over). */
export function encodedLength(params: Prio3Params): number {
  const length = params.length ?? 0;
  const top = params.max_measurement ?? 0;
  switch (params.type) {
    case "count": return 1;
    case "sum": return bitLength(top);
    case "histogram": return length * (1 + (params.noise === "coins" ? params.coins ?? 0 : 0));
    case "sumvec": return length * bitLength(top);
    case "multihot": return length + bitLength(params.max_weight ?? 0);
  }
}

/** The ParallelSum chunk length the spec derives: max(1, isqrt(encoded length)); null for count and sum. */
export function deriveChunkLength(params: Prio3Params): number | null {
  if (params.type === "count" || params.type === "sum") return null;
  const n = encodedLength(params);
  let root = Math.floor(Math.sqrt(n));
  while (root * root > n) root--;
  while ((root + 1) * (root + 1) <= n) root++;
  return Math.max(1, root);
}

function required(params: Prio3Params, key: "length" | "max_measurement" | "max_weight" | "coins"): number {
  const value = params[key];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`prio3 ${params.type}: ${key} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

const TYPES: readonly string[] = ["count", "sum", "histogram", "sumvec", "multihot"];

function build(params: Prio3Params): Prio3 {
  if (!TYPES.includes(params.type)) throw new RangeError(`prio3: type must be one of ${TYPES.join(", ")}, got ${JSON.stringify(params.type)}`);
  if (params.type === "count") return prio3Count();
  if (params.type === "sum") return prio3Sum(required(params, "max_measurement"));
  const chunk = params.chunk_length ?? deriveChunkLength(params) ?? 1;
  const length = required(params, "length");
  switch (params.type) {
    case "histogram":
      return params.noise === "coins" ? prio3HistogramWithCoins(length, required(params, "coins"), chunk)
        : prio3Histogram(length, chunk);
    case "sumvec": return prio3SumVec(length, required(params, "max_measurement"), chunk);
    default: return prio3MultihotCountVec(length, required(params, "max_weight"), chunk);
  }
}

const instances = new Map<string, Prio3>();

/** The campaign's Prio3 instance (two aggregators), memoized per parameters. */
export function prio3For(params: Prio3Params): Prio3 {
  const key = JSON.stringify([params.type, params.length, params.max_measurement, params.max_weight,
    params.chunk_length, params.noise === "coins" ? params.coins : null]);
  let vdaf = instances.get(key);
  if (vdaf === undefined) {
    vdaf = build(params);
    if (instances.size >= 64) instances.delete(instances.keys().next().value as string);
    instances.set(key, vdaf);
  }
  return vdaf;
}

/** Bytes of randomness one report's sharding consumes. */
export function randSize(params: Prio3Params): number {
  return prio3For(params).randSize;
}

/** Shard ``measurement`` between the leader and the helper: the encoded public share and input shares (leader
 * first). ``rand`` (randSize(params) bytes) defaults to fresh bytes from crypto.getRandomValues; ``nonce`` is the
 * report id's 16 bytes; ``ctx`` is {@link ctxFor}(fingerprint). */
export function shardPrio3(params: Prio3Params, measurement: unknown, nonce: Uint8Array, rand: Uint8Array | null | undefined,
  ctx: Uint8Array): { publicShare: Uint8Array; inputShares: [Uint8Array, Uint8Array] } {
  const vdaf = prio3For(params);
  const bytes = rand ?? crypto.getRandomValues(new Uint8Array(vdaf.randSize));
  const { publicShare, inputShares } = vdaf.shard(ctx, measurement, nonce, bytes);
  return { publicShare, inputShares: [inputShares[0], inputShares[1]] };
}
