/** The device client: ``record()`` perturbs on the device, charges the privacy ledger and queues the perturbed
 * report durably; a background loop (and ``flush()``) delivers queued reports to the collector. The contract is
 * the Python SDK's ``client_sdk.Client`` (docs/sdk.md; the differences are in docs/sdk-js.md). */

import { acknowledgement, conditionFor, problem, retryAfter } from "./answers.js";
import { InvalidValue, InvalidValueType, LDPError, RecordingError, SpecError, UnsupportedSpec, ValueNotInDomain } from "./errors.js";
import { fromHex, toHex, utf8 } from "./hash.js";
import { isKind, loadKind, specNeeds } from "./kinds/index.js";
import { isLoaded, mechanismFromSpec, reporterReady, type Mechanism, type Payload } from "./mechanisms.js";
import { randbelowNumber, secureRandom, uniformUnit, type RandomSource } from "./randomness.js";
import { NUMERIC_MECHANISMS, fingerprinted, loadSpec, Spec } from "./spec.js";
import type { AggregatorsOption } from "./distributed/aggregators.js";
import {
  DEFAULT_LIMITS, DEFAULT_POLICY, DROP_COUNTERS, type Charge, type QueueLimits, type QueuedReport, type ReportPolicy,
  type Spending, type Store,
} from "./store.js";

export type RecordStatus = "queued" | "refused_by_policy" | "held" | "spec_unavailable" | "unknown_campaign"
  | "campaign_closed" | "upload_disabled" | "client_closed" | "state_error" | "aggregator_mismatch"
  | "aggregators_not_configured";

/** The outcome of one ``record()``: ``ok`` when the report was queued. */
export interface Recorded {
  status: RecordStatus;
  reportId: string | null;
  ok: boolean;
}

export interface FlushResult {
  sent: number;
  rejected: number;
  dropped: number;
  remaining: number;
  condition: string | null;
}

export interface ClientStatus {
  uploadEnabled: boolean;
  pending: number;
  pendingBytes: number;
  condition: string | null;
  detail: string | null;
  retryIn: number;
  recorded: Record<string, number>;
  sent: number;
  rejected: number;
  dropped: Record<string, number>;
  unknownCampaigns: string[];
}

export interface ClientOptions {
  url: string;
  apiKey: string;
  /** Campaigns whose specs to fetch ahead. */
  campaigns?: string[];
  /** Distributed campaigns: the helper's URL (its HPKE config is fetched from the helper itself, never only from
   * the leader) and optional pinned configs, as in the Python SDK: ``{helper: "https://helper.example"}``. */
  aggregators?: AggregatorsOption;
  /** Specs shipped with the app (objects or JSON text, as the collector serves them): used until fetched ones arrive. */
  specs?: unknown[];
  /** Where state lives: default a file journal in ``stateDir`` (Node) or IndexedDB database ``dbName`` (browsers). */
  store?: Store;
  stateDir?: string;
  dbName?: string;
  policy?: Partial<ReportPolicy>;
  policies?: Record<string, Partial<ReportPolicy>>;
  queueLimits?: Partial<QueueLimits>;
  batchSize?: number;
  maxRequestBytes?: number;
  /** Seconds between background deliveries. */
  flushInterval?: number;
  specTtl?: number;
  timeout?: number;
  backoffBase?: number;
  backoffCap?: number;
  closeTimeout?: number;
  maxHeld?: number;
  /** Browsers: send what fits 64 KiB with ``fetch(..., {keepalive: true})`` on pagehide / hidden (default true). */
  finalFlush?: boolean;
  background?: boolean;
  onCondition?: (condition: string | null, detail: string | null) => void;
  logger?: Pick<Console, "warn">;
  fetch?: typeof fetch;
  clock?: () => number;
  rng?: RandomSource;
}

type StoreFactory = (options: ClientOptions) => Store;
let defaultStoreFactory: StoreFactory = () => {
  throw new TypeError("no default store: pass options.store");
};

/** The store a Client uses when none is given (the Node entry point sets the file store, the browser one IndexedDB). */
export function setDefaultStore(factory: StoreFactory): void {
  defaultStoreFactory = factory;
}

// The local kind's randomizers in modules of their own, beside this one in dist/ and dist/browser/: browsers load one
// with the first campaign that needs it (the Node entry point loads them at once).
const MODULES: Record<string, string> = { rappor: "./rappor.js" };
for (const name of NUMERIC_MECHANISMS) MODULES[name] = "./numeric.js";

/** Load what reports of mechanism ``name`` need: its kind (``prio3``, or a kind registered with ``registerKind``),
 * or the local kind and the randomizer's module (which the runtime's module map loads once). Resolves at once when
 * it is loaded. */
export async function loadMechanism(name: string): Promise<void> {
  if (isLoaded(name)) return;
  if (isKind(name)) {
    await loadKind(name);
    return;
  }
  await loadKind("local");
  const path = MODULES[name];
  if (path !== undefined && !isLoaded(name)) await import(/* a variable: bundlers leave the path alone */ path);
}

/** Load what the reports of ``spec`` need: its kind's module and what the kind loads for them (local: the
 * randomizer's module). Resolves at once when they can be made. */
function loadReporter(spec: Spec): Promise<void> {
  if (reporterReady(spec)) return Promise.resolve();
  return loadKind(spec.kind).then((kind) => kind.prepareReporter?.(spec)).then(() => undefined);
}

/** Load what parsing these specs (objects or JSON text) needs: their kinds' modules. */
const loadFor = async (sources: unknown[]): Promise<void> => {
  for (const source of sources) await specNeeds(source)?.().catch(() => undefined); // parsing names the problem
};

const UPLOAD_SETTING = "upload_enabled";
const DELETED_COUNTER = "deleted_upload_disabled";
const KEEPALIVE_BUDGET = 60_000; // under the browsers' 64 KiB for all keepalive requests in flight, headers included

interface Held { campaign: string; value: unknown; when: number }

export class Client {
  readonly url: string;
  readonly store: Store;
  readonly ready: Promise<void>;
  readonly #headers: Record<string, string>;
  readonly #policy: ReportPolicy;
  readonly #policies: Record<string, ReportPolicy>;
  readonly #limits: QueueLimits;
  readonly #batchSize: number;
  readonly #maxRequestBytes: number;
  readonly #flushInterval: number;
  readonly #specTtl: number;
  readonly #timeout: number;
  readonly #backoffBase: number;
  readonly #backoffCap: number;
  readonly #closeTimeout: number;
  readonly #maxHeld: number;
  readonly #fetcher: typeof fetch;
  readonly #clock: () => number;
  readonly #rng: RandomSource;
  readonly #logger: Pick<Console, "warn">;
  readonly #onCondition?: (condition: string | null, detail: string | null) => void;
  readonly #options: ClientOptions; // what the distributed module reads: aggregators, how to reach the helper
  #loaded = false;
  #loadError: Error | null = null;
  #uploadEnabled = true;
  #closed = false;
  #specs = new Map<string, { spec: Spec; fetched: number }>();
  #specErrors = new Map<string, SpecError>();
  #mechanisms = new Map<Spec, Mechanism>();
  #wanted: Set<string>;
  #unknown = new Set<string>();
  #closedCampaigns = new Set<string>();
  #specsChecked = -Infinity;
  #held: Held[] = [];
  #secret: Uint8Array | null = null;
  #secretPending = false;
  #counts: Record<string, number> = {};
  #sent = 0;
  #rejected = 0;
  #failures = 0;
  #nextAttempt = 0;
  #batchLimit: number;
  #batchCap = Infinity;
  #condition: string | null = null;
  #detail: string | null = null;
  #logged = new Set<string>();
  #sending: Promise<unknown> = Promise.resolve();
  #timer: ReturnType<typeof setTimeout> | null = null;
  readonly #unsent = new Map<string, QueuedReport>();
  readonly #pageHandler: (() => void) | null = null;

  constructor(options: ClientOptions) {
    if (typeof options?.url !== "string" || !/^https?:\/\//.test(options.url)) {
      throw new TypeError("url: http(s) only");
    }
    if (typeof options.apiKey !== "string") throw new TypeError("apiKey must be a string");
    this.url = options.url.replace(/\/+$/, "");
    this.#headers = { Authorization: `Bearer ${options.apiKey}`, Accept: "application/json" };
    this.#policy = checkedPolicy({ ...DEFAULT_POLICY, ...options.policy });
    this.#policies = Object.fromEntries(Object.entries(options.policies ?? {})
      .map(([name, p]) => [name, checkedPolicy({ ...DEFAULT_POLICY, ...p })]));
    this.#limits = { ...DEFAULT_LIMITS, ...options.queueLimits };
    if (!(this.#limits.maxReports >= 1 && this.#limits.maxBytes >= 1024 && this.#limits.maxAgeSeconds > 0)) {
      throw new RangeError("queueLimits");
    }
    this.#batchSize = options.batchSize ?? 500;
    if (!(Number.isInteger(this.#batchSize) && this.#batchSize >= 1 && this.#batchSize <= 5000)) {
      throw new RangeError("batchSize: 1 to 5000");
    }
    this.#batchLimit = this.#batchSize;
    this.#maxRequestBytes = options.maxRequestBytes ?? 1024 * 1024;
    this.#flushInterval = options.flushInterval ?? 30;
    this.#specTtl = options.specTtl ?? 3600;
    this.#timeout = options.timeout ?? 10;
    this.#backoffBase = options.backoffBase ?? 0.5;
    this.#backoffCap = options.backoffCap ?? 300;
    if (!(this.#flushInterval > 0 && this.#timeout > 0 && this.#backoffBase > 0 && this.#backoffCap >= this.#backoffBase)) {
      throw new RangeError("timeouts");
    }
    this.#closeTimeout = options.closeTimeout ?? 5;
    this.#maxHeld = options.maxHeld ?? 1000;
    this.#fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#clock = options.clock ?? (() => Date.now() / 1000);
    this.#rng = options.rng ?? secureRandom;
    this.#logger = options.logger ?? console;
    this.#onCondition = options.onCondition;
    this.#wanted = new Set(options.campaigns ?? []);
    this.#options = options;
    for (const source of options.specs ?? []) {
      if (specNeeds(source)) this.#shipped.push(source); // parsed once its kind's module has loaded
      else this.#ship(source);
    }
    this.store = options.store ?? defaultStoreFactory(options);
    this.ready = this.#open();
    const background = options.background ?? true;
    const page = globalThis as unknown as { addEventListener?: Function; document?: { visibilityState: string } };
    if (background && (options.finalFlush ?? true) && typeof page.addEventListener === "function" && page.document) {
      this.#pageHandler = () => {
        if (page.document!.visibilityState === "hidden") this.finalFlush();
      };
      page.addEventListener("pagehide", this.#pageHandler);
      page.addEventListener("visibilitychange", this.#pageHandler);
    }
    if (background) this.ready.then(() => this.#schedule(0), () => undefined);
  }

  #shipped: unknown[] = [];

  /** A spec shipped with the app: a broken one is a programming error (thrown); usable once fingerprinted (in
   * ``open``), refreshed at the first chance. */
  #ship(source: unknown): void {
    this.#shippedSpecs.push(loadSpec(source));
  }
  #shippedSpecs: Spec[] = [];

  async #open(): Promise<void> {
    try {
      const snapshot = await this.store.load();
      const texts = Object.values(snapshot.specs).map((c) => c.text);
      await loadFor([...this.#shipped, ...texts]);
      for (const source of this.#shipped) this.#ship(source);
      for (const spec of this.#shippedSpecs) {
        if (!this.#specs.has(spec.name)) this.#specs.set(spec.name, { spec: await fingerprinted(spec), fetched: -Infinity });
      }
      this.#uploadEnabled = snapshot.settings[UPLOAD_SETTING] !== "0";
      this.#secret = snapshot.secret === null ? null : fromHex(snapshot.secret);
      for (const [campaign, cached] of Object.entries(snapshot.specs)) {
        // the empty text: a campaign the collector listed as closed (final: a closed campaign takes no new version),
        // so that record() answers campaign_closed from the start on, as the Python SDK does
        const known = this.#specs.get(campaign);
        if (!cached.text) {
          this.#closedCampaigns.add(campaign);
          continue;
        }
        if (known && known.fetched >= cached.fetched) continue;
        try {
          this.#specs.set(campaign, { spec: await fingerprinted(loadSpec(cached.text, true)), fetched: cached.fetched });
        } catch (error) {
          if (error instanceof SpecError) this.#specErrors.set(campaign, error);
        }
      }
      this.#loaded = true;
    } catch (error) {
      this.#loadError = error as Error;
      this.#logOnce("state", `state: ${error}`);
    }
  }

  // -- recording --------------------------------------------------------------------------------------------
  /** Perturb ``value`` for ``campaign`` and queue it; resolves once the report is durable. Throws (at once) only
   * RecordingError subclasses for programming errors; every operational condition is a resolved status. */
  record(campaign: string, value: unknown): Promise<Recorded> {
    if (typeof campaign !== "string") throw new InvalidValueType("campaign must be a string");
    if (this.#closed) return Promise.resolve(this.#outcome("client_closed", campaign));
    if (!this.#loaded) {
      // the state is loading (or failed to): validate now, so that a bug shows on the first call
      const spec = this.#specs.get(campaign)?.spec ?? this.#shippedSpecs.find((s) => s.name === campaign);
      if (spec !== undefined) this.#perturb(spec, value, true);
      if (this.#loadError !== null) return Promise.resolve(this.#outcome("state_error", campaign));
      return this.ready.then(() => this.record(campaign, value));
    }
    let known = this.#knownSpec(campaign);
    if (known instanceof Spec && !reporterReady(known)) {
      this.#perturb(known, value, true);
      loadReporter(known).then(() => this.#releaseHeld(), (error) => {
        this.#logOnce(`module:${known}`, `${error}`);
      });
      known = "spec_unavailable"; // held until the randomizer has loaded
    }
    if (known === "spec_unavailable" && this.#uploadEnabled && this.#hold(campaign, value, this.#clock())) {
      known = "held";
      this.#wake();
    }
    if (typeof known === "string") {
      return Promise.resolve(this.#outcome(this.#uploadEnabled ? known : "upload_disabled", campaign));
    }
    return this.#queueValue(known, campaign, value, this.#clock()).then((r) => this.#outcome(r.status, campaign, r.reportId));
  }

  /** Validate and perturb now (throws for bad values), then charge and queue in one atomic store step. */
  #queueValue(spec: Spec, campaign: string, value: unknown, now: number): Promise<Recorded> {
    const reportId = uuid4();
    const payload = this.#perturb(spec, value);
    const day = new Date(now * 1000).toISOString().slice(0, 10);
    const reporter = this.#mechanism(spec);
    // a sealing kind's reporter (prio3) adds the report's batch (one report per batch), its delta, and the period
    const charge: Charge = { campaign, epsilon: spec.epsilon, policy: this.#policies[campaign] ?? this.#policy, now,
      budget: spec.budget };
    return (async (): Promise<Recorded> => {
      await this.ready;
      if (!this.#loaded) return recorded("state_error");
      if (!this.#uploadEnabled) return recorded("upload_disabled");
      if (spec.expiredOn(day)) return recorded("campaign_closed");
      let body = payload;
      if (reporter.seal) {
        const sealed = await reporter.seal(payload, reportId, charge, this.#options, this.store, value);
        // until the helper answers, within the same maxHeld as values waiting for their spec
        if (sealed === "held" && !this.#hold(campaign, value, now)) return recorded("spec_unavailable");
        if (typeof sealed === "string") return recorded(sealed as RecordStatus);
        body = sealed;
      }
      try {
        if (spec.mechanism === "rappor" && this.#secretPending) body = await this.#withStoredSecret(spec, value);
        const report = { report_id: reportId, campaign, fingerprint: spec.fingerprint, payload: body };
        const text = JSON.stringify(report);
        const queued: QueuedReport = { id: reportId, campaign, text, size: utf8(text).length, created: now };
        const outcome = await this.store.enqueue(queued, charge, this.#limits);
        if (outcome === "refused") return recorded("refused_by_policy");
        // the kind's stored state changed since it made the report (charge.state): made again from the stored one
        if (outcome === "stale") return await this.#queueValue(spec, campaign, value, now);
        this.#unsent.set(reportId, queued);
        if (this.#unsent.size > this.#limits.maxReports) this.#unsent.delete(this.#unsent.keys().next().value!);
        if ((await this.store.totals()).count >= this.#batchSize) this.#wake();
        return recorded("queued", reportId);
      } catch (error) {
        this.#logOnce("state", `state: ${error}`);
        return recorded("state_error");
      }
    })();
  }

  /** The payload for ``value``; ``dryRun`` only validates (RAPPOR with a throwaway secret: nothing is kept). */
  #perturb(spec: Spec, value: unknown, dryRun = false): Payload {
    if (Number.isNaN(value)) throw new InvalidValue(`campaign ${spec.name} cannot report NaN`);
    try {
      if (dryRun || !reporterReady(spec)) { // validated now, perturbed once the randomizer is loaded
        if (spec.rappor) mechanismFromSpec(spec, { secret: new Uint8Array(32) }).perturb(value); // a throwaway secret
        else if (spec.isNumeric && typeof value !== "number") throw new InvalidValueType(`campaign ${spec.name} takes a number`);
        else if (!spec.isNumeric) this.#mechanism(spec).perturb(value);
        return 0;
      }
      return this.#mechanism(spec).perturb(value);
    } catch (error) {
      if (error instanceof ValueNotInDomain || error instanceof SpecError) throw new InvalidValue(error.message);
      if (error instanceof RecordingError) throw error;
      if (error instanceof TypeError) throw new InvalidValueType(error.message);
      throw new InvalidValue(String((error as Error).message ?? error));
    }
  }

  #mechanism(spec: Spec): Mechanism {
    let mechanism = this.#mechanisms.get(spec);
    if (mechanism === undefined) {
      try {
        if (spec.mechanism === "rappor" && this.#secret === null) {
          this.#secret = this.#rng.tokenBytes(32); // stored with the first report made with it
          this.#secretPending = true;
        }
        mechanism = mechanismFromSpec(spec, { rng: this.#rng, secret: this.#secret ?? undefined });
      } catch (error) {
        throw new UnsupportedSpec(`campaign ${spec.name}: ${(error as Error).message}`);
      }
      this.#mechanisms.set(spec, mechanism);
    }
    return mechanism;
  }

  /** Store a secret this client drew; if one was stored first, perturb again with that one. */
  async #withStoredSecret(spec: Spec, value: unknown): Promise<Payload> {
    const stored = await this.store.storeSecret(toHex(this.#secret!));
    this.#secretPending = false;
    if (stored !== toHex(this.#secret!)) {
      this.#secret = fromHex(stored);
      for (const [spec, m] of this.#mechanisms) if (m.spec.mechanism === "rappor") this.#mechanisms.delete(spec);
    }
    return this.#perturb(spec, value);
  }

  #knownSpec(campaign: string): Spec | RecordStatus {
    const error = this.#specErrors.get(campaign);
    if (error) throw new UnsupportedSpec(`campaign ${campaign}: ${error.message}`);
    if (this.#closedCampaigns.has(campaign)) return "campaign_closed";
    this.#wanted.add(campaign);
    const held = this.#specs.get(campaign);
    if (held === undefined) {
      if (this.#unknown.has(campaign)) return "unknown_campaign";
      this.#wake();
      return "spec_unavailable";
    }
    if (this.#clock() - held.fetched >= this.#specTtl) this.#wake();
    return held.spec;
  }

  /** Keep a value in memory (never stored) until its spec or its helper's config arrives: false past maxHeld */
  #hold(campaign: string, value: unknown, when: number): boolean {
    return this.#held.length < this.#maxHeld && this.#held.push({ campaign, value, when }) > 0;
  }

  async #releaseHeld(): Promise<void> {
    const held = this.#held;
    this.#held = [];
    const keep: Held[] = [];
    for (const item of held) {
      let status: RecordStatus;
      try {
        const known = this.#knownSpec(item.campaign);
        if (known === "spec_unavailable") {
          keep.push(item);
          continue;
        }
        status = typeof known === "string" ? known : (await this.#queueValue(known, item.campaign, item.value, item.when)).status;
      } catch (error) {
        status = error instanceof LDPError ? "invalid" as RecordStatus : "state_error";
      }
      this.#count(`held_${status}`);
    }
    this.#held = keep.concat(this.#held);
  }

  #outcome(status: RecordStatus, campaign: string, reportId: string | null = null): Recorded {
    this.#count(status);
    if (!["queued", "refused_by_policy", "held"].includes(status)) {
      this.#logOnce(`${status}:${campaign}`, `${campaign}: ${status}`);
    }
    return recorded(status, reportId);
  }

  #count(name: string): void {
    this.#counts[name] = (this.#counts[name] ?? 0) + 1;
  }

  // -- status and consent -----------------------------------------------------------------------------------
  async spent(campaign: string): Promise<Spending> {
    await this.ready;
    return this.store.spent(campaign);
  }

  async status(): Promise<ClientStatus> {
    await this.ready;
    const totals = this.#loaded ? await this.store.totals() : { count: 0, bytes: 0 };
    const counters = this.#loaded ? await this.store.counters() : {};
    const dropped = Object.fromEntries([...DROP_COUNTERS, DELETED_COUNTER].map((n) => [n, counters[n] ?? 0]));
    return {
      uploadEnabled: this.#uploadEnabled, pending: totals.count, pendingBytes: totals.bytes, condition: this.#condition,
      detail: this.#detail, retryIn: Math.max(0, this.#nextAttempt - this.#clock()), recorded: { ...this.#counts },
      sent: this.#sent, rejected: this.#rejected, dropped, unknownCampaigns: [...this.#unknown].sort(),
    };
  }

  /** Off: no recording, no request at all, queued reports deleted; the ledger stays. Stored across restarts. */
  async setUploadEnabled(enabled: boolean): Promise<void> {
    await this.ready;
    this.#uploadEnabled = enabled;
    await this.store.setSetting(UPLOAD_SETTING, enabled ? "1" : "0");
    if (!enabled) {
      this.#held = [];
      this.#unsent.clear();
      await this.store.clear(DELETED_COUNTER);
    } else {
      this.#wake();
    }
  }

  /** Close the client and remove everything it stored (queue, ledger, specs, the RAPPOR secret). */
  async deleteLocalData(): Promise<void> {
    this.#closed = true;
    this.#stop();
    await this.ready;
    this.#held = [];
    this.#unsent.clear();
    await this.#sending.catch(() => undefined);
    await this.store.destroy();
  }

  // -- specs --------------------------------------------------------------------------------------------------
  #specsNeeded(): boolean {
    const now = this.#clock();
    for (const campaign of this.#wanted) {
      // an unknown or closed campaign is asked about again with the next listing due
      const fetched = this.#unknown.has(campaign) || this.#closedCampaigns.has(campaign) ? this.#specsChecked
        : this.#specs.get(campaign)?.fetched;
      if (fetched === undefined || now - fetched >= this.#specTtl) return true;
    }
    return false;
  }

  /** Fetch the wanted specs now (one GET /v1/campaigns); true when the collector answered. */
  async prepare(campaigns: string[] = []): Promise<boolean> {
    for (const c of campaigns) this.#wanted.add(c);
    await this.ready;
    if (!this.#loaded || !this.#uploadEnabled || this.#closed) return false;
    const ok = await this.#refreshSpecs(this.#timeout);
    if (ok && this.#held.length) await this.#releaseHeld();
    return ok;
  }

  async #refreshSpecs(timeout: number): Promise<boolean> {
    const now = this.#clock();
    let response: Response;
    try {
      response = await this.#request("GET", "/v1/campaigns", undefined, timeout);
    } catch (error) {
      this.#fail("unreachable", String(error), null);
      return false;
    }
    const data = await jsonOrNull(response);
    if (response.status !== 200) {
      this.#fail(conditionFor(response.status), `HTTP ${response.status}: ${problem(data)}`,
        retryAfter(response.headers.get("retry-after"), now));
      return false;
    }
    const items = data && typeof data === "object" ? (data as { campaigns?: unknown }).campaigns : undefined;
    if (!Array.isArray(items)) {
      this.#fail("unexpected_answer", "no campaign list", null);
      return false;
    }
    // the modules of the wanted campaigns only (a page of local campaigns never downloads the distributed code)
    await loadFor(items.filter((item) => this.#wanted.has(item?.name)).map((item) => item.spec)).catch(() => undefined);
    const listing = new Map<string, Record<string, unknown>>();
    for (const item of items) {
      if (item?.spec instanceof Object && typeof item.name === "string") { // parsed JSON: objects and arrays
        listing.set(item.name, item);
      }
    }
    for (const campaign of this.#wanted) {
      const item = listing.get(campaign);
      if (item === undefined) {
        if (!this.#unknown.has(campaign)) this.#logOnce(`unknown:${campaign}`, `${campaign}: unknown`);
        this.#unknown.add(campaign);
        continue;
      }
      this.#unknown.delete(campaign);
      if (item.closed === true) {
        this.#closedCampaigns.add(campaign);
        // the empty text: closed (see #open); a cache (not stored, the next listing says it again)
        await this.store.putSpec(campaign, "", now).catch(() => undefined);
        continue;
      }
      this.#closedCampaigns.delete(campaign);
      let spec: Spec;
      // a distributed campaign's aggregators block (both HPKE configs, the helper's URL) is kept with its spec
      const source = item.aggregators ? { ...item.spec as object, aggregators: item.aggregators } : item.spec;
      try {
        spec = await fingerprinted(loadSpec(source, true));
      } catch (error) {
        if (error instanceof SpecError) this.#specErrors.set(campaign, error);
        continue;
      }
      if (spec.fingerprint !== item.fingerprint || spec.name !== campaign) {
        this.#logOnce(`fingerprint:${campaign}`, `${campaign}: fingerprint mismatch`);
        continue;
      }
      this.#specErrors.delete(campaign);
      await loadReporter(spec).catch(() => undefined); // its randomizer, before a value needs it
      this.#specs.set(campaign, { spec, fetched: now });
      try {
        await this.store.putSpec(campaign, JSON.stringify(source), now);
      } catch (error) {
        this.#logOnce("state", `state: ${error}`);
      }
    }
    this.#specsChecked = now;
    this.#succeeded();
    return true;
  }

  // -- delivery -----------------------------------------------------------------------------------------------
  /** Deliver queued reports until the queue is empty or ``timeout`` seconds pass, waiting out backoffs (or, with
   * ``retry: false``, stopping at the first failure). Never rejects. */
  flush(timeout?: number, { retry = true }: { retry?: boolean } = {}): Promise<FlushResult> {
    const deadline = monotonic() + (timeout ?? Math.max(this.#closeTimeout, 30));
    const run = async (): Promise<FlushResult> => {
      const result: FlushResult = { sent: 0, rejected: 0, dropped: 0, remaining: 0, condition: null };
      await this.ready;
      if (this.#loaded && this.#uploadEnabled) {
        try {
          if (this.#held.length) {
            await this.#refreshForHeld(deadline, retry);
            await this.#releaseHeld();
          }
          result.dropped = await this.store.dropExpired(this.#clock(), this.#limits.maxAgeSeconds);
          await this.#deliver(result, deadline, retry);
        } catch (error) {
          this.#logOnce("flush", `${error}`);
        }
      }
      result.remaining = this.#loaded ? (await this.store.totals()).count : 0;
      result.condition = this.#condition;
      return result;
    };
    const next = this.#sending.then(run, run);
    this.#sending = next.catch(() => undefined);
    return next;
  }

  /** The specs held values wait for, fetched as delivery sends: waiting out a backoff (a 429's Retry-After, an
   * unreachable collector) and trying again until the deadline if ``retry``, else one try if none is due. */
  async #refreshForHeld(deadline: number, retry: boolean): Promise<void> {
    while (this.#specsNeeded()) {
      const wait = this.#nextAttempt - this.#clock();
      if (wait > 0) {
        if (!retry || monotonic() + wait > deadline) return;
        await sleep(wait);
      }
      const remaining = deadline - monotonic();
      if (remaining <= 0 || !this.#uploadEnabled || this.#closed) return;
      if ((await this.#refreshSpecs(Math.max(0.001, Math.min(this.#timeout, remaining)))) || !retry) return;
    }
  }

  async #deliver(result: FlushResult, deadline: number, retry: boolean): Promise<void> {
    while (this.#uploadEnabled) {
      const campaigns = shuffled(await this.store.campaigns());
      if (!campaigns.length) return;
      for (const campaign of campaigns) {
        const wait = this.#nextAttempt - this.#clock();
        if (wait > 0) {
          if (!retry || monotonic() + wait > deadline) return;
          await sleep(wait);
        }
        const remaining = deadline - monotonic();
        if (remaining <= 0 || !this.#uploadEnabled) return;
        if (!(await this.#sendBatch(campaign, result, Math.min(this.#timeout, remaining))) && !retry) return;
      }
    }
  }

  async #sendBatch(campaign: string, result: FlushResult, timeout: number): Promise<boolean> {
    const batch = await this.store.peek(campaign, this.#batchLimit, this.#maxRequestBytes);
    if (!batch.length) return true;
    const ids = batch.map((r) => r.id);
    let response: Response;
    try {
      response = await this.#request("POST", "/v1/reports", batchBody(batch), timeout);
    } catch (error) {
      this.#fail("unreachable", String(error), null);
      return false;
    }
    const data = await jsonOrNull(response);
    if (response.status >= 200 && response.status < 300) {
      const verdict = acknowledgement(data, ids);
      if (typeof verdict === "string") {
        this.#fail("unexpected_answer", `HTTP ${response.status}: ${verdict}`, null);
        return false;
      }
      for (const [id, reason] of [...verdict].slice(0, 20)) this.#logger.warn(`ldp-telemetry: rejected ${id}: ${reason}`);
      await this.store.remove(ids);
      for (const id of ids) this.#unsent.delete(id);
      result.sent += ids.length - verdict.size;
      result.rejected += verdict.size;
      this.#sent += ids.length - verdict.size;
      this.#rejected += verdict.size;
      this.#succeeded();
      return true;
    }
    if (response.status === 413 && batch.length > 1) {
      // too big for this collector: split, never drop; a key's stated limit (public keys) caps the batch from now on
      const most = (data as { max_reports?: unknown } | null)?.max_reports;
      if (Number.isInteger(most) && (most as number) > 0) this.#batchCap = most as number;
      this.#batchLimit = Math.max(1, Math.min(batch.length >> 1, this.#batchCap));
      return true;
    }
    this.#fail(conditionFor(response.status), `HTTP ${response.status}: ${problem(data)}`,
      retryAfter(response.headers.get("retry-after"), this.#clock()));
    return false;
  }

  async #request(method: string, path: string, body: string | undefined, timeout: number,
    keepalive = false): Promise<Response> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeout * 1000);
    try {
      const headers: Record<string, string> = { ...this.#headers };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      return await this.#fetcher(`${this.url}${path}`, {
        method, headers, body, signal: controller.signal, redirect: "manual", keepalive, credentials: "omit",
      } as RequestInit);
    } finally {
      clearTimeout(timer);
    }
  }

  #succeeded(): void {
    this.#failures = 0;
    this.#nextAttempt = 0;
    this.#batchLimit = Math.min(this.#batchSize, this.#batchCap, this.#batchLimit * 2);
    if (this.#condition !== null) this.#setCondition(null, null);
  }

  /** Exponential backoff with full jitter (from the CSPRNG), never shorter than Retry-After. */
  #fail(condition: string, detail: string, after: number | null): void {
    this.#failures += 1;
    const ceiling = Math.min(this.#backoffCap, this.#backoffBase * 2 ** Math.min(this.#failures - 1, 32));
    let delay = uniformUnit(secureRandom) * ceiling;
    if (after !== null) delay = Math.max(delay, Math.min(after, this.#backoffCap));
    this.#nextAttempt = this.#clock() + delay;
    if (condition !== this.#condition) {
      this.#logger.warn(`ldp-telemetry: ${condition} (${detail})`);
    }
    this.#setCondition(condition, detail);
  }

  #setCondition(condition: string | null, detail: string | null): void {
    const changed = condition !== this.#condition;
    this.#condition = condition;
    this.#detail = detail;
    if (changed && this.#onCondition) {
      try {
        this.#onCondition(condition, detail);
      } catch (error) {
        this.#logger.warn(`ldp-telemetry: ${error}`);
      }
    }
  }

  #logOnce(key: string, message: string): void {
    if (this.#logged.has(key)) return;
    this.#logged.add(key);
    this.#logger.warn(`ldp-telemetry: ${message}`);
  }

  // -- background and page lifecycle --------------------------------------------------------------------------
  #wake(): void {
    if (this.#timer !== null && !this.#closed) this.#schedule(0);
  }

  #schedule(delaySeconds: number): void {
    if (this.#closed) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#backgroundPass(), Math.max(0, delaySeconds) * 1000);
    (this.#timer as { unref?: () => void }).unref?.(); // Node: never keep the process alive for telemetry
  }

  async #backgroundPass(): Promise<void> {
    this.#timer = null;
    try {
      if (this.#loaded && this.#uploadEnabled && !this.#closed && this.#clock() >= this.#nextAttempt) {
        const ok = !this.#specsNeeded() || (await this.#refreshSpecs(this.#timeout));
        if (ok && this.#held.length) await this.#releaseHeld();
        if (ok) await this.flush(this.#timeout * 3, { retry: false });
      }
    } catch (error) {
      this.#logOnce("background", `${error}`);
    }
    if (!this.#closed && this.#timer === null) {
      const wait = this.#nextAttempt - this.#clock();
      this.#schedule(wait > 0 ? Math.min(this.#flushInterval, wait) : this.#flushInterval);
    }
  }

  /** The page is going away: send what this page queued and was not acknowledged, in keepalive requests within
   * the browsers' 64 KiB budget. Nothing leaves the store: what arrives is counted as a duplicate when resent. */
  finalFlush(): void {
    if (!this.#uploadEnabled || !this.#loaded || this.#unsent.size === 0) return;
    const byCampaign = new Map<string, QueuedReport[]>();
    for (const report of this.#unsent.values()) {
      byCampaign.set(report.campaign, [...(byCampaign.get(report.campaign) ?? []), report]);
    }
    const share = KEEPALIVE_BUDGET / byCampaign.size; // an equal part of the budget for each campaign
    for (const [, reports] of byCampaign) {
      const batch: QueuedReport[] = [];
      let size = 526; // the body's frame and the headers
      for (const report of reports) {
        if ((size += report.size + 1) > share || batch.length >= this.#batchSize) break;
        batch.push(report);
      }
      if (batch.length) this.#request("POST", "/v1/reports", batchBody(batch), this.#timeout, true).catch(() => undefined);
    }
  }

  #stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const page = globalThis as unknown as { removeEventListener?: Function };
    if (this.#pageHandler && page.removeEventListener) {
      page.removeEventListener("pagehide", this.#pageHandler);
      page.removeEventListener("visibilitychange", this.#pageHandler);
    }
  }

  /** Stop the background loop and deliver for at most ``timeout`` seconds (trying at once, stopping at the first
   * failure); the rest stays stored for the next start. Held values are dropped. */
  async close(timeout?: number): Promise<FlushResult> {
    if (this.#closed) return { sent: 0, rejected: 0, dropped: 0, remaining: 0, condition: this.#condition };
    this.#stop();
    const result = await this.flush(timeout ?? this.#closeTimeout, { retry: false });
    this.#closed = true;
    for (const _ of this.#held) this.#count("held_dropped");
    this.#held = [];
    await this.store.close().catch(() => undefined);
    return result;
  }
}

function checkedPolicy(policy: ReportPolicy): ReportPolicy {
  if (policy.maxReports !== null && !(Number.isInteger(policy.maxReports) && policy.maxReports >= 1)) {
    throw new RangeError("maxReports");
  }
  if (!((policy.periodSeconds ?? 1) > 0)) throw new RangeError("periodSeconds"); // null: the campaign's period
  if (policy.maxEpsilon !== null && !(policy.maxEpsilon > 0 && Number.isFinite(policy.maxEpsilon))) {
    throw new RangeError("maxEpsilon");
  }
  return policy;
}

const recorded = (status: RecordStatus, reportId: string | null = null): Recorded => ({ status, reportId, ok: status === "queued" });
const batchBody = (batch: QueuedReport[]): string => `{"reports":[${batch.map((r) => r.text).join(",")}]}`;
const monotonic = (): number => performance.now() / 1000;
const sleep = (seconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

const jsonOrNull = (response: Response): Promise<unknown> => response.text().then(JSON.parse).catch(() => null);

/** Fisher-Yates from the CSPRNG: the order of a device's requests says nothing about its campaigns. */
function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randbelowNumber(secureRandom, i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

function uuid4(): string {
  const raw = secureRandom.tokenBytes(16);
  raw[6] = (raw[6] & 0x0f) | 0x40;
  raw[8] = (raw[8] & 0x3f) | 0x80;
  const hex = toHex(raw);
  return hex.replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1-$2-$3-$4-");
}
