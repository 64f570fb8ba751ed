/** The heavy_hitters planner (``client_sdk/kinds/heavy_hitters/planning.py``, ``oracles.py``): the oracles'
 * constants, the detection threshold of a configuration at n devices and epsilon, and ``plan``, which algorithm
 * "auto" resolves to. The same arithmetic in the same order as the Python SDK, so an auto spec resolves to the same
 * algorithm and parameters (and so the same fingerprint); the normal quantile is Wichura's AS241 (as Python's
 * ``statistics.NormalDist.inv_cdf``), the normal CDF an erf accurate to a few ulp (Python's is libm's): they
 * differ in the last bits at most, which moves a threshold found by bisection only within its last steps. */

import { olhRange } from "../categorical.js";
import { expRounded, fromDouble, quantizeRatio, toNumber, type Rational } from "../randomness.js";

export const MAX_LENGTH = 64;
export const MAX_ALPHABET = 255;
export const MAX_LEVEL_BRANCHING = 4096;
export const MAX_FRAGMENT_CANDIDATES = 1 << 24;
export const MIN_EXPECTED_REPORTS = 100;
export const MAX_EXPECTED_REPORTS = 2 ** 40;
export const DEFAULT_SKETCH_WIDTH = 1024;
export const DEFAULT_SKETCH_DEPTH = 16;
export const HASH_FAMILIES = ["multiply_shift"];
export const PUZZLE_BITS = 8;
/** PEM's OLH: g at most PEM_MAX_RANGE, a group's hash_count x g count table at most MAX_OLH_CELLS cells. */
export const PEM_MAX_RANGE = 4096;
export const MAX_OLH_CELLS = 2 ** 20;
/** SFP: sketch_width * sketch_depth, a group's count table, at most this (so a payload stays below 2**31). */
export const MAX_SKETCH_CELLS = 2 ** 20;
export const DEFAULT_OLH_CELLS = 2 ** 12;
export const MAX_HASH_COUNT = 2 ** 16;
const DEFAULT_TOP_K = 20;
const DEFAULT_FALSE_DISCOVERY_BUDGET = 0.05;
const DETECTION_POWER = 0.9;

/** A heavy_hitters campaign's parameters (``params.HeavyHittersParams``): ``algorithm`` resolved, ``requested`` the
 * spec's. */
export interface HeavyHittersParams {
  epsilon: number;
  maxLength: number;
  alphabet: string[] | null; // code points, as Python's str indexes them
  alphabetText: string | null;
  overflow: string;
  algorithm: string;
  requested: string;
  expectedReports: number | null;
  segmentLength: number | null;
  hashCount: number | null;
  sketchWidth: number | null;
  sketchDepth: number | null;
  fragmentLength: number | null;
  hashFamily: string | null;
}

/** B: the symbols a position holds, END included. */
export const symbolCount = (p: HeavyHittersParams): number => (p.alphabet === null ? 256 : p.alphabet.length) + 1;
/** L levels (pem) or P fragment positions (sfp). */
export const discoveryGroups = (p: HeavyHittersParams): number =>
  Math.ceil(p.maxLength / (p.algorithm === "pem" ? p.segmentLength! : p.fragmentLength!));
/** Every group, the estimation group (the last) included. */
export const groupCount = (p: HeavyHittersParams): number => discoveryGroups(p) + 1;
/** pem: the symbols level ``level`` reports. */
export const prefixLength = (p: HeavyHittersParams, level: number): number =>
  Math.min(p.maxLength, (level + 1) * p.segmentLength!);

/** The keep probability e/(e + others) quantized down from the exact rational of e (Python: a Fraction). */
function keepOf(e: number, others: number): Rational {
  const r = fromDouble(e);
  return quantizeRatio(r.n, r.n + BigInt(others) * r.d);
}

/** A frequency oracle's keep probability and its de-biased estimator's variance (``oracles.py``). */
export interface Oracle {
  readonly keep: Rational;
  /** OLH's range g (pem); 0 for the sketch. */
  readonly g: number;
  variance(frequency: number, reports: number, devices?: number): number;
}

function sampling(f: number, reports: number, devices: number | undefined): number {
  if (devices === undefined || devices <= reports) return 0;
  return f * (1 - f) * (devices - reports) / ((devices - 1) * reports);
}

/** OLH's g for e^eps in a heavy_hitters campaign: round(e^eps + 1), at most PEM_MAX_RANGE. */
const olhG = (e: number): number => Math.min(olhRange(e), PEM_MAX_RANGE);
/** PEM's default hash_count at ``epsilon``: hash_count * g ~ DEFAULT_OLH_CELLS. */
export const defaultHashCount = (epsilon: number): number =>
  Math.max(1, Math.floor(DEFAULT_OLH_CELLS / olhG(expRounded(epsilon))));
/** The g of PEM's OLH at ``epsilon``. */
export const pemRange = (epsilon: number): number => olhG(expRounded(epsilon));

/** The oracle every group of the campaign reports through: OLH (pem) or the Hadamard Count Mean Sketch (sfp). */
export function oracleOf(p: HeavyHittersParams): Oracle {
  const e = expRounded(p.epsilon);
  if (p.algorithm === "pem") {
    const g = olhG(e);
    const keep = keepOf(e, g - 1);
    const ps = toNumber(keep), qs = 1 / g;
    return { keep, g, variance: (f, reports, devices) => {
      const perReport = f * ps * (1 - ps) + (1 - f) * qs * (1 - qs);
      return perReport / (reports * ((ps - qs) * (ps - qs))) + sampling(f, reports, devices);
    } };
  }
  const keep = keepOf(e, 1);
  const signal = 2 * toNumber(keep) - 1, m = p.sketchWidth!;
  const scale = m / (m - 1);
  return { keep, g: 0, variance: (f, reports, devices) =>
    (scale * scale) * (1 - f * (signal * signal)) / (reports * (signal * signal)) + sampling(f, reports, devices) };
}

// -- the standard normal ---------------------------------------------------------------------------------------
const poly = (coefficients: number[], x: number): number => coefficients.reduce((sum, c) => sum * x + c, 0);

/** The standard normal quantile: Wichura (1988), algorithm AS241 (PPND16), evaluated as Python's NormalDist. */
export function normalQuantile(p: number): number {
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    const num = poly([2509.0809287301226727, 33430.575583588128105, 67265.770927008700853, 45921.953931549871457,
      13731.693765509461125, 1971.5909503065514427, 133.14166789178437745, 3.387132872796366608], r) * q;
    const den = poly([5226.495278852854561, 28729.085735721942674, 39307.89580009271061, 21213.794301586595867,
      5394.1960214247511077, 687.1870074920579083, 42.313330701600911252, 1], r);
    return num / den;
  }
  let r = Math.sqrt(-Math.log(q <= 0 ? p : 1 - p));
  let num: number, den: number;
  if (r <= 5) {
    r -= 1.6;
    num = poly([7.7454501427834140764e-4, 0.0227238449892691845833, 0.24178072517745061177, 1.27045825245236838258,
      3.64784832476320460504, 5.7694972214606914055, 4.6303378461565452959, 1.42343711074968357734], r);
    den = poly([1.05075007164441684324e-9, 5.475938084995344946e-4, 0.0151986665636164571966, 0.14810397642748007459,
      0.68976733498510000455, 1.6763848301838038494, 2.05319162663775882187, 1], r);
  } else {
    r -= 5;
    num = poly([2.01033439929228813265e-7, 2.71155556874348757815e-5, 0.0012426609473880784386,
      0.026532189526576123093, 0.29656057182850489123, 1.7848265399172913358, 5.4637849111641143699,
      6.6579046435011037772], r);
    den = poly([2.04426310338993978564e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5,
      7.868691311456132591e-4, 0.0148753612908506148525, 0.13692988092273580531, 0.59983220655588793769, 1], r);
  }
  return q < 0 ? -num / den : num / den;
}

const TWO_OVER_SQRT_PI = 1.1283791670955126;

/** erf: the series 2/sqrt(pi) e^(-x^2) sum 2^k x^(2k+1) / (2k+1)!! (positive terms) below 2.5, the continued
 * fraction of erfc above; |x| >= 6 is +-1 (erf(6) rounds to 1). */
export function erf(x: number): number {
  const a = Math.abs(x);
  if (a >= 6) return Math.sign(x);
  if (a < 2.5) {
    const x2 = a * a;
    let term = a, sum = a;
    for (let k = 1; term > sum * 1e-17; k++) {
      term *= 2 * x2 / (2 * k + 1);
      sum += term;
    }
    return Math.sign(x) * TWO_OVER_SQRT_PI * Math.exp(-x2) * sum;
  }
  // erfc(a) = e^(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + 2/(a + ...))))), evaluated bottom up
  let tail = a;
  for (let k = 60; k >= 1; k--) tail = a + (k / 2) / tail;
  return Math.sign(x) * (1 - TWO_OVER_SQRT_PI / 2 * Math.exp(-a * a) / tail);
}

export const normalCdf = (x: number): number => 0.5 * (1 + erf(x / Math.SQRT2));

// -- detection --------------------------------------------------------------------------------------------------
/** Symbol sequences of ``length`` with END only as a suffix: sum_{j<=length} A**j. */
function validExtensions(alphabetSize: number, length: number): number {
  let total = 0;
  for (let j = 0; j <= length; j++) total += alphabetSize ** j;
  return total;
}

function levelThreshold(oracle: Oracle, reports: number, candidates: number, budget: number): number {
  const tail = Math.min(0.5, budget / Math.max(1, candidates));
  return Math.sqrt(oracle.variance(0, reports)) * normalQuantile(1 - tail);
}

function plannedCandidates(p: HeavyHittersParams, topK: number): number[] {
  const groups = discoveryGroups(p);
  if (p.algorithm === "sfp") return new Array(groups).fill(256 * symbolCount(p) ** p.fragmentLength!);
  const alphabet = symbolCount(p) - 1;
  const counts: number[] = [];
  let previous = 0;
  for (let level = 0; level < groups; level++) {
    const length = prefixLength(p, level);
    const added = validExtensions(alphabet, length - previous);
    counts.push(level === 0 ? added : Math.min(topK, counts[counts.length - 1]) * added);
    previous = length;
  }
  return counts;
}

/** P(found | f) at n = ``devices`` (n / groups reports per group). */
export function detectionProbability(p: HeavyHittersParams, devices: number, frequency: number,
  topK = DEFAULT_TOP_K, budget = DEFAULT_FALSE_DISCOVERY_BUDGET): number {
  const oracle = oracleOf(p);
  const reports = Math.max(1, Math.floor(devices / groupCount(p)));
  let probability = 1;
  for (const candidates of plannedCandidates(p, topK)) {
    const tau = levelThreshold(oracle, reports, candidates, budget);
    const sigma = Math.sqrt(oracle.variance(frequency, reports, devices));
    probability *= normalCdf((frequency - tau) / sigma);
  }
  return probability;
}

/** The smallest frequency found with probability >= 0.9 (1 when even f = 1 is not). */
export function detectionThreshold(p: HeavyHittersParams, devices: number): number {
  if (detectionProbability(p, devices, 1) < DETECTION_POWER) return 1;
  let low = 0, high = 1;
  for (let i = 0; i < 50; i++) {
    const middle = (low + high) / 2;
    if (detectionProbability(p, devices, middle) >= DETECTION_POWER) high = middle;
    else low = middle;
  }
  return high;
}

/** The configuration with the smallest detection threshold at n = ``devices``: every valid PEM segment length and
 * SFP fragment length (default sketch), in that order, ties to the first. */
export function plan(base: HeavyHittersParams, devices: number): HeavyHittersParams {
  let best: HeavyHittersParams | null = null, bestThreshold = Infinity;
  const consider = (option: HeavyHittersParams): void => {
    const threshold = detectionThreshold(option, devices);
    if (threshold < bestThreshold) [best, bestThreshold] = [option, threshold];
  };
  const b = symbolCount(base);
  for (let length = 1; length <= base.maxLength; length++) {
    if (b ** length <= MAX_LEVEL_BRANCHING) consider({ ...base, algorithm: "pem", segmentLength: length,
      hashCount: defaultHashCount(base.epsilon) });
    if (256 * b ** length <= MAX_FRAGMENT_CANDIDATES) {
      consider({ ...base, algorithm: "sfp", sketchWidth: DEFAULT_SKETCH_WIDTH, sketchDepth: DEFAULT_SKETCH_DEPTH,
        fragmentLength: length, hashFamily: HASH_FAMILIES[0] });
    }
  }
  return best!;
}
