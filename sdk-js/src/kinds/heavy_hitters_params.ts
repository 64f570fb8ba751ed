/** A heavy_hitters spec's fields, validated in the Python SDK's order with the same field named in each SpecError
 * (``client_sdk/kinds/heavy_hitters/params.py``), and the identity they give the fingerprint. */

import { PyFloat } from "../canonical.js";
import { SpecError } from "../errors.js";
import { MAX_EPSILON, MIN_EPSILON } from "../spec.js";
import {
  DEFAULT_SKETCH_DEPTH, DEFAULT_SKETCH_WIDTH, HASH_FAMILIES, MAX_ALPHABET, MAX_EXPECTED_REPORTS,
  MAX_FRAGMENT_CANDIDATES, MAX_HASH_COUNT, MAX_LENGTH, MAX_LEVEL_BRANCHING, MAX_OLH_CELLS, MAX_SKETCH_CELLS,
  MIN_EXPECTED_REPORTS,
  PUZZLE_BITS, defaultHashCount, pemRange, plan, symbolCount,
  type HeavyHittersParams,
} from "./heavy_hitters_plan.js";

export const KIND_NAME = "heavy_hitters";
export const PEM_FIELDS = ["segment_length", "hash_count"];
export const SFP_FIELDS = ["sketch_width", "sketch_depth", "fragment_length", "hash_family"];
export const FIELDS = ["max_length", "alphabet", "overflow", "algorithm", "expected_reports", ...PEM_FIELDS, ...SFP_FIELDS];
const ALGORITHMS = ["pem", "sfp", "auto"];
const OVERFLOWS = ["truncate", "refuse"];
const PARAM_OF: Record<string, keyof HeavyHittersParams> = { segment_length: "segmentLength",
  hash_count: "hashCount",
  sketch_width: "sketchWidth", sketch_depth: "sketchDepth", fragment_length: "fragmentLength", hash_family: "hashFamily" };

function validateInt(field: string, value: unknown, low: number, high: number): number {
  if (!Number.isInteger(value) || (value as number) < low || (value as number) > high) {
    throw new SpecError(field, `must be an integer in [${low}, ${high}]`);
  }
  return value as number;
}

/** Python's ``data.get(field, fallback)``: a field given as null is null, not the fallback. */
const get = (d: Record<string, unknown>, field: string, fallback: unknown = undefined): unknown =>
  field in d ? d[field] : fallback;
const absent = (value: unknown): boolean => value === undefined || value === null;

function validateEpsilon(epsilon: unknown): number {
  if (typeof epsilon !== "number" || !Number.isFinite(epsilon) || epsilon < MIN_EPSILON || epsilon > MAX_EPSILON) {
    throw new SpecError("epsilon", `must be a number in [${MIN_EPSILON}, ${MAX_EPSILON}]`);
  }
  return epsilon;
}

function validateAlphabet(value: unknown): string[] | null {
  if (absent(value)) return null;
  const characters = typeof value === "string" ? [...value] : [];
  if (typeof value !== "string" || characters.length < 2 || characters.length > MAX_ALPHABET) {
    throw new SpecError("alphabet", `must be a string of 2 to ${MAX_ALPHABET} distinct characters`);
  }
  if (new Set(characters).size !== characters.length) throw new SpecError("alphabet", "must not repeat a character");
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw new SpecError("alphabet", "must be valid UTF-8 (no lone surrogates)");
  }
  return characters;
}

/** The parameters of a spec's JSON (its kind fields and the envelope's epsilon); SpecError naming the field. */
export function paramsFromDict(d: Record<string, unknown>): HeavyHittersParams {
  const epsilon = validateEpsilon(d.epsilon);
  const maxLength = validateInt("max_length", get(d, "max_length"), 1, MAX_LENGTH);
  const alphabet = validateAlphabet(get(d, "alphabet"));
  const overflow = get(d, "overflow", "truncate");
  if (!OVERFLOWS.includes(overflow as string)) throw new SpecError("overflow", `must be one of ${OVERFLOWS}`);
  const algorithm = get(d, "algorithm", "auto");
  if (!ALGORITHMS.includes(algorithm as string)) throw new SpecError("algorithm", `must be one of ${ALGORITHMS}`);
  let expected = get(d, "expected_reports");
  if (!absent(expected) || algorithm === "auto") {
    if (absent(expected)) {
      throw new SpecError("expected_reports", "is required with algorithm 'auto' (the n the planner plans for)");
    }
    expected = validateInt("expected_reports", expected, MIN_EXPECTED_REPORTS, MAX_EXPECTED_REPORTS);
  }
  for (const [fields, owner] of [[PEM_FIELDS, "pem"], [SFP_FIELDS, "sfp"]] as const) {
    for (const field of fields) {
      if (field in d && algorithm !== owner) {
        const why = algorithm === "auto" ? "the planner chooses it with 'auto'" : `it is an ${owner} field`;
        throw new SpecError(field, `not allowed with algorithm '${algorithm}': ${why}`);
      }
    }
  }
  const base: HeavyHittersParams = { epsilon, maxLength, alphabet, alphabetText: alphabet && (get(d, "alphabet") as string),
    overflow: overflow as string, algorithm: "pem", requested: algorithm as string,
    expectedReports: absent(expected) ? null : expected as number, segmentLength: null, hashCount: null, sketchWidth: null,
    sketchDepth: null, fragmentLength: null, hashFamily: null };
  if (algorithm === "auto") return plan(base, expected as number);
  const b = symbolCount(base);
  if (algorithm === "pem") {
    const length = validateInt("segment_length", get(d, "segment_length", 1), 1, maxLength);
    if (b ** length > MAX_LEVEL_BRANCHING) {
      throw new SpecError("segment_length", `${b}**${length} extensions per prefix exceed ${MAX_LEVEL_BRANCHING}`);
    }
    const given = get(d, "hash_count");
    let hashCount = defaultHashCount(epsilon);
    if (!absent(given)) {
      hashCount = validateInt("hash_count", given, 1, MAX_HASH_COUNT);
      const g = pemRange(epsilon);
      if (hashCount * g > MAX_OLH_CELLS) {
        throw new SpecError("hash_count", `hash_count * g = ${hashCount} * ${g} exceeds ${MAX_OLH_CELLS} (the count table of a group)`);
      }
    }
    return { ...base, segmentLength: length, hashCount };
  }
  const width = get(d, "sketch_width", DEFAULT_SKETCH_WIDTH);
  if (!Number.isInteger(width) || (width as number) < 16 || (width as number) > 65536 || ((width as number) & ((width as number) - 1))) {
    throw new SpecError("sketch_width", "must be a power of two in [16, 65536]");
  }
  const depth = validateInt("sketch_depth", get(d, "sketch_depth", DEFAULT_SKETCH_DEPTH), 1, 1024);
  if ((width as number) * depth > MAX_SKETCH_CELLS) {
    throw new SpecError("sketch_depth", `sketch_width * sketch_depth = ${width} * ${depth} exceeds ${MAX_SKETCH_CELLS} (the count table of a group)`);
  }
  const hashFamily = get(d, "hash_family", HASH_FAMILIES[0]);
  if (!HASH_FAMILIES.includes(hashFamily as string)) throw new SpecError("hash_family", `must be one of ${HASH_FAMILIES}`);
  const fragment = validateInt("fragment_length", get(d, "fragment_length", 1), 1, maxLength);
  if (2 ** PUZZLE_BITS * b ** fragment > MAX_FRAGMENT_CANDIDATES) {
    throw new SpecError("fragment_length", `256 * ${b}**${fragment} (puzzle hash, fragment) pairs exceed ${MAX_FRAGMENT_CANDIDATES}`);
  }
  return { ...base, algorithm: "sfp", sketchWidth: width as number, sketchDepth: depth, fragmentLength: fragment,
    hashFamily: hashFamily as string };
}

/** The parameters' part of the fingerprint (``HeavyHittersParams.identity``): the resolved algorithm's fields. */
export function paramsIdentity(p: HeavyHittersParams): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: KIND_NAME, max_length: p.maxLength, overflow: p.overflow,
    algorithm: p.algorithm };
  if (p.alphabetText !== null) out.alphabet = p.alphabetText;
  if (p.requested !== p.algorithm) out.requested_algorithm = p.requested;
  if (p.expectedReports !== null) out.expected_reports = p.expectedReports;
  for (const field of p.algorithm === "pem" ? PEM_FIELDS : SFP_FIELDS) out[field] = p[PARAM_OF[field]];
  return out;
}

/** The epsilon of the identity, written as Python writes a float. */
export const epsilonIdentity = (epsilon: number): PyFloat => new PyFloat(epsilon);
