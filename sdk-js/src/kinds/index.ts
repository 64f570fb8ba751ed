/** The campaign kinds: each kind (``local``: the randomizers, ``prio3``: distributed campaigns, or one from outside
 * the package) is a module that parses its own spec fields and makes its reports, registered here by name with a
 * loader, ``() => import("./local.js")``, so that a kind's code is downloaded with the first spec of that kind. The
 * kind of a spec is its ``kind`` member, else ``prio3`` when ``trust`` is ``distributed``, else ``local`` (as
 * ``client_sdk/spec.py`` derives it). */

import { SpecError } from "../errors.js";
import type { Mechanism, MechanismOptions } from "../mechanisms.js";
import type { RandomSource } from "../randomness.js";
import type { Spec } from "../spec.js";

/** The fields every kind's spec has, checked by spec.ts before the kind parses the rest. */
export interface Envelope {
  name: string;
  kind: string;
  trust: string;
  description: string;
  version: number;
  delta: number | null;
  expires: string | null;
}

/** A campaign kind on the device: its spec fields, their validation (SpecError naming the field) and its reports. */
export interface CampaignKind {
  readonly name: string;
  /** The trust models it supports (``trust`` of its specs). */
  readonly trustModels: readonly string[];
  /** The top-level spec fields it owns (besides the envelope's). */
  readonly fields: readonly string[];
  /** The spec of ``data``: the envelope is checked; a kind other than local and prio3 fingerprints ``kind``. */
  parse(data: Record<string, unknown>, envelope: Envelope): Spec;
  /** What makes the reports of ``spec``: ``perturb`` validates and encodes a value synchronously (a bad value throws
   * from ``record``); a reporter with ``seal`` completes the payload before it is queued. */
  reporter(spec: Spec, rng: RandomSource, options: MechanismOptions): Mechanism;
  /** Whether ``data`` can be parsed now, and what to load first when it cannot (local: RAPPOR's module). */
  ready?(data: Record<string, unknown>): boolean;
  prepare?(data: Record<string, unknown>): Promise<unknown>;
  /** Whether the reports of a parsed ``spec`` can be made now (default: yes, once the kind has loaded), and what to
   * load first when they cannot (local: the randomizer's module). */
  reporterReady?(spec: Spec): boolean;
  prepareReporter?(spec: Spec): Promise<unknown>;
}

export type KindLoader = () => Promise<CampaignKind | { default: CampaignKind } | { kind: CampaignKind } | unknown>;

export const ENVELOPE_FIELDS = ["name", "description", "version", "kind", "trust", "epsilon", "delta", "expires",
  "unit", "derived", "fingerprint", "budget"];

/** Every kind by name: its loader until it is loaded (while it loads: the promise), then the kind itself. */
const registry = new Map<string, KindLoader | Promise<CampaignKind> | CampaignKind>([
  ["local", () => import("./local.js")],
  ["prio3", () => import("./prio3.js")],
  ["heavy_hitters", () => import("./heavy_hitters.js")],
  ["quantiles", () => import("./quantiles.js")],
  ["repeated", () => import("./repeated.js")],
  ["poplar1", () => import("./poplar1.js")],
]);

/** The SpecError of ``field`` when ``name``'s module (a kind's, a randomizer's) has not loaded. */
export const notLoaded = (field: string, name: string): SpecError =>
  new SpecError(field, `${name} is not loaded: await loadMechanism("${name}")`);

const unknownKind = (): SpecError => new SpecError("kind", `must be one of ${[...registry.keys()]}`);

/** Make specs of kind ``name`` load their kind with ``loader`` (a function returning ``import("./my-kind.js")``,
 * whose module exports the kind as ``default``, or the kind itself). */
export function registerKind(name: string, loader: KindLoader): void {
  if (typeof name != "string" || !/^[a-z][a-z0-9_]{0,31}$/.test(name) || typeof loader != "function") {
    throw new TypeError("registerKind(name: [a-z][a-z0-9_]{0,31}, loader: a function)");
  }
  registry.set(name, loader);
}

/** A kind's module registers the kind it defines as it loads (built-ins: also when imported statically). */
export function provideKind(kind: CampaignKind): void {
  registry.set(kind.name, kind);
}

/** Whether ``name`` is a registered kind. */
export const isKind = (name: string): boolean => registry.has(name);

/** The kind ``name`` if its module has loaded (a loader and a promise have no ``parse``). */
export function loadedKind(name: string): CampaignKind | undefined {
  const kind = registry.get(name) as CampaignKind | undefined;
  return kind?.parse ? kind : undefined;
}

/** Load kind ``name`` (rejects with SpecError("kind") when no kind of that name is registered). */
export function loadKind(name: string): Promise<CampaignKind> {
  const entry = registry.get(name);
  if (typeof entry != "function") return entry ? Promise.resolve(entry) : Promise.reject(unknownKind());
  const promise = Promise.resolve(entry()).then((module) => {
    const m = module as { default?: CampaignKind; kind?: CampaignKind } & Partial<CampaignKind>;
    const kind = loadedKind(name) ?? m.default ?? m.kind ?? (m as CampaignKind);
    if (typeof kind?.parse != "function" || typeof kind.reporter != "function") {
      throw new TypeError(`kind ${name}: its module defines no kind`);
    }
    registry.set(name, kind);
    return kind;
  });
  registry.set(name, promise);
  promise.catch(() => registry.get(name) === promise && registry.set(name, entry)); // a later call loads again
  return promise;
}

/** The kind of spec ``data``: ``kind`` if present, else prio3 with trust distributed, else local. */
export function kindName(data: Record<string, unknown>): string {
  if ("kind" in data) {
    if (!registry.has(data.kind as string)) throw unknownKind();
    return data.kind as string;
  }
  return data.trust === "distributed" ? "prio3" : "local";
}

/** What parsing the spec ``source`` (an object or its JSON text) needs first: a function that loads its kind and what
 * the kind loads for it; undefined when it parses now (or fails, as it should, without any module). */
export function specNeeds(source: unknown): (() => Promise<unknown>) | undefined {
  let d: Record<string, unknown>;
  let name: string;
  try {
    d = typeof source == "string" ? JSON.parse(source) : source;
    name = kindName(d); // throws for what is not an object
  } catch {
    return undefined;
  }
  const kind = loadedKind(name);
  if (!kind || kind.ready?.(d) === false) return () => loadKind(name).then((k) => k.prepare?.(d));
}
