/** Distributed campaigns on the device (``client_sdk/distributed.py``): the value becomes a Prio3 measurement,
 * sharded between the leader and the helper with its proof of validity (sdk-js/src/vdaf), each input share sealed
 * with HPKE to its aggregator's config, the report's campaign, fingerprint, id, public share and batch bound in the
 * HPKE info. The prio3 kind loads this module with the first distributed spec (browsers: on demand, in dist/browser/prio3.js),
 * so local-only pages never download it. The prio3 kind (kinds/prio3.ts) makes its reports with {@link Prio3Sealer}. */

import { HpkeError, seal, type HpkeConfig } from "./distributed/hpke.js";
import { AggregatorMismatch, aggregatorConfigs, configuredAggregators, parseHpkeConfigs, type Trusted } from "./distributed/aggregators.js";
import { HELPER, LEADER, b64url, fromB64url, inputShareInfo, reportNonce } from "./distributed/messages.js";
import type { DistributedSpec } from "./distributed/spec.js";
import { InvalidValueType, UnsupportedSpec, ValueNotInDomain } from "./errors.js";
import type { Mechanism, Payload } from "./mechanisms.js";
import type { Spec } from "./spec.js";
import type { ClientOptions } from "./client.js";
import type { Charge, Store } from "./store.js";
import { ctxFor, randSize, shardPrio3 } from "./vdaf/index.js";

export { DistributedSpec, type Prio3Params } from "./distributed/spec.js";

/** What the distributed module reads from a Client's options: the ``aggregators`` and how to reach the helper. */
export type DistributedContext = Pick<ClientOptions, "aggregators" | "url" | "fetch" | "timeout" | "clock">;

export type SealOutcome = Payload | "aggregators_not_configured" | "aggregator_mismatch" | "held";

const HELPER_SETTING = "helper_hpke_configs"; // kept in the store as the Python SDK keeps it in its state file
const HELPER_CONFIG_TTL = 3600; // seconds: the helper may rotate its key; a mismatch refetches sooner
const MISMATCH_REFETCH = 10;

/** One client's view of the aggregators: what the app configured, and the helper's configs from the helper. */
class Agent {
  readonly trusted: Trusted | null;
  readonly fetch: typeof fetch;
  readonly timeout: number;
  readonly clock: () => number;
  #configs: HpkeConfig[] | null = null;
  #fetched = -Infinity;
  #loaded = false;

  constructor(options: DistributedContext) { // the Client's defaults
    this.trusted = options.aggregators == null ? null : configuredAggregators(options.aggregators, options.url.replace(/\/+$/, ""));
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeout = options.timeout ?? 10;
    this.clock = options.clock ?? (() => Date.now() / 1000);
  }

  /** ``GET <helper>/v1/hpke_config`` from the helper itself, without the API key (not the leader's to see); the
   * last answer is kept in ``store``, so a device restarted while the helper is unreachable still seals. */
  async helperConfigs(force: boolean, store: Store): Promise<HpkeConfig[] | null> {
    const trusted = this.trusted!;
    if (trusted.helperPin !== null) return [trusted.helperPin];
    if (!this.#loaded) {
      this.#loaded = true;
      try {
        const kept = JSON.parse((await store.load()).settings[HELPER_SETTING] ?? "null");
        if (kept?.url === trusted.helperUrl) this.#configs = parseHpkeConfigs(kept);
      } catch {
        // nothing kept, or an unreadable record of it: fetched below
      }
    }
    const now = this.clock();
    const age = now - this.#fetched;
    if (this.#configs !== null && age < (force ? MISMATCH_REFETCH : HELPER_CONFIG_TTL)) return this.#configs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeout * 1000);
    try {
      const response = await this.fetch(`${trusted.helperUrl}/v1/hpke_config`, {
        headers: { Accept: "application/json" }, signal: controller.signal, redirect: "manual", credentials: "omit",
      } as RequestInit);
      if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
      this.#configs = parseHpkeConfigs(await response.json());
      this.#fetched = now;
      await store.setSetting(HELPER_SETTING, JSON.stringify({ url: trusted.helperUrl, configs: this.#configs }));
    } catch {
      // unreachable or a bad answer: the configs fetched before (if any) still hold until the next try
    } finally {
      clearTimeout(timer);
    }
    return this.#configs;
  }
}

const agents = new WeakMap<DistributedContext, Agent>(); // one per Client (keyed by its options)

function agentOf(options: DistributedContext): Agent {
  let agent = agents.get(options);
  if (agent === undefined) agents.set(options, (agent = new Agent(options)));
  return agent;
}

const bounded = (name: string, value: unknown, top: number, field: string): number => {
  if (!Number.isInteger(value)) throw new InvalidValueType(`campaign ${name}: ${field} must be an integer`);
  if (!((value as number) >= 0 && (value as number) <= top)) {
    throw new RangeError(`campaign ${name}: ${field} must be in [0, max_measurement = ${top}], got ${value}`);
  }
  return value as number;
};

const indexOf = (spec: Spec, value: unknown): number => {
  const index = spec.indexOf(value);
  if (index === null) throw new ValueNotInDomain(`campaign ${spec.name}: ${JSON.stringify(value)} is not in the domain`);
  return index;
};

/** The Prio3 measurement of ``value`` (``client_sdk.distributed.encode_value``): count a boolean, sum an integer in
 * [0, max_measurement], histogram a domain value (with coin-flip noise also ``coins`` CSPRNG bits per bucket), sumvec
 * ``length`` integers, multihot a collection of at most ``max_weight`` domain values. Throws for anything else. */
export function encodeValue(spec: DistributedSpec, value: unknown): unknown {
  const p = spec.prio3;
  const name = spec.name;
  switch (p.type) {
    case "count":
      if (typeof value === "boolean" || value === 0 || value === 1) return Boolean(value);
      throw new InvalidValueType(`campaign ${name} counts: a value is true or false`);
    case "sum":
      return bounded(name, value, p.max_measurement!, "value");
    case "sumvec":
      if (!Array.isArray(value)) throw new InvalidValueType(`campaign ${name} takes an array of ${p.length} integers`);
      if (value.length !== p.length) throw new RangeError(`campaign ${name} takes an array of length ${p.length}, got ${value.length}`);
      return value.map((entry, i) => bounded(name, entry, p.max_measurement!, `value[${i}]`));
    case "histogram": {
      const index = indexOf(spec, value);
      if (p.noise !== "coins") return index;
      const bits = crypto.getRandomValues(new Uint8Array(p.length! * p.coins!)).map((b) => b & 1);
      return [index, Array.from(bits)];
    }
    default: {
      if (typeof value === "string" || value == null || typeof (value as Iterable<unknown>)[Symbol.iterator] !== "function") {
        throw new InvalidValueType(`campaign ${name} takes a collection (array, Set) of domain values`);
      }
      const indices = new Set([...(value as Iterable<unknown>)].map((entry) => indexOf(spec, entry)));
      if (indices.size > p.max_weight!) {
        throw new RangeError(`campaign ${name} takes at most max_weight = ${p.max_weight} distinct values, got ${indices.size}`);
      }
      return Array.from({ length: p.length! }, (_, i) => indices.has(i));
    }
  }
}

/** What the sealing path reads from a distributed kind's spec (prio3's DistributedSpec, poplar1's Poplar1Spec). */
export interface SealedSpec extends Spec {
  readonly delta: number | null;
  readonly aggregators: unknown;
  batchAt(now: number): string;
  policyFor(policy: Charge["policy"]): Charge["policy"];
}

/** The envelope of one report (``seal_report``): ``shards``' public share, and each input share sealed with HPKE to
 * its aggregator, the info binding campaign, fingerprint, report id, role, public share and batch. Any distributed
 * kind's reports (prio3, poplar1) go through here. */
export async function sealShards(spec: Spec, shards: { publicShare: Uint8Array; inputShares: readonly Uint8Array[] },
  leader: HpkeConfig, helper: HpkeConfig, reportId: string, batch: string): Promise<Payload> {
  const { publicShare, inputShares } = shards;
  const payload: Record<string, unknown> = { public_share: b64url(publicShare) };
  for (const [key, role, config, share] of [["leader_share", LEADER, leader, inputShares[0]],
    ["helper_share", HELPER, helper, inputShares[1]]] as const) {
    const info = inputShareInfo(spec.name, spec.fingerprint, reportId, role, publicShare, batch);
    payload[key] = { config_id: config.id, ciphertext: b64url(await seal(fromB64url(config.public_key), share!, info)) };
  }
  payload.batch = batch;
  return payload as unknown as Payload;
}

/** Shard ``measurement`` and seal each input share: the report's payload for ``batch`` (``seal_report``). */
export async function sealReport(spec: DistributedSpec, measurement: unknown, leader: HpkeConfig, helper: HpkeConfig,
  reportId: string, batch: string, shard: typeof shardPrio3 = shardPrio3): Promise<Payload> {
  const rand = new Uint8Array(randSize(spec.prio3));
  for (let i = 0; i < rand.length; i += 65536) crypto.getRandomValues(rand.subarray(i, i + 65536));
  const shards = shard(spec.prio3, measurement, reportNonce(reportId), rand, ctxFor(spec.fingerprint));
  return sealShards(spec, shards, leader, helper, reportId, batch);
}

/** A distributed kind's mechanism: ``perturb`` (the kind's) validates and encodes synchronously, so a bad value
 * throws from ``record``; ``seal`` checks the aggregators' configs against the app's configuration, then hands them
 * to the kind's ``sealWith`` (shard and {@link sealShards}). */
export abstract class DistributedSealer implements Mechanism {
  constructor(readonly spec: SealedSpec) {}

  abstract perturb(value: unknown): Payload;

  /** The payload of ``measurement`` sealed to ``leader`` and ``helper`` for ``batch``. */
  abstract sealWith(measurement: unknown, leader: HpkeConfig, helper: HpkeConfig, reportId: string, batch: string
  ): Promise<Payload>;

  /** Shard and seal for the batch of ``charge.now``, completing the ledger's ``charge``: the report's batch (one
   * report per batch), its delta, and the batch as the period of a policy that names none. */
  async seal(measurement: unknown, reportId: string, charge: Charge, context: DistributedContext, store: Store
  ): Promise<SealOutcome> {
    const batch = charge.batch = this.spec.batchAt(charge.now);
    charge.delta = this.spec.delta ?? undefined;
    charge.policy = this.spec.policyFor(charge.policy);
    const agent = agentOf(context);
    if (agent.trusted === null) return "aggregators_not_configured";
    let configs: [HpkeConfig, HpkeConfig] | null = null;
    for (const force of [false, true]) {
      const helperConfigs = await agent.helperConfigs(force, store);
      if (helperConfigs === null) return "held"; // the helper has not answered yet: the value waits in memory
      try {
        configs = aggregatorConfigs(this.spec.aggregators, agent.trusted, helperConfigs);
        break;
      } catch (error) {
        if (!(error instanceof AggregatorMismatch)) throw new UnsupportedSpec(`campaign ${this.spec.name}: ${(error as Error).message}`);
        if (force) return "aggregator_mismatch";
      }
    }
    try {
      return await this.sealWith(measurement, configs![0], configs![1], reportId, batch);
    } catch (error) {
      if (error instanceof HpkeError) throw new UnsupportedSpec(`campaign ${this.spec.name}: ${error.message}`);
      throw error;
    }
  }
}

/** The mechanism a Client uses for a prio3 spec: ``perturb`` encodes the value as its Prio3 measurement. */
export class Prio3Sealer extends DistributedSealer {
  declare readonly spec: DistributedSpec;

  perturb(value: unknown): Payload {
    return encodeValue(this.spec, value) as Payload;
  }

  sealWith(measurement: unknown, leader: HpkeConfig, helper: HpkeConfig, reportId: string, batch: string): Promise<Payload> {
    return sealReport(this.spec, measurement, leader, helper, reportId, batch);
  }
}
