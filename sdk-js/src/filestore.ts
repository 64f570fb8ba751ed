/** The Node store: the state in memory, every change appended to a journal file and fsynced before the
 * operation resolves (changes made while a write is in flight share the next write and fsync).
 *
 * ``DIR/ldp-telemetry.journal`` (mode 0600, the directory 0700) is one JSON change per line; opening replays it.
 * A last line without its newline is a write a crash interrupted (its operation never resolved) and is cut off;
 * any other damage is a StateFileError. When the journal holds many more lines than the state needs, it is
 * rewritten compactly under a temporary name, fsynced and renamed over the old one. One process per directory. */

import { mkdir, open, readFile, rename, rm, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { StateFileError } from "./errors.js";
import { MemoryStore, applyChange, emptyState, ledgerChange, type Change, type Snapshot } from "./store.js";

const JOURNAL = "ldp-telemetry.journal";
const LOCK = "ldp-telemetry.lock";
const lockedHere = new Set<string>(); // directories this process holds: two clients of one process conflict too

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

export class FileStore extends MemoryStore {
  #handle: FileHandle | null = null;
  #lines = 0;
  #pending: string[] = [];
  #flushing: Promise<void> | null = null;

  constructor(readonly directory: string) {
    super();
  }

  get path(): string {
    return join(this.directory, JOURNAL);
  }

  #locked = false;

  /** Take the directory: ``ldp-telemetry.lock`` holds the owner's pid; a lock whose process is gone is stale. */
  async #lock(): Promise<void> {
    const path = join(this.directory, LOCK), key = resolve(this.directory);
    for (let attempt = 0; attempt < 3 && !this.#locked; attempt++) {
      try {
        if (lockedHere.has(key)) throw Object.assign(new Error("held"), { code: "EEXIST" });
        const file = await open(path, "wx", 0o600);
        await file.writeFile(String(process.pid));
        await file.close();
        this.#locked = true;
        lockedHere.add(key);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw new StateFileError(`cannot lock ${path}: ${error}`);
        const holder = Number(await readFile(path, "utf8").catch(() => "0"));
        if (lockedHere.has(key) || (holder > 0 && holder !== process.pid && alive(holder))) {
          throw new StateFileError(`${this.directory} is in use by another client (process ${holder || process.pid})`);
        }
        await rm(path, { force: true }); // stale: its process is gone
      }
    }
    if (!this.#locked) throw new StateFileError(`cannot lock ${path}`);
  }

  override async load(): Promise<Snapshot> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    if (!this.#locked) await this.#lock();
    let text = "";
    try {
      text = await readFile(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new StateFileError(`cannot read ${this.path}: ${error}`);
    }
    const complete = text.endsWith("\n") ? text : text.slice(0, text.lastIndexOf("\n") + 1);
    this.state = emptyState();
    const lines = complete.split("\n").filter(Boolean);
    for (const [i, line] of lines.entries()) {
      try {
        applyChange(this.state, JSON.parse(line) as Change);
      } catch {
        throw new StateFileError(`${this.path} is damaged at line ${i + 1}; deleteLocalData() starts afresh`);
      }
    }
    this.#lines = lines.length;
    if (complete.length !== text.length || this.#lines > 2 * this.state.reports.length + 1000) await this.#compact();
    this.#handle = await open(this.path, "a", 0o600);
    return super.load();
  }

  protected override async persist(changes: Change[]): Promise<void> {
    if (this.#handle === null) throw new StateFileError("the store is not open");
    for (const change of changes) this.#pending.push(JSON.stringify(change) + "\n");
    this.#lines += changes.length;
    while (this.#pending.length) {
      if (this.#flushing === null) this.#flushing = this.#writePending().finally(() => { this.#flushing = null; });
      await this.#flushing;
    }
  }

  async #writePending(): Promise<void> {
    const text = this.#pending.join("");
    this.#pending = [];
    await this.#handle!.write(text);
    await this.#handle!.datasync();
  }

  /** Rewrite the journal as the few lines the state needs (tmp file, fsync, rename, fsync the directory). */
  async #compact(): Promise<void> {
    const s = this.state;
    const changes: Change[] = [
      ...Object.entries(s.settings).map(([k, v]): Change => ({ setting: [k, v] })),
      ...Object.entries(s.counters).map(([k, v]): Change => ({ counter: [k, v] })),
      ...Object.entries(s.specs).map(([k, v]): Change => ({ spec: [k, v.text, v.fetched] })),
      ...Object.entries(s.ledger).map(([k, v]) => ledgerChange(k, v)),
      ...Object.entries(s.periods).map(([k, v]): Change => ({ period: [k, v.period, v.reports] })),
      ...(s.secret === null ? [] : [{ secret: s.secret }]),
      ...s.reports.map((r): Change => ({ put: r })),
    ];
    const temporary = `${this.path}.tmp`;
    const file = await open(temporary, "w", 0o600);
    try {
      await file.write(changes.map((c) => JSON.stringify(c) + "\n").join(""));
      await file.sync();
    } finally {
      await file.close();
    }
    await this.#handle?.close();
    await rename(temporary, this.path);
    const directory = await open(this.directory, "r");
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
    this.#lines = changes.length;
    if (this.#handle !== null) this.#handle = await open(this.path, "a", 0o600);
  }

  protected override async commit(changes: Change[]): Promise<void> {
    try {
      await super.commit(changes);
    } catch (error) {
      // the write failed (a full disk): memory went ahead of the file, so take the state from the file again
      this.#pending = [];
      await this.#handle?.close();
      this.#handle = null;
      await this.load().catch(() => undefined);
      throw error;
    }
    if (this.#lines > 2 * this.state.reports.length + 1000) await this.#compact();
  }

  override async close(): Promise<void> {
    await super.close();
    await this.#handle?.close();
    this.#handle = null;
    if (this.#locked) {
      this.#locked = false;
      lockedHere.delete(resolve(this.directory));
      await rm(join(this.directory, LOCK), { force: true });
    }
  }

  override async destroy(): Promise<void> {
    await this.close();
    await super.destroy();
    await rm(this.directory, { recursive: true, force: true });
  }
}
