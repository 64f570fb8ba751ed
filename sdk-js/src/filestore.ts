/** The Node store: the state in memory, every change appended to a journal file and fsynced before the
 * operation resolves (changes made while a write is in flight share the next write and fsync).
 *
 * ``DIR/ldp-telemetry.journal`` (mode 0600, the directory 0700) is one JSON change per line; opening replays it.
 * A last line without its newline is a write a crash interrupted (its operation never resolved) and is cut off;
 * any other damage is a StateFileError. When the journal holds many more lines than the state needs, it is
 * rewritten compactly under a temporary name, fsynced and renamed over the old one. One process per directory
 * (``ldp-telemetry.lock``, see #lock). */

import { link, mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { StateFileError } from "./errors.js";
import { MemoryStore, applyChange, emptyState, ledgerChange, type Change, type Snapshot } from "./store.js";

const JOURNAL = "ldp-telemetry.journal";
const LOCK = "ldp-telemetry.lock";
const lockedHere = new Set<string>(); // directories this process holds: two clients of one process conflict too
let claims = 0; // names this process's own lock files apart

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Give ``file``'s content the name ``name`` unless the name exists (link(2) never replaces). */
async function claim(file: string, name: string): Promise<boolean> {
  try {
    await link(file, name);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new StateFileError(`cannot lock ${name}: ${error}`);
  }
}

/** The pid a lock file names (0 for anything else), null when there is no such file. */
async function owner(name: string): Promise<number | null> {
  try {
    return Number(await readFile(name, "utf8")) || 0;
  } catch {
    return null;
  }
}

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

  /** Take the directory: ``ldp-telemetry.lock`` holds the owner's pid from the moment it exists (written to a file of
   * this process's own, then hard-linked to the lock's name, which fails if the name exists); a lock whose process
   * is gone is stale, and only the process that creates ``ldp-telemetry.lock.break-PID`` (the same way) removes
   * that lock, after reading it again: two processes never both pass. */
  async #lock(): Promise<void> {
    const path = join(this.directory, LOCK), key = resolve(this.directory);
    if (lockedHere.has(key)) throw new StateFileError(`${this.directory} is in use by another client (process ${process.pid})`);
    const mine = `${path}.${process.pid}.${++claims}`;
    await writeFile(mine, String(process.pid), { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 50 && !this.#locked; attempt++) {
        if (await claim(mine, path)) {
          this.#locked = true;
          lockedHere.add(key);
          break;
        }
        const holder = await owner(path);
        if (holder === null) continue; // removed meanwhile: try again
        if (lockedHere.has(key) || (holder > 0 && holder !== process.pid && alive(holder))) {
          throw new StateFileError(`${this.directory} is in use by another client (process ${holder})`);
        }
        const breaker = `${path}.break-${holder}`;
        if (await claim(mine, breaker)) {
          if ((await owner(path)) === holder) await rm(path, { force: true }); // still the stale one: no one else removes it
          await rm(breaker, { force: true });
        } else {
          const other = await owner(breaker);
          if (other !== null && !(other > 0 && alive(other))) await rm(breaker, { force: true }); // its breaker died
          else await new Promise((done) => setTimeout(done, 5)); // another process is breaking it
        }
      }
    } finally {
      await rm(mine, { force: true });
    }
    if (!this.#locked) throw new StateFileError(`cannot lock ${path}`);
  }

  override async load(): Promise<Snapshot> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    if (!this.#locked) await this.#lock();
    // loading again (after a failed write, or by the caller) replaces the journal's handle: close the old one first
    await this.#flushing;
    await this.#handle?.close();
    this.#handle = null;
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
