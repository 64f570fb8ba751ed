// The Node store keeps one journal handle however often it is loaded (a handle per load() leaked file descriptors).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileStore } from "../dist/filestore.js";

const journalHandles = (dir) =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
    } catch {
      return false; // closed between the listing and the read
    }
  }).length;

test("loading a FileStore again keeps one journal handle open, and closing it leaves none", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-filestore-handles-"));
  try {
    const store = new FileStore(dir);
    await store.load();
    assert.equal(journalHandles(dir), 1);
    for (let i = 0; i < 5; i++) await store.load();
    assert.equal(journalHandles(dir), 1);
    await store.close();
    assert.equal(journalHandles(dir), 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
