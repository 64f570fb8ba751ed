/** The quantiles kind (``client_sdk/kinds/quantiles/``): a bounded number's distribution as a hierarchical
 * histogram. Each report draws one level of the tree (``randbelow(h)``, then the level's oracle, OLH or Hadamard at
 * the full epsilon over the level's B**l nodes) and sends ``[level, oracle payload]``; a value outside the range is
 * clamped into it (the payload says nothing about it; the device counts it, see {@link stateKey}). The spec's fields, their errors and the branching factor
 * "auto" resolves to are the Python SDK's: geometric boundaries by repeated multiplication (``low * growth``, never
 * ``pow``), the tree's range-variance factor with the same operations in the same order, so both SDKs put a value
 * in the same bucket and choose the same tree. Browsers load this module with the first quantiles spec
 * (dist/browser/quantiles.js).
 *
 * Trust "distributed": the value's bucket (after clamping) is the measurement of a Prio3 histogram of the buckets,
 * sharded and sealed to the leader and the helper by the prio3 kind's sealer: that kind's module (prio3.js, which
 * loads the sharder) is loaded with the first distributed quantiles spec, as the Python kind delegates to its prio3
 * kind; a page of local quantiles campaigns never downloads it. The Prio3 fields are checked by the prio3 kind's
 * parser (the same fields named in each error as ``with_prio3`` in client_sdk/kinds/quantiles/params.py). */

import { Hadamard, OLH } from "../categorical.js";
import { InvalidValue, InvalidValueType, SpecError } from "../errors.js";
import type { Mechanism, MechanismOptions, Payload } from "../mechanisms.js";
import { randbelowNumber, type RandomSource } from "../randomness.js";
import { PyFloat } from "../canonical.js";
import { MAX_EPSILON, MIN_EPSILON, Spec, text } from "../spec.js";
import type { Prio3Params } from "../distributed/spec.js";
import type { Charge, ReportPolicy, Store } from "../store.js";
import { loadKind, loadedKind, notLoaded, provideKind, type CampaignKind, type Envelope } from "./index.js";
import { storedSetting } from "./setting.js";

const FIELDS = ["range", "bucketing", "buckets", "growth", "branching", "oracle"];
// trust "distributed": the Prio3 fields a quantiles spec may give (``PRIO3_FIELDS``), and the listing's aggregators
const PRIO3_FIELDS = ["min_batch", "noise", "prio3", "window"];
const DISTRIBUTED_NOISE = ["gaussian", "laplace"];
const BUCKETINGS = ["uniform", "geometric"];
const ORACLES = ["olh", "hadamard"];
const MIN_BUCKETS = 2, MAX_BUCKETS = 4096, MIN_BRANCHING = 2, MAX_BRANCHING = 16, MAX_GROWTH = 10.0;
const MIN_GROWTH = 1.0 + 1e-6;
const MAX_LEAVES = 8192;
const MAX_RANGE_MAGNITUDE = 1e15, MIN_RANGE_WIDTH = 1e-9;
const isFinite = Number.isFinite as (v: unknown) => v is number;

/** The smallest h >= 1 with branching**h >= buckets. */
export function treeHeight(buckets: number, branching: number): number {
  let height = 1, size = branching;
  while (size < buckets) { size *= branching; height += 1; }
  return height;
}

const groupSums = (values: number[], b: number): number[] => {
  const out: number[] = [];
  for (let i = 0; i < values.length; i += b) {
    let s = 0;
    for (let j = i; j < i + b && j < values.length; j++) s += values[j];
    out.push(s);
  }
  return out;
};

function consistentLevels(levels: number[][], precisions: number[], b: number, root: number): number[][] {
  const height = levels.length;
  const z = levels.map((level) => [...level]);
  let precisionZ = precisions[height - 1];
  for (let index = height - 2; index >= 0; index--) {
    const children = groupSums(z[index + 1], b);
    const fromChildren = precisionZ / b;
    precisionZ = precisions[index] + fromChildren;
    const alpha = precisionZ > 0 ? precisions[index] / precisionZ : 0.0;
    z[index] = z[index].map((own, i) => alpha * own + (1 - alpha) * children[i]);
  }
  const out: number[][] = [];
  let parents = [root];
  for (let index = 0; index < height; index++) {
    const sums = groupSums(z[index], b);
    const level = z[index].map((value, i) => value + (parents[Math.floor(i / b)] - sums[Math.floor(i / b)]) / b);
    out.push(level);
    parents = level;
  }
  return out;
}

function bottomUpWeights(precisions: number[], b: number): number[] {
  const height = precisions.length;
  const weights = new Array<number>(height).fill(1.0);
  let precisionZ = precisions[height - 1];
  for (let index = height - 2; index >= 0; index--) {
    precisionZ = precisions[index] + precisionZ / b;
    weights[index] = precisionZ > 0 ? precisions[index] / precisionZ : 0.0;
  }
  return weights;
}

function adjoint(leafGradient: number[], precisions: number[], b: number): number[][] {
  const height = precisions.length;
  const weights = bottomUpWeights(precisions, b);
  const fromTop: number[][] = new Array(height);
  let gradient = [...leafGradient];
  for (let index = height - 1; index >= 0; index--) {
    const sums = groupSums(gradient, b);
    fromTop[index] = gradient.map((g, i) => g - sums[Math.floor(i / b)] / b);
    gradient = sums.map((s) => s / b);
  }
  const out: number[][] = [];
  let carried = new Array<number>(b).fill(0.0);
  for (let index = 0; index < height; index++) {
    const total = fromTop[index].map((g, i) => (index ? g + carried[Math.floor(i / b)] : g));
    out.push(total.map((t) => weights[index] * t));
    carried = total.map((t) => (1 - weights[index]) * t);
  }
  return out;
}

function lcaCovariances(b: number, height: number): number[] {
  const precisions = new Array<number>(height).fill(1.0 / height);
  const leaves = b ** height;
  const gradient = adjoint([1.0, ...new Array<number>(leaves - 1).fill(0.0)], precisions, b);
  const scaled = gradient.map((level) => level.map((g) => height * g));
  const column = consistentLevels(scaled, precisions, b, 0.0)[height - 1];
  const out: number[] = [];
  for (let k = 0; k < height; k++) out.push(column[b ** (height - k - 1)]);
  out.push(column[0]);
  return out;
}

/** The average variance of a range query over all ranges of buckets, in units of V / n (tree.py). */
export function rangeVarianceFactor(buckets: number, b: number): number {
  const height = treeHeight(buckets, b);
  const c = lcaCovariances(b, height);
  let trace = 0.0;
  for (let j = 0; j <= buckets; j++) {
    let previous = 0;
    for (let k = height; k >= 0; k--) {
      const size = b ** (height - k);
      const pairs = Math.floor(j / size) * size * size + (j % size) ** 2;
      trace += c[k] * (pairs - previous);
      previous = pairs;
    }
  }
  let previousLevel = 0.0, total = 0.0;
  for (let k = height; k >= 0; k--) {
    const size = b ** (height - k);
    let squares = 0.0;
    for (let start = 0; start < buckets; start += size) {
      const stop = Math.min(start + size, buckets);
      const count = stop - start;
      const block = count * buckets - (start + stop - 1) * count / 2;
      squares += block * block;
    }
    total += c[k] * (squares - previousLevel);
    previousLevel = squares;
  }
  const pairsCount = buckets * (buckets + 1) / 2;
  return ((buckets + 1) * trace - total) / pairsCount;
}

/** The branching factor with the smallest average range-query variance (ties: the smaller). */
export function bestBranching(buckets: number, maxBranching = MAX_BRANCHING): number {
  let best = 2, bestVariance = Infinity;
  for (let b = 2; b <= maxBranching; b++) {
    if (b ** treeHeight(buckets, b) > MAX_LEAVES) continue;
    const variance = rangeVarianceFactor(buckets, b);
    if (variance < bestVariance * (1 - 1e-12)) { best = b; bestVariance = variance; }
  }
  return best;
}

/** The buckets+1 boundaries (geometric: by repeated multiplication, as every SDK computes them). */
export function bucketBoundaries(low: number, high: number, bucketing: string, buckets: number, growth: number | null): number[] {
  if (bucketing === "uniform") {
    const width = high - low;
    return [...Array.from({ length: buckets }, (_, i) => low + width * i / buckets), high];
  }
  const out = [low];
  for (let i = 0; i < buckets - 1; i++) out.push(out[out.length - 1] * growth!);
  return [...out, high];
}

function geometricBucketCount(low: number, high: number, growth: number): number {
  let boundary = low, count = 0;
  while (boundary < high) {
    boundary *= growth;
    count += 1;
    if (count > MAX_BUCKETS) throw new SpecError("growth", `gives more than ${MAX_BUCKETS} buckets over the range`);
  }
  return Math.max(count, MIN_BUCKETS);
}

const integerIn = (field: string, v: unknown, low: number, high: number): number => {
  if (!Number.isInteger(v) || (v as number) < low || (v as number) > high) {
    throw new SpecError(field, `must be an integer in [${low}, ${high}]`);
  }
  return v as number;
};

/** A quantiles spec: the range, its buckets, the tree and the level oracle; ``mechanism`` is the kind's name. */
export class QuantilesSpec extends Spec {
  readonly boundaries: number[];
  readonly height: number;
  /** Trust "distributed": the Prio3 histogram of the buckets, its batches and the listing's aggregators. */
  readonly distributed: DistributedPart | null = null;
  constructor(envelope: Envelope, epsilon: number, unit: string | null, readonly low: number, readonly high: number,
    readonly bucketing: string, readonly buckets: number, readonly growth: number | null, readonly branching: number,
    readonly branchingRequested: number | string, readonly oracle: string) {
    super(envelope.name, "quantiles", epsilon, null, null, [low, high], null, null, envelope.expires, unit);
    this.boundaries = bucketBoundaries(low, high, bucketing, buckets, growth);
    this.height = treeHeight(buckets, branching);
  }

  get trust(): string {
    return this.distributed === null ? "local" : "distributed";
  }

  // -- trust "distributed": what the prio3 kind's sealer reads (its DistributedSpec's members) -------------------
  get prio3(): Prio3Params | undefined {
    return this.distributed?.prio3;
  }

  get delta(): number | null {
    return this.distributed?.delta ?? null;
  }

  get aggregators(): unknown {
    return this.distributed?.aggregators ?? null;
  }

  batchAt(now: number): string {
    return this.distributed!.batchAt(now);
  }

  policyFor(policy: ReportPolicy): ReportPolicy {
    return this.distributed!.policyFor(policy);
  }

  /** Local: epsilon per report; distributed: the release's (epsilon, delta), once per batch. */
  override charge(): [number, number] {
    return [this.epsilon, this.distributed?.delta ?? 0];
  }

  /** kind, trust and epsilon with every parameter the reports depend on (local: the resolved branching factor and
   * the oracle; distributed: the Prio3 circuit, noise, batch rules and delta instead). */
  override identity(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      name: this.name, kind: "quantiles", trust: this.trust, epsilon: new PyFloat(this.epsilon),
      range: [new PyFloat(this.low), new PyFloat(this.high)], bucketing: this.bucketing, buckets: this.buckets,
    };
    const p = this.distributed?.prio3;
    if (p === undefined) Object.assign(out, { branching: this.branching, oracle: this.oracle });
    else Object.assign(out, { prio3: p.type, noise: p.noise, min_batch: p.min_batch, window: p.window, chunk_length: p.chunk_length });
    if (this.growth !== null) out.growth = new PyFloat(this.growth);
    if (this.unit) out.unit = this.unit;
    if (this.delta !== null) out.delta = new PyFloat(this.delta);
    if (this.expires) out.expires = this.expires;
    return out;
  }

  /** The bucket of a value in the range (uniform: floor; geometric: the last boundary at or below it). */
  bucketOf(value: number): number {
    let index: number;
    if (this.bucketing === "uniform") {
      index = Math.floor((value - this.low) * this.buckets / (this.high - this.low));
    } else {
      let lo = 0, hi = this.boundaries.length; // bisect_right
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (value < this.boundaries[mid]) hi = mid; else lo = mid + 1;
      }
      index = lo - 1;
    }
    return Math.min(Math.max(index, 0), this.buckets - 1);
  }
}

/** The members of the prio3 kind's spec (DistributedSpec) a distributed quantiles spec takes. */
interface DistributedPart {
  readonly prio3: Prio3Params;
  readonly delta: number | null;
  readonly aggregators: unknown;
  batchAt(now: number): string;
  policyFor(policy: ReportPolicy): ReportPolicy;
}

function parse(d: Record<string, unknown>, envelope: Envelope): QuantilesSpec {
  const distributed = envelope.trust === "distributed";
  if (!distributed) {
    if ("aggregators" in d) throw new SpecError("aggregators", "unknown field"); // a distributed listing's block only
    for (const field of [...PRIO3_FIELDS].filter((f) => f in d)) throw new SpecError(field, "only allowed with trust 'distributed'");
  }
  const epsilon = d.epsilon;
  if (!isFinite(epsilon) || !(epsilon >= MIN_EPSILON && epsilon <= MAX_EPSILON)) {
    throw new SpecError("epsilon", `must be a number in [${MIN_EPSILON}, ${MAX_EPSILON}]`);
  }
  if (!("range" in d)) throw new SpecError("range", "is required: [low, high], the values' range");
  const range = d.range;
  if (!Array.isArray(range) || range.length !== 2) throw new SpecError("range", "must be a list [low, high] of two numbers");
  const [low, high] = range;
  if (!isFinite(low) || !isFinite(high)) throw new SpecError("range", "low and high must be finite numbers");
  if (Math.max(Math.abs(low), Math.abs(high)) > MAX_RANGE_MAGNITUDE) throw new SpecError("range", "must be within [-1e15, 1e15]");
  if (!(high - low >= MIN_RANGE_WIDTH)) throw new SpecError("range", "low must be below high by at least 1e-9");
  const bucketing = "bucketing" in d ? d.bucketing : "uniform";
  if (typeof bucketing !== "string" || !BUCKETINGS.includes(bucketing)) throw new SpecError("bucketing", `must be one of ${BUCKETINGS}`);
  let growth: number | null = null, buckets: number;
  if (bucketing === "uniform") {
    if ("growth" in d) throw new SpecError("growth", "applies to geometric bucketing only");
    if (!("buckets" in d)) throw new SpecError("buckets", "is required for uniform bucketing");
    buckets = integerIn("buckets", d.buckets, MIN_BUCKETS, MAX_BUCKETS);
  } else {
    if ("buckets" in d) throw new SpecError("buckets", "is derived from growth for geometric bucketing: give growth only");
    if (low <= 0) throw new SpecError("range", "geometric bucketing needs low > 0 (the first boundary)");
    const g = d.growth;
    if (!isFinite(g) || !(g >= MIN_GROWTH && g <= MAX_GROWTH)) throw new SpecError("growth", `must be a number in (1, ${MAX_GROWTH}]`);
    growth = g;
    buckets = geometricBucketCount(low, high, g);
  }
  const oracle = "oracle" in d && !distributed ? d.oracle : "olh";
  if (typeof oracle !== "string" || !ORACLES.includes(oracle)) throw new SpecError("oracle", `must be one of ${ORACLES}`);
  const requested = "branching" in d && !distributed ? d.branching : "auto";
  let branching: number;
  if (distributed) {
    branching = 2; // no tree: the aggregators count every bucket
  } else if (requested === "auto") {
    branching = bestBranching(buckets);
  } else {
    branching = integerIn("branching", requested, MIN_BRANCHING, MAX_BRANCHING);
    if (branching ** treeHeight(buckets, branching) > MAX_LEAVES) {
      throw new SpecError("branching", `pads ${buckets} buckets to more than ${MAX_LEAVES} leaves`);
    }
  }
  const unit = d.unit;
  if (unit != null && !(text(unit, 16) && /^\P{Cc}+$/u.test(unit))) throw new SpecError("unit", "must be 1-16 characters, no controls");
  const spec = new QuantilesSpec(envelope, epsilon, (unit as string | null) ?? null, low, high, bucketing, buckets, growth,
    branching, requested as number | string, oracle);
  if (distributed) (spec as { distributed: DistributedPart }).distributed = withPrio3(d, envelope, epsilon, buckets);
  return spec;
}

/** The Prio3 histogram of ``buckets`` entries of a distributed spec (``with_prio3``): its noise, batch rules and
 * aggregators checked by the prio3 kind's parser, as the Python kind's ``prio3_from_dict``. */
function withPrio3(d: Record<string, unknown>, envelope: Envelope, epsilon: number, buckets: number): DistributedPart {
  for (const field of ["branching", "oracle"]) {
    if (field in d) throw new SpecError(field, "not allowed with trust 'distributed' (the aggregators count every bucket)");
  }
  if ((d.prio3 ?? "histogram") !== "histogram") throw new SpecError("prio3", "must be 'histogram' (or absent) for a distributed quantiles campaign");
  if (!DISTRIBUTED_NOISE.includes(d.noise as string)) {
    throw new SpecError("noise", `must be one of ${DISTRIBUTED_NOISE} for a distributed quantiles campaign`);
  }
  const prio3 = loadedKind("prio3");
  if (prio3 === undefined) throw notLoaded("trust", "prio3");
  const source: Record<string, unknown> = { prio3: "histogram", epsilon, domain: Array.from({ length: buckets }, (_, i) => i) };
  for (const field of [...PRIO3_FIELDS, "aggregators"]) if (field in d && field !== "prio3") source[field] = d[field];
  return prio3.parse(source, envelope) as unknown as DistributedPart;
}

/** The value clamped into the range (the payload says nothing of it); throws for NaN and what is not a number. */
function clamp(spec: QuantilesSpec, value: unknown): number {
  if (typeof value !== "number") throw new InvalidValueType(`campaign ${spec.name}: a quantiles campaign takes a number`);
  if (Number.isNaN(value)) throw new InvalidValue(`campaign ${spec.name}: a quantiles campaign cannot report NaN`);
  return Math.min(Math.max(value, spec.low), spec.high);
}

/** The store's key of a campaign's device state, ``{"clamped": n}``: how many of its values were clamped into the
 * range (the Python kind's ``state["clamped"]``), kept on the device and never sent, so that an application can see
 * that its range is too narrow. */
export const stateKey = (campaign: string): string => `quantiles:${campaign}`;

/** ``payload``, once a clamped ``value`` is counted in the campaign's state: written with the report and its charge
 * in one store step (``Charge.state``), so a report the ledger refuses counts none and a count changed meanwhile
 * makes the report again. "state_error" for a stored state that is not a count (kept as it is). */
async function counted(spec: QuantilesSpec, value: unknown, charge: Charge, store: Store, payload: Payload | string
): Promise<Payload | string> {
  if (clamp(spec, value) === value || typeof payload === "string") return payload;
  const key = stateKey(spec.name), expected = await storedSetting(store, key);
  let clamped;
  try {
    clamped = expected === null ? 0 : JSON.parse(expected).clamped ?? 0;
  } catch {
    return "state_error";
  }
  if (!Number.isSafeInteger(clamped)) return "state_error";
  charge.state = { key, value: JSON.stringify({ clamped: clamped + 1 }), expected };
  return payload;
}

/** Makes ``[level, oracle payload]``: the level uniform on 1..h, then the level's oracle on the value's node; ``seal``
 * counts a clamp. */
class QuantilesReporter implements Mechanism {
  readonly #oracles = new Map<number, OLH | Hadamard>();
  constructor(readonly spec: QuantilesSpec, readonly rng: RandomSource) {}

  #oracle(level: number): OLH | Hadamard {
    let oracle = this.#oracles.get(level);
    if (oracle === undefined) {
      const size = this.spec.branching ** level;
      const levelSpec = new Spec(`quantiles-level-${level}`, this.spec.oracle, this.spec.epsilon,
        Array.from({ length: size }, (_, i) => i), null, null, null, null, null);
      oracle = this.spec.oracle === "olh" ? new OLH(levelSpec, this.rng) : new Hadamard(levelSpec, this.rng);
      this.#oracles.set(level, oracle);
    }
    return oracle;
  }

  perturb(value: unknown): Payload {
    const bucket = this.spec.bucketOf(clamp(this.spec, value));
    const level = 1 + randbelowNumber(this.rng, this.spec.height);
    const node = Math.floor(bucket / this.spec.branching ** (this.spec.height - level));
    // a nested list (the level oracle's own payload inside): JSON like every payload, wider than the local kind's type
    return [level, this.#oracle(level).perturbIndex(node)] as unknown as Payload;
  }

  seal(payload: unknown, _id: string, charge: Charge, _context: object, store: Store, value: unknown): Promise<Payload | string> {
    return counted(this.spec, value, charge, store, payload as Payload);
  }
}

/** Trust "distributed": the measurement is the clamped value's bucket (``prio3_measurement``), sharded and sealed by
 * the prio3 kind's sealer (the same envelope as every Prio3 report, the VDAF's context this spec's fingerprint); a
 * clamp is counted as for a local report. */
class DistributedQuantilesReporter implements Mechanism {
  readonly #sealer: Mechanism;
  constructor(readonly spec: QuantilesSpec, rng: RandomSource, options: MechanismOptions) {
    this.#sealer = loadedKind("prio3")!.reporter(spec, rng, options); // loaded with the spec (parse)
  }

  perturb(value: unknown): Payload {
    return this.spec.bucketOf(clamp(this.spec, value));
  }

  async seal(...args: Parameters<NonNullable<Mechanism["seal"]>>): Promise<Payload | string> {
    return counted(this.spec, args[5], args[2], args[4], await this.#sealer.seal!(...args));
  }
}

const distributedData = (d: Record<string, unknown>): boolean => d.trust === "distributed";

export const kind: CampaignKind = {
  name: "quantiles",
  trustModels: ["local", "distributed"],
  fields: [...FIELDS, ...PRIO3_FIELDS, "aggregators"],
  parse,
  reporter: (spec, rng, options) => ((spec as QuantilesSpec).distributed === null
    ? new QuantilesReporter(spec as QuantilesSpec, rng) : new DistributedQuantilesReporter(spec as QuantilesSpec, rng, options)),
  // a distributed spec is parsed (its Prio3 fields) and sealed by the prio3 kind: its module is loaded first
  ready: (d) => !distributedData(d) || loadedKind("prio3") !== undefined,
  prepare: (d) => (distributedData(d) ? loadKind("prio3") : Promise.resolve()),
};

provideKind(kind);

