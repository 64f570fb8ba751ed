/** What makes a spec's reports (a kind's reporter; the local kind's randomizers register here by mechanism), one
 * entry point, ``mechanismFromSpec``. The randomizers draw exactly as the Python SDK's ``client_sdk/mechanisms``. */

import { loadedKind, notLoaded } from "./kinds/index.js";
import { secureRandom, type RandomSource } from "./randomness.js";
import type { Spec } from "./spec.js";
import type { Charge, Store } from "./store.js";

export type Payload = number | string | (string | number)[] | { cohort: number; bits: string };

export interface Mechanism {
  readonly spec: Spec;
  perturb(value: unknown): Payload;
  /** A kind that seals (prio3): the payload of the encoded value, completing the ledger's ``charge`` (its batch and
   * delta), or the status the report waits or fails with. ``context`` is the Client's options; ``value`` the value
   * recorded (what ``encoded`` was made from). */
  seal?(encoded: unknown, reportId: string, charge: Charge, context: object, store: Store, value: unknown): Promise<Payload | string>;
}

export interface MechanismOptions {
  rng?: RandomSource;
  /** RAPPOR: the device secret (at least 32 bytes); without it a fresh one protects nothing across sessions. */
  secret?: Uint8Array;
  cohort?: number;
}

type Factory = (spec: Spec, rng: RandomSource, options: MechanismOptions) => Mechanism;
const factories = new Map<string, Factory>();

/** Make the local kind build mechanism ``name`` with ``factory`` (each randomizer's module registers itself). */
export function registerMechanism(name: string, factory: Factory): void {
  factories.set(name, factory);
}

/** Whether the local kind can build mechanism ``name`` now (its module is loaded; prio3: the kind is). */
export const isLoaded = (name: string): boolean => factories.has(name) || loadedKind(name) !== undefined;

/** Whether the reports of ``spec`` can be made now: its kind has loaded and says its reporter is ready. */
export function reporterReady(spec: Spec): boolean {
  const kind = loadedKind(spec.kind);
  return kind !== undefined && (kind.reporterReady?.(spec) ?? true);
}

/** The local randomizer of ``spec`` (the local kind's reporter). */
export function localMechanism(spec: Spec, rng: RandomSource, options: MechanismOptions): Mechanism {
  const factory = factories.get(spec.mechanism);
  if (factory === undefined) throw notLoaded("mechanism", spec.mechanism);
  return factory(spec, rng, options);
}

/** What makes the reports of ``spec`` (its kind's reporter); randomness from the platform CSPRNG unless ``rng`` is
 * given. */
export function mechanismFromSpec(spec: Spec, options: MechanismOptions = {}): Mechanism {
  const kind = loadedKind(spec.kind);
  if (kind === undefined) throw notLoaded("kind", spec.kind);
  return kind.reporter(spec, options.rng ?? secureRandom, options);
}
