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

const loaders = new Map<string, KindLoader>([
  ["local", () => import("./local.js")],
  ["prio3", () => import("./prio3.js")],
  ["heavy_hitters", () => import("./heavy_hitters.js")],
  ["quantiles", () => import("./quantiles.js")],
  ["repeated", () => import("./repeated.js")],
]);
const kinds = new Map<string, CampaignKind>();
const loading = new Map<string, Promise<CampaignKind>>();

/** Make specs of kind ``name`` load their kind with ``loader`` (a function returning ``import("./my-kind.js")``,
 * whose module exports the kind as ``default``, or the kind itself). */
export function registerKind(name: string, loader: KindLoader): void {
  if (typeof name !== "string" || !/^[a-z][a-z0-9_]{0,31}$/.test(name)) throw new TypeError("kind name: [a-z][a-z0-9_]{0,31}");
  if (typeof loader !== "function") throw new TypeError("loader must be a function");
  loaders.set(name, loader);
  kinds.delete(name);
  loading.delete(name);
}

/** A kind's module registers the kind it defines as it loads (built-ins: also when imported statically). */
export function provideKind(kind: CampaignKind): void {
  kinds.set(kind.name, kind);
}

/** Whether ``name`` is a registered kind. */
export const isKind = (name: string): boolean => loaders.has(name);

/** The kind ``name`` if its module has loaded. */
export const loadedKind = (name: string): CampaignKind | undefined => kinds.get(name);

/** Load kind ``name`` (rejects with SpecError("kind") when no kind of that name is registered). */
export function loadKind(name: string): Promise<CampaignKind> {
  const known = kinds.get(name);
  if (known !== undefined) return Promise.resolve(known);
  const loader = loaders.get(name);
  if (loader === undefined) return Promise.reject(new SpecError("kind", `unknown kind ${name}`));
  let promise = loading.get(name);
  if (promise === undefined) {
    promise = Promise.resolve(loader()).then((module) => {
      const m = module as { default?: CampaignKind; kind?: CampaignKind } & Partial<CampaignKind>;
      const kind = kinds.get(name) ?? m.default ?? m.kind ?? (m as CampaignKind);
      if (typeof kind?.parse !== "function" || typeof kind.reporter !== "function") {
        throw new TypeError(`kind ${name}: its module defines no kind`);
      }
      kinds.set(name, kind);
      return kind;
    });
    loading.set(name, promise);
    promise.catch(() => loading.delete(name));
  }
  return promise;
}

/** The kind of spec ``data``: ``kind`` if present, else prio3 with trust distributed, else local. */
export function kindName(data: Record<string, unknown>): string {
  if ("kind" in data) {
    if (typeof data.kind !== "string" || !loaders.has(data.kind)) throw new SpecError("kind", `must be one of ${[...loaders.keys()]}`);
    return data.kind;
  }
  return data.trust === "distributed" ? "prio3" : "local";
}

/** ``source`` (a spec object or its JSON text) as an object, or null. */
function specObject(source: unknown): Record<string, unknown> | null {
  try {
    const d = typeof source === "string" ? JSON.parse(source) : source;
    return d !== null && typeof d === "object" && !Array.isArray(d) ? d : null;
  } catch {
    return null;
  }
}

/** Whether the spec ``source`` parses without loading a module first. */
export function specReady(source: unknown): boolean {
  const d = specObject(source);
  if (d === null) return true; // parsing fails, as it should, without any module
  let kind: CampaignKind | undefined;
  try {
    kind = kinds.get(kindName(d));
  } catch {
    return true;
  }
  return kind !== undefined && (kind.ready?.(d) ?? true);
}

/** Load what parsing the spec ``source`` needs: its kind and what the kind loads for it. */
export async function prepareSpec(source: unknown): Promise<void> {
  const d = specObject(source);
  if (d === null || specReady(d)) return;
  const kind = await loadKind(kindName(d));
  await kind.prepare?.(d);
}
