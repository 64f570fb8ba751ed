/** The browser store: IndexedDB, shared by the tabs of an origin. Each operation is one IndexedDB transaction,
 * so the ledger's check and charge and the report's insert happen atomically even with several tabs open (two tabs
 * cannot both take the day's one report). Inside a transaction only IndexedDB requests are awaited, which keeps
 * it active (promise reactions run before the transaction can commit). */

import { StateFileError } from "./errors.js";
import {
  charged, periodOf, refused, type Charge, type QueueLimits, type QueuedReport, type Snapshot, type Spending, type Store,
} from "./store.js";

const REPORTS = "reports";
const KV = "kv";

function done<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

interface Totals { count: number; bytes: number }

export class IndexedDBStore implements Store {
  #db: Promise<IDBDatabase> | null = null;

  constructor(readonly name = "ldp-telemetry") {}

  #open(): Promise<IDBDatabase> {
    if (this.#db === null) {
      this.#db = new Promise((resolve, reject) => {
        const request = indexedDB.open(this.name, 1);
        request.onupgradeneeded = () => {
          const db = request.result;
          const reports = db.createObjectStore(REPORTS, { keyPath: "seq", autoIncrement: true });
          reports.createIndex("id", "id", { unique: true });
          reports.createIndex("campaign", "campaign");
          db.createObjectStore(KV, { keyPath: "k" });
        };
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(new StateFileError(`IndexedDB ${this.name}: ${request.error}`));
        request.onblocked = () => reject(new StateFileError("blocked"));
      });
    }
    return this.#db;
  }

  /** Run ``body`` in one transaction; resolves with its result once the transaction has committed. */
  async #transaction<T>(mode: IDBTransactionMode, body: (reports: IDBObjectStore, kv: IDBObjectStore) => Promise<T>): Promise<T> {
    const db = await this.#open();
    const tx = db.transaction([REPORTS, KV], mode, { durability: "strict" } as IDBTransactionOptions);
    const committed = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = tx.onerror = () => reject(tx.error ?? new StateFileError("aborted"));
    });
    const result = await body(tx.objectStore(REPORTS), tx.objectStore(KV));
    await committed;
    return result;
  }

  static async #get<T>(kv: IDBObjectStore, key: string, fallback: T): Promise<T> {
    const row = await done(kv.get(key));
    return row === undefined ? fallback : (row.v as T);
  }

  async load(): Promise<Snapshot> {
    return this.#transaction("readonly", async (_reports, kv) => {
      const rows = (await done(kv.getAll())) as { k: string; v: unknown }[];
      const snapshot: Snapshot = { settings: {}, specs: {}, counters: {}, secret: null };
      for (const { k, v } of rows) {
        const [kind, name] = [k.slice(0, k.indexOf(":")), k.slice(k.indexOf(":") + 1)];
        if (kind === "setting") snapshot.settings[name] = v as string;
        else if (kind === "spec") snapshot.specs[name] = v as { text: string; fetched: number };
        else if (kind === "counter") snapshot.counters[name] = v as number;
        else if (kind === "secret") snapshot.secret = v as string;
      }
      return snapshot;
    });
  }

  enqueue(report: QueuedReport, charge: Charge, limits: QueueLimits): Promise<"queued" | "refused" | "stale"> {
    return this.#transaction("readwrite", async (reports, kv) => {
      const state = charge.state;
      if (state && (await IndexedDBStore.#get<string | null>(kv, `setting:${state.key}`, null)) !== state.expected) return "stale";
      const period = periodOf(charge.policy, charge.now);
      const spent = await IndexedDBStore.#get<Spending>(kv, `ledger:${charge.campaign}`, { epsilon: 0, reports: 0 });
      const current = await IndexedDBStore.#get(kv, `period:${charge.campaign}`, { period, reports: 0 });
      const periodReports = current.period === period ? current.reports : 0;
      if (refused(spent, periodReports, charge)) return "refused";
      kv.put({ k: `ledger:${charge.campaign}`, v: charged(spent, charge) });
      kv.put({ k: `period:${charge.campaign}`, v: { period, reports: periodReports + 1 } });
      if (state) kv.put({ k: `setting:${state.key}`, v: state.value });
      reports.add(report);
      const totals = await IndexedDBStore.#get<Totals>(kv, "totals:", { count: 0, bytes: 0 });
      totals.count += 1;
      totals.bytes += report.size;
      const drops: Record<string, number> = {};
      const cursorRequest = reports.openCursor();
      for (;;) {
        const cursor = await done(cursorRequest);
        if (cursor === null) break;
        const oldest = cursor.value as QueuedReport;
        const reason = oldest.created < charge.now - limits.maxAgeSeconds ? "dropped_age_limit"
          : totals.count > limits.maxReports ? "dropped_count_limit" : totals.bytes > limits.maxBytes ? "dropped_bytes_limit" : null;
        if (reason === null) break;
        cursor.delete();
        drops[reason] = (drops[reason] ?? 0) + 1;
        totals.count -= 1;
        totals.bytes -= oldest.size;
        cursor.continue();
      }
      kv.put({ k: "totals:", v: totals });
      for (const [name, n] of Object.entries(drops)) {
        kv.put({ k: `counter:${name}`, v: (await IndexedDBStore.#get(kv, `counter:${name}`, 0)) + n });
      }
      return "queued";
    });
  }

  peek(campaign: string, maxReports: number, maxBytes: number): Promise<QueuedReport[]> {
    return this.#transaction("readonly", async (reports) => {
      const out: QueuedReport[] = [];
      let total = 0;
      const request = reports.index("campaign").openCursor(IDBKeyRange.only(campaign));
      for (;;) {
        const cursor = await done(request);
        if (cursor === null) break;
        const r = cursor.value as QueuedReport;
        if (out.length >= maxReports || (out.length && total + r.size + 1 > maxBytes)) break;
        out.push(r);
        total += r.size + 1;
        cursor.continue();
      }
      out.sort((a, b) => (a as unknown as { seq: number }).seq - (b as unknown as { seq: number }).seq);
      return out;
    });
  }

  campaigns(): Promise<string[]> {
    return this.#transaction("readonly", async (reports) => {
      const out: string[] = [];
      const request = reports.index("campaign").openKeyCursor(null, "nextunique");
      for (;;) {
        const cursor = await done(request);
        if (cursor === null) return out;
        out.push(cursor.key as string);
        cursor.continue();
      }
    });
  }

  /** Delete the reports with these ids (and any kept older than ``maxAge`` when given), counting drops. */
  #removeWhere(ids: Set<string> | null, before: number | null, counter: string | null): Promise<number> {
    return this.#transaction("readwrite", async (reports, kv) => {
      const totals = await IndexedDBStore.#get<Totals>(kv, "totals:", { count: 0, bytes: 0 });
      let removed = 0;
      const request = reports.openCursor();
      for (;;) {
        const cursor = await done(request);
        if (cursor === null) break;
        const r = cursor.value as QueuedReport;
        if ((ids === null && before === null) || ids?.has(r.id) || (before !== null && r.created < before)) {
          cursor.delete();
          removed += 1;
          totals.count -= 1;
          totals.bytes -= r.size;
        }
        cursor.continue();
      }
      kv.put({ k: "totals:", v: totals });
      if (counter !== null && removed) {
        kv.put({ k: `counter:${counter}`, v: (await IndexedDBStore.#get(kv, `counter:${counter}`, 0)) + removed });
      }
      return removed;
    });
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length) await this.#removeWhere(new Set(ids), null, null);
  }

  clear(counter: string): Promise<number> {
    return this.#removeWhere(null, null, counter);
  }

  dropExpired(now: number, maxAgeSeconds: number): Promise<number> {
    return this.#removeWhere(new Set(), now - maxAgeSeconds, "dropped_age_limit");
  }

  totals(): Promise<Totals> {
    return this.#transaction("readonly", (_r, kv) => IndexedDBStore.#get<Totals>(kv, "totals:", { count: 0, bytes: 0 }));
  }

  spent(campaign: string): Promise<Spending> {
    return this.#transaction("readonly", (_r, kv) => IndexedDBStore.#get(kv, `ledger:${campaign}`, { epsilon: 0, reports: 0 }));
  }

  async putSpec(campaign: string, text: string, fetched: number): Promise<void> {
    await this.#transaction("readwrite", async (_r, kv) => kv.put({ k: `spec:${campaign}`, v: { text, fetched } }));
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.#transaction("readwrite", async (_r, kv) => kv.put({ k: `setting:${key}`, v: value }));
  }

  setting(key: string): Promise<string | null> {
    return this.#transaction("readonly", (_r, kv) => IndexedDBStore.#get<string | null>(kv, `setting:${key}`, null));
  }

  storeSecret(secret: string): Promise<string> {
    return this.#transaction("readwrite", async (_r, kv) => {
      const stored = await IndexedDBStore.#get<string | null>(kv, "secret:", null);
      if (stored !== null) return stored;
      kv.put({ k: "secret:", v: secret });
      return secret;
    });
  }

  counters(): Promise<Record<string, number>> {
    return this.load().then((s) => s.counters);
  }

  async close(): Promise<void> {
    if (this.#db !== null) (await this.#db).close();
    this.#db = null;
  }

  async destroy(): Promise<void> {
    await this.close();
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(this.name);
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });
  }
}
