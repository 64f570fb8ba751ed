/** Where the SDK keeps its state: the queue of perturbed reports, the privacy ledger, cached specs, settings,
 * drop counters and the RAPPOR device secret. {@link MemoryStore} holds it in memory; the file store (Node) and the
 * IndexedDB store (browsers) persist it. Every method that changes state resolves once the change is durable. */

import { exceeds, type Budget } from "./budget.js";

/** One report waiting to be sent, stored exactly as it will be sent (a retry resends the same draw). */
export interface QueuedReport {
  id: string;
  campaign: string;
  text: string;
  size: number;
  created: number;
}

/** At most ``maxReports`` per ``periodSeconds`` (null: no cap) and ``maxEpsilon`` in total (null: no cap).
 * ``periodSeconds`` null is the campaign's own period: a distributed campaign's batch (its ``window``), a repeated
 * campaign's period (its weeks start on Mondays: ``periodOrigin``), a UTC day for the others. */
export interface ReportPolicy {
  maxReports: number | null;
  periodSeconds: number | null;
  maxEpsilon: number | null;
  /** A UTC second one of the periods starts at (absent: 0, the epoch, a Thursday); set with the campaign's period. */
  periodOrigin?: number;
}

export const DAY_SECONDS = 86_400;
export const DEFAULT_POLICY: ReportPolicy = { maxReports: 1, periodSeconds: null, maxEpsilon: null };


/** Most reports, bytes and seconds of age the queue keeps (dropped oldest first, each drop counted). */
export interface QueueLimits {
  maxReports: number;
  maxBytes: number;
  maxAgeSeconds: number;
}

export const DEFAULT_LIMITS: QueueLimits = { maxReports: 10_000, maxBytes: 5 * 1024 * 1024, maxAgeSeconds: 7 * DAY_SECONDS };
export const DROP_COUNTERS = ["dropped_age_limit", "dropped_count_limit", "dropped_bytes_limit"] as const;

export interface Spending {
  epsilon: number;
  reports: number;
  /** Distributed campaigns: the delta spent (each report costs the spec's delta) and the latest batch reported to. */
  delta?: number;
  lastBatch?: string;
}

/** A report to queue with the ledger charge it needs, checked and applied atomically with the insert. */
export interface Charge {
  campaign: string;
  epsilon: number;
  policy: ReportPolicy;
  now: number;
  /** A distributed report's delta and batch (of its spec's window): one report per batch, batches only move forward. */
  delta?: number;
  batch?: string | false;
  /** A kind's device state (the repeated kind's memoized answers), a setting written in the same atomic step as the
   * report and its charge, and only while the stored setting is still ``expected`` (what the kind made the report
   * from, null for none): otherwise the store answers "stale", changing nothing, and the report is made again. */
  state?: { key: string; value: string; expected: string | null };
  /** The spec's budget: refused once the campaign's charges would pass it (budget.ts, the collector's rule too). */
  budget?: Budget | null;
}

export interface Snapshot {
  settings: Record<string, string>;
  specs: Record<string, { text: string; fetched: number }>;
  counters: Record<string, number>;
  secret: string | null;
}

export interface Store {
  load(): Promise<Snapshot>;
  /** Check the policy, charge the ledger, insert, apply the limits (and write ``charge.state``): one atomic step.
   * "refused" and "stale" change nothing. */
  enqueue(report: QueuedReport, charge: Charge, limits: QueueLimits): Promise<"queued" | "refused" | "stale">;
  peek(campaign: string, maxReports: number, maxBytes: number): Promise<QueuedReport[]>;
  campaigns(): Promise<string[]>;
  remove(ids: string[]): Promise<void>;
  /** Delete every queued report, counting them under ``counter``; resolves to how many. */
  clear(counter: string): Promise<number>;
  dropExpired(now: number, maxAgeSeconds: number): Promise<number>;
  totals(): Promise<{ count: number; bytes: number }>;
  spent(campaign: string): Promise<Spending>;
  putSpec(campaign: string, text: string, fetched: number): Promise<void>;
  setSetting(key: string, value: string): Promise<void>;
  /** The setting ``key`` (null when none is stored); a store without it is read with ``load``. */
  setting?(key: string): Promise<string | null>;
  /** Store the device secret unless one is stored; resolves to the stored one (the first writer wins). */
  storeSecret(secret: string): Promise<string>;
  counters(): Promise<Record<string, number>>;
  close(): Promise<void>;
  /** Remove everything this store keeps (consent: delete local data). */
  destroy(): Promise<void>;
}

/** Whether one more report under ``charge`` would break its policy: the reports per period, the epsilon budget,
 * for a distributed report one per batch, batches only moving forward (a clock set back never reaches a batch
 * reported to), and the spec's budget. (The stores only refuse; the client's status says why.) */
export function refused(spent: Spending, periodReports: number, { policy, epsilon, delta, batch, budget }: Charge): boolean {
  return (!!batch && !!spent.lastBatch && spent.lastBatch >= batch)
    || (policy.maxReports !== null && periodReports >= policy.maxReports)
    || (policy.maxEpsilon !== null && spent.epsilon + epsilon > policy.maxEpsilon * (1 + 1e-12))
    || exceeds(budget, [spent.epsilon, spent.delta ?? 0], [epsilon, delta ?? 0]);
}

/** ``spent`` after one more report under ``charge`` (basic composition: epsilons and deltas add up). */
export const charged = (spent: Spending, { epsilon, delta, batch }: Charge): Spending => ({
  epsilon: spent.epsilon + epsilon, reports: spent.reports + 1, delta: (spent.delta ?? 0) + (delta ?? 0),
  lastBatch: batch || spent.lastBatch,
});

export const periodOf = (policy: ReportPolicy, now: number): number =>
  Math.floor((now - (policy.periodOrigin ?? 0)) / (policy.periodSeconds ?? DAY_SECONDS));

/** The state a store keeps, as plain data (what the file store journals and replays). */
export interface StateData extends Snapshot {
  reports: QueuedReport[];
  ledger: Record<string, Spending>;
  periods: Record<string, { period: number; reports: number }>;
}

export const ledgerChange = (campaign: string, s: Spending): Change =>
  ({ ledger: [campaign, s.epsilon, s.reports, s.delta ?? 0, s.lastBatch ?? null] });

export const emptyState = (): StateData => ({
  reports: [], ledger: {}, periods: {}, settings: {}, specs: {}, counters: {}, secret: null,
});

/** One change, with absolute values, so that replaying a journal of them rebuilds the state. */
export type Change =
  | { put: QueuedReport }
  | { remove: string[] }
  | { ledger: [string, number, number, number?, (string | null)?] } // delta and batch since distributed campaigns
  | { period: [string, number, number] }
  | { spec: [string, string, number] }
  | { setting: [string, string] }
  | { counter: [string, number] }
  | { secret: string }
  | { clear: true };

export function applyChange(state: StateData, change: Change): void {
  if ("put" in change) state.reports.push(change.put);
  else if ("remove" in change) {
    const gone = new Set(change.remove);
    state.reports = state.reports.filter((r) => !gone.has(r.id));
  } else if ("ledger" in change) {
    const [campaign, epsilon, reports, delta, lastBatch] = change.ledger;
    state.ledger[campaign] = { epsilon, reports, delta: delta ?? 0, ...(lastBatch ? { lastBatch } : {}) };
  }
  else if ("period" in change) state.periods[change.period[0]] = { period: change.period[1], reports: change.period[2] };
  else if ("spec" in change) state.specs[change.spec[0]] = { text: change.spec[1], fetched: change.spec[2] };
  else if ("setting" in change) state.settings[change.setting[0]] = change.setting[1];
  else if ("counter" in change) state.counters[change.counter[0]] = change.counter[1];
  else if ("secret" in change) state.secret = change.secret;
  else if ("clear" in change) state.reports = [];
}

/** The state in memory; subclasses persist each batch of changes in {@link MemoryStore.persist}. */
export class MemoryStore implements Store {
  protected state: StateData = emptyState();
  private chain: Promise<unknown> = Promise.resolve();

  /** Run ``step`` after every earlier step: the store's operations never interleave. */
  protected serial<T>(step: () => Promise<T> | T): Promise<T> {
    const next = this.chain.then(step);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Apply ``changes`` in memory, then make them durable (nothing to do in memory). */
  protected async commit(changes: Change[]): Promise<void> {
    for (const change of changes) applyChange(this.state, change);
    await this.persist(changes);
  }

  protected async persist(_changes: Change[]): Promise<void> {}

  async load(): Promise<Snapshot> {
    const { settings, specs, counters, secret } = this.state;
    return { settings: { ...settings }, specs: { ...specs }, counters: { ...counters }, secret };
  }

  enqueue(report: QueuedReport, charge: Charge, limits: QueueLimits): Promise<"queued" | "refused" | "stale"> {
    return this.serial(async () => {
      const state = charge.state;
      if (state && (this.state.settings[state.key] ?? null) !== state.expected) return "stale";
      const period = periodOf(charge.policy, charge.now);
      const spent = this.state.ledger[charge.campaign] ?? { epsilon: 0, reports: 0 };
      const current = this.state.periods[charge.campaign];
      const periodReports = current && current.period === period ? current.reports : 0;
      if (refused(spent, periodReports, charge)) return "refused";
      const changes: Change[] = [
        ledgerChange(charge.campaign, charged(spent, charge)),
        { period: [charge.campaign, period, periodReports + 1] },
        { put: report },
        ...(state ? [{ setting: [state.key, state.value] } as Change] : []),
        ...this.limitChanges(limits, charge.now, report),
      ];
      await this.commit(changes);
      return "queued";
    });
  }

  /** The drops (oldest first) that bring the queue, with ``extra`` added, within the limits. */
  private limitChanges(limits: QueueLimits, now: number, extra: QueuedReport): Change[] {
    const reports = [...this.state.reports, extra];
    const drops: Record<string, string[]> = { dropped_age_limit: [], dropped_count_limit: [], dropped_bytes_limit: [] };
    let bytes = reports.reduce((sum, r) => sum + r.size, 0);
    let kept = reports.length;
    for (const r of reports) {
      const reason = r.created < now - limits.maxAgeSeconds ? "dropped_age_limit"
        : kept > limits.maxReports ? "dropped_count_limit" : bytes > limits.maxBytes ? "dropped_bytes_limit" : null;
      if (reason === null) break;
      drops[reason].push(r.id);
      kept -= 1;
      bytes -= r.size;
    }
    const changes: Change[] = [];
    for (const [reason, ids] of Object.entries(drops)) {
      if (!ids.length) continue;
      changes.push({ remove: ids }, { counter: [reason, (this.state.counters[reason] ?? 0) + ids.length] });
    }
    return changes;
  }

  async peek(campaign: string, maxReports: number, maxBytes: number): Promise<QueuedReport[]> {
    const out: QueuedReport[] = [];
    let total = 0;
    for (const r of this.state.reports) {
      if (r.campaign !== campaign) continue;
      if (out.length >= maxReports || (out.length && total + r.size + 1 > maxBytes)) break;
      out.push(r);
      total += r.size + 1;
    }
    return out;
  }

  async campaigns(): Promise<string[]> {
    return [...new Set(this.state.reports.map((r) => r.campaign))];
  }

  remove(ids: string[]): Promise<void> {
    return this.serial(() => (ids.length ? this.commit([{ remove: ids }]) : undefined));
  }

  clear(counter: string): Promise<number> {
    return this.serial(async () => {
      const count = this.state.reports.length;
      if (count) await this.commit([{ clear: true }, { counter: [counter, (this.state.counters[counter] ?? 0) + count] }]);
      return count;
    });
  }

  dropExpired(now: number, maxAgeSeconds: number): Promise<number> {
    return this.serial(async () => {
      const expired = this.state.reports.filter((r) => r.created < now - maxAgeSeconds).map((r) => r.id);
      if (expired.length) {
        const name = "dropped_age_limit";
        await this.commit([{ remove: expired }, { counter: [name, (this.state.counters[name] ?? 0) + expired.length] }]);
      }
      return expired.length;
    });
  }

  async totals(): Promise<{ count: number; bytes: number }> {
    return { count: this.state.reports.length, bytes: this.state.reports.reduce((s, r) => s + r.size, 0) };
  }

  async spent(campaign: string): Promise<Spending> {
    return { ...(this.state.ledger[campaign] ?? { epsilon: 0, reports: 0 }) };
  }

  putSpec(campaign: string, text: string, fetched: number): Promise<void> {
    return this.serial(() => this.commit([{ spec: [campaign, text, fetched] }]));
  }

  setSetting(key: string, value: string): Promise<void> {
    return this.serial(() => this.commit([{ setting: [key, value] }]));
  }

  setting(key: string): Promise<string | null> {
    return this.serial(() => this.state.settings[key] ?? null);
  }

  storeSecret(secret: string): Promise<string> {
    return this.serial(async () => {
      if (this.state.secret === null) await this.commit([{ secret }]);
      return this.state.secret!;
    });
  }

  async counters(): Promise<Record<string, number>> {
    return { ...this.state.counters };
  }

  async close(): Promise<void> {
    await this.serial(() => undefined);
  }

  async destroy(): Promise<void> {
    await this.serial(() => {
      this.state = emptyState();
    });
  }
}
