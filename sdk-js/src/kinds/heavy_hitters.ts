/** The heavy_hitters kind (``client_sdk/kinds/heavy_hitters/``): the frequent strings of an unknown dictionary,
 * found by PEM (prefix extension over OLH) or SFP (Apple's Sequence Fragment Puzzle over a Hadamard Count Mean
 * Sketch). Each report is one group's (drawn on the device, from the CSPRNG, independently of the value) epsilon-LDP
 * report of the whole string, drawn byte for byte as the Python SDK's ``device.make_report``:
 *
 *   pem  group = randbelow(groups); hash = randbelow(hash_count) (a public OLH function, ``encoding.olh_seed``);
 *        keep = bernoulli(keep); if not kept, other = randbelow(g - 1): report (group, hash, y)
 *   sfp  group = randbelow(groups); row = randbelow(depth); column = randbelow(width); keep = bernoulli(keep):
 *        report (group, row, column, bit)
 *
 * The payload is one integer, the report's cell (``device.report_cell``): pem (group * hash_count + hash) * g + y,
 * sfp ((group * depth + row) * width + column) * 2 + bit; below 2**31, as the parameters bound each group's table.
 *
 * Strings are ``max_length`` symbols (0 is END, then the alphabet's characters, or UTF-8 bytes + 1) hashed with
 * SHA-256 under fixed labels (``encoding.py``). Loaded with the first heavy_hitters spec (browsers:
 * dist/browser/heavy_hitters.js). */

import { olhHash } from "../categorical.js";
import { InvalidValue, InvalidValueType } from "../errors.js";
import type { Mechanism, Payload } from "../mechanisms.js";
import { bernoulli, randbelowNumber, type RandomSource } from "../randomness.js";
import { sha256 } from "../sha256.js";
import { Spec } from "../spec.js";
import { FIELDS, KIND_NAME, epsilonIdentity, paramsFromDict, paramsIdentity } from "./heavy_hitters_params.js";
import {
  discoveryGroups, groupCount, oracleOf, prefixLength, symbolCount, type HeavyHittersParams, type Oracle,
} from "./heavy_hitters_plan.js";
import { provideKind, type CampaignKind, type Envelope } from "./index.js";

const END = 0;
const LABEL = (name: string): Uint8Array => new TextEncoder().encode(`ldp-telemetry/heavy_hitters/${name}\0`);
const PREFIX_LABEL = LABEL("prefix"), PUZZLE_LABEL = LABEL("puzzle"), SKETCH_LABEL = LABEL("sketch");
const OLH_LABEL = LABEL("olh");

/** SHA-256 of a label and big-endian integers of the given byte widths. */
function labelled(label: Uint8Array, words: [number, number][]): Uint8Array {
  const bytes = new Uint8Array(label.length + words.reduce((sum, [, width]) => sum + width, 0));
  bytes.set(label);
  let at = label.length;
  for (const [value, width] of words) {
    for (let i = width - 1; i >= 0; i--) bytes[at + i] = Math.floor(value / 256 ** (width - 1 - i)) & 0xff;
    at += width;
  }
  return sha256(bytes);
}

/** The 32-bit OLH key of a prefix (its length is hashed too). */
export function prefixKey(symbols: number[]): number {
  const d = labelled(PREFIX_LABEL, [[symbols.length, 2], ...symbols.map((s): [number, number] => [s, 2])]);
  return ((d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]) >>> 0;
}

/** SFP's 8-bit hash of the whole padded string. */
export const puzzleHash = (symbols: number[]): number => labelled(PUZZLE_LABEL, symbols.map((s) => [s, 2]))[0];

/** The sketch key of (puzzle hash, fragment): puzzle * B**len + the fragment in base B. */
export const fragmentKey = (b: number, puzzle: number, fragment: number[]): number =>
  fragment.reduce((key, symbol) => key * b + symbol, puzzle);

const seedCaches = new Map<Uint8Array, Map<number, [bigint, bigint]>>([[SKETCH_LABEL, new Map()], [OLH_LABEL, new Map()]]);
/** Public multiply-add-shift seed ``index`` (a, b) of a family: the first 16 bytes of SHA-256(label, index as 4
 * bytes): the sketch's rows (SKETCH_LABEL) and PEM's OLH functions (OLH_LABEL). */
function publicSeed(label: Uint8Array, index: number): [bigint, bigint] {
  const cache = seedCaches.get(label)!;
  let seed = cache.get(index);
  if (seed === undefined) {
    const d = labelled(label, [[index, 4]]);
    const word = (from: number): bigint => d.slice(from, from + 8).reduce((x, byte) => (x << 8n) | BigInt(byte), 0n);
    seed = [word(0), word(8)];
    cache.set(index, seed);
  }
  return seed;
}

const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** The UTF-8 bytes of ``value``, truncated at a character boundary at or below max_length bytes, or refused. */
function utf8Of(p: HeavyHittersParams, value: unknown): Uint8Array {
  let raw: Uint8Array;
  if (typeof value === "string") {
    if (!wellFormed(value)) throw new InvalidValue("the string is not valid UTF-8 (it has a lone surrogate)");
    raw = new TextEncoder().encode(value);
  } else if (value instanceof Uint8Array) {
    try {
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(value);
    } catch {
      throw new InvalidValue("the bytes are not valid UTF-8");
    }
    raw = value;
  } else {
    throw new InvalidValueType("a heavy_hitters campaign takes a string (or UTF-8 bytes)");
  }
  if (raw.length <= p.maxLength) return raw;
  if (p.overflow === "refuse") throw new InvalidValue(`the string is longer than max_length (${p.maxLength} UTF-8 bytes)`);
  let cut = p.maxLength;
  while (cut > 0 && (raw[cut] & 0xc0) === 0x80) cut--; // raw[cut] continues a character: cut before that character
  return raw.subarray(0, cut);
}

/** The ``max_length`` symbols of ``value`` (``encoding.encode_value``): InvalidValue for what the campaign refuses
 * (never repeating the value: errors reach logs), InvalidValueType for what is not a string. */
export function encodeValue(p: HeavyHittersParams, value: unknown): number[] {
  let symbols: number[];
  if (p.alphabet === null) {
    symbols = Array.from(utf8Of(p, value), (byte) => byte + 1);
  } else {
    if (typeof value !== "string") throw new InvalidValueType("a heavy_hitters campaign with an alphabet takes a string");
    const index = new Map(p.alphabet.map((character, i) => [character, i + 1]));
    const characters = [...value];
    if (characters.some((character) => !index.has(character))) {
      throw new InvalidValue("the string has a character outside the campaign's alphabet");
    }
    if (characters.length > p.maxLength && p.overflow === "refuse") {
      throw new InvalidValue(`the string is longer than max_length (${p.maxLength} characters)`);
    }
    symbols = characters.slice(0, p.maxLength).map((character) => index.get(character)!);
  }
  while (symbols.length < p.maxLength) symbols.push(END);
  return symbols;
}

/** The key the oracle of ``group`` reports for a string's symbols (``device.group_key``). */
export function groupKey(p: HeavyHittersParams, symbols: number[], group: number): number {
  if (group === discoveryGroups(p)) return prefixKey(symbols);
  if (p.algorithm === "pem") return prefixKey(symbols.slice(0, prefixLength(p, group)));
  const start = group * p.fragmentLength!;
  const fragment = symbols.slice(start, start + p.fragmentLength!);
  while (fragment.length < p.fragmentLength!) fragment.push(END);
  return fragmentKey(symbolCount(p), puzzleHash(symbols), fragment);
}

/** A heavy_hitters spec: the envelope and the kind's parameters (``params``). */
export class HeavyHittersSpec extends Spec {
  constructor(envelope: Envelope, readonly params: HeavyHittersParams) {
    super(envelope.name, KIND_NAME, params.epsilon, null, null, null, null, null, envelope.expires);
  }

  override identity(): Record<string, unknown> {
    const out: Record<string, unknown> = { name: this.name, ...paramsIdentity(this.params), trust: "local",
      epsilon: epsilonIdentity(this.epsilon) };
    if (this.expires) out.expires = this.expires;
    return out;
  }
}

/** Makes one report per string, drawing in the documented order. */
export class HeavyHittersReporter implements Mechanism {
  readonly #oracle: Oracle;
  readonly #groups: number;
  constructor(readonly spec: HeavyHittersSpec, readonly rng: RandomSource) {
    this.#oracle = oracleOf(spec.params);
    this.#groups = groupCount(spec.params);
  }

  perturb(value: unknown): Payload {
    const p = this.spec.params, rng = this.rng;
    const symbols = encodeValue(p, value);
    const group = randbelowNumber(rng, this.#groups);
    const key = groupKey(p, symbols, group);
    if (p.algorithm === "pem") {
      const g = this.#oracle.g;
      const index = randbelowNumber(rng, p.hashCount!);
      const [a, b] = publicSeed(OLH_LABEL, index);
      const hashed = olhHash(a, b, key, g);
      let y = hashed;
      if (!bernoulli(rng, this.#oracle.keep)) {
        const other = randbelowNumber(rng, g - 1);
        y = other < hashed ? other : other + 1;
      }
      return (group * p.hashCount! + index) * g + y;
    }
    const row = randbelowNumber(rng, p.sketchDepth!);
    const column = randbelowNumber(rng, p.sketchWidth!);
    const [seedA, seedB] = publicSeed(SKETCH_LABEL, row);
    let parity = olhHash(seedA, seedB, key, p.sketchWidth!) & column;
    parity ^= parity >>> 8; parity ^= parity >>> 4; parity ^= parity >>> 2; parity ^= parity >>> 1;
    let bit = parity & 1;
    if (!bernoulli(rng, this.#oracle.keep)) bit ^= 1;
    return ((group * p.sketchDepth! + row) * p.sketchWidth! + column) * 2 + bit;
  }
}

export const kind: CampaignKind = {
  name: KIND_NAME,
  trustModels: ["local"],
  fields: FIELDS,
  parse: (d, envelope) => new HeavyHittersSpec(envelope, paramsFromDict(d)),
  reporter: (spec, rng) => new HeavyHittersReporter(spec as HeavyHittersSpec, rng),
};

provideKind(kind);
