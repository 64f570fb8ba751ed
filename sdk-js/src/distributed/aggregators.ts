/** Which HPKE configs a device seals to (the rules of ``client_sdk.distributed.configured_aggregators`` and
 * ``aggregator_configs``): the app ships the helper's URL (or a pinned config); the helper's configs are fetched from
 * the helper itself, never only from the leader; a listing whose aggregators block names another helper URL or key
 * is refused (``aggregator_mismatch``), so a leader cannot make a device seal the helper's share to a key of its own. */

import { checkedConfig, type HpkeConfig } from "./hpke.js";
import { fromB64url } from "./messages.js";

/** What the app knows out of band (``ClientOptions.aggregators``). */
export interface AggregatorsOption {
  helper: string | { url?: string; hpke_config?: HpkeConfig };
  leader?: { url?: string; hpke_config?: HpkeConfig };
}

export interface Trusted {
  helperUrl: string | null;
  helperPin: HpkeConfig | null;
  leaderPin: HpkeConfig | null;
}

/** A listing that does not match what this device knows (``client_sdk.errors.AggregatorMismatch``). */
export class AggregatorMismatch extends Error {
  constructor(readonly field: string, reason: string) {
    super(`${field}: ${reason}`);
  }
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** ``url`` without trailing slashes if it is https, or http to a loopback host; RangeError naming ``field``. */
export function checkedUrl(url: unknown, field: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url as string);
  } catch {
    throw new RangeError(`${field}: must be an URL, got ${JSON.stringify(url)}`);
  }
  if (typeof url !== "string" || !["http:", "https:"].includes(parsed.protocol) || parsed.search || parsed.hash
    || /[?#]/.test(url)) {
    throw new RangeError(`${field}: must be an https:// URL without query or fragment, got ${url}`);
  }
  if (parsed.protocol === "http:" && !LOOPBACK.test(parsed.hostname)) {
    throw new RangeError(`${field}: must be https:// (plain http only to a loopback host), got ${url}`);
  }
  return url.replace(/\/+$/, "");
}

/** Two aggregator URLs name the same endpoint (scheme and host case-insensitive, default port, trailing slash). */
export function sameUrl(a: string, b: string): boolean {
  try {
    const [x, y] = [new URL(a.replace(/\/+$/, "")), new URL(b.replace(/\/+$/, ""))];
    return x.protocol === y.protocol && x.hostname === y.hostname && x.port === y.port
      && x.pathname.replace(/\/+$/, "") === y.pathname.replace(/\/+$/, "");
  } catch {
    return false;
  }
}

const config = (value: unknown, field: string): HpkeConfig => {
  try {
    return checkedConfig(value, fromB64url);
  } catch (error) {
    throw new RangeError(`${field}: ${(error as Error).message}`);
  }
};

/** Check the client's ``aggregators`` option; RangeError naming the field. */
export function configuredAggregators(option: unknown, clientUrl: string): Trusted {
  const o = option as Record<string, unknown>;
  if (!o || typeof o !== "object" || !("helper" in o) || Object.keys(o).some((k) => k !== "leader" && k !== "helper")) {
    throw new RangeError('aggregators: must be {helper: URL or {url: URL, hpke_config: {...}}} (and optionally leader)');
  }
  const entries: Record<string, [string | null, HpkeConfig | null]> = {};
  for (const role of ["leader", "helper"]) {
    let entry = o[role] as Record<string, unknown> | string | undefined;
    if (entry === undefined) {
      entries[role] = [null, null];
      continue;
    }
    if (typeof entry === "string") entry = { url: entry };
    if (!entry || typeof entry !== "object" || !Object.keys(entry).length
      || Object.keys(entry).some((k) => k !== "url" && k !== "hpke_config")) {
      throw new RangeError(`aggregators.${role}: must be an URL or {url: URL, hpke_config: {...}}`);
    }
    entries[role] = ["url" in entry ? checkedUrl(entry.url, `aggregators.${role}.url`) : null,
      "hpke_config" in entry ? config(entry.hpke_config, `aggregators.${role}.hpke_config`) : null];
  }
  const [leaderUrl, leaderPin] = entries.leader;
  const [helperUrl, helperPin] = entries.helper;
  if (leaderUrl !== null && !sameUrl(leaderUrl, clientUrl)) {
    throw new RangeError(`aggregators.leader.url: the leader is the client's url (${clientUrl}), not ${leaderUrl}`);
  }
  if (helperUrl === null && helperPin === null) {
    throw new RangeError("aggregators.helper: needs the helper's url (its HPKE config is fetched from there) or a pinned hpke_config");
  }
  checkedUrl(clientUrl, "url");
  return { helperUrl, helperPin, leaderPin };
}

export const sameConfig = (a: HpkeConfig, b: HpkeConfig): boolean =>
  a.id === b.id && a.kem_id === b.kem_id && a.kdf_id === b.kdf_id && a.aead_id === b.aead_id && a.public_key === b.public_key;

/** The configs of an aggregator's ``GET /v1/hpke_config`` answer; RangeError otherwise. */
export function parseHpkeConfigs(body: unknown): HpkeConfig[] {
  const configs = (body as { configs?: unknown } | null)?.configs;
  if (!Array.isArray(configs) || !configs.length) throw new RangeError("hpke_config: the answer lists no HPKE config");
  return configs.map((c) => config(c, "hpke_config"));
}

/** The leader's and the helper's configs from a listing's aggregators block, checked against what the device knows:
 * RangeError for a malformed block, AggregatorMismatch for another helper URL or key (or a leader pin missed). */
export function aggregatorConfigs(block: unknown, trusted: Trusted, helperConfigs: HpkeConfig[]): [HpkeConfig, HpkeConfig] {
  const b = block as Record<string, Record<string, unknown> | undefined> | null;
  if (!b || typeof b !== "object") throw new RangeError("aggregators: the campaign listing carries no aggregators block");
  const [leader, helper] = (["leader", "helper"] as const).map((role) => {
    const entry = b[role];
    if (!entry || typeof entry !== "object" || !("hpke_config" in entry)) throw new RangeError(`aggregators.${role}.hpke_config: is missing`);
    return config(entry.hpke_config, `aggregators.${role}.hpke_config`);
  });
  if (leader.public_key === helper.public_key) {
    throw new AggregatorMismatch("aggregators", "the leader and the helper list the same public key");
  }
  const listedUrl = b.helper!.url;
  if (trusted.helperUrl !== null && !(typeof listedUrl === "string" && sameUrl(listedUrl, trusted.helperUrl))) {
    throw new AggregatorMismatch("aggregators.helper.url", `the leader lists the helper ${listedUrl}; this device knows ${trusted.helperUrl}`);
  }
  const known = trusted.helperPin !== null ? [trusted.helperPin] : helperConfigs;
  if (!known.some((c) => sameConfig(c, helper))) {
    throw new AggregatorMismatch("aggregators.helper.hpke_config", "is not the HPKE config the helper publishes (or the pin)");
  }
  if (trusted.leaderPin !== null && !sameConfig(trusted.leaderPin, leader)) {
    throw new AggregatorMismatch("aggregators.leader.hpke_config", "is not the leader HPKE config pinned on this device");
  }
  return [leader, helper];
}
