import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const PROCESSES = 8;
const TRIES = Number(process.env.LDP_LOCK_TRIES ?? 20);
const DEAD_PID = "2147483646"; // no such process

// One contender: loads the store on "go", prints "held" or "refused", and holds the lock until its stdin closes.
const CONTENDER = `
  import { FileStore } from ${JSON.stringify(new URL("../dist/filestore.js", import.meta.url).href)};
  import { createInterface } from "node:readline";
  const store = new FileStore(process.argv[1]);
  const lines = createInterface({ input: process.stdin });
  console.log("ready");
  let started = false;
  lines.on("line", async () => {
    if (started) return;
    started = true;
    try {
      await store.load();
      console.log("held");
    } catch (error) {
      console.log(error.name === "StateFileError" ? "refused" : "error " + error);
      process.exit(0);
    }
  });
  lines.on("close", async () => { await store.close(); process.exit(0); });`;

function contender(dir) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", CONTENDER, dir], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const next = () => new Promise((resolve) => lines.once("line", resolve));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return { child, next, exited };
}

test(`${PROCESSES} processes started at once on one state directory: exactly one holds its lock, ${TRIES} times over`, async () => {
  const root = mkdtempSync(join(tmpdir(), "ldp-lock-"));
  const running = [];
  try {
    for (let round = 0; round < TRIES; round++) {
      const dir = join(root, `try-${round}`);
      if (round % 2 === 1) { // every other try starts from a dead process's lock, which every contender may break
        mkdirSync(dir, { mode: 0o700 });
        writeFileSync(join(dir, "ldp-telemetry.lock"), DEAD_PID);
      }
      const contenders = Array.from({ length: PROCESSES }, () => contender(dir));
      running.push(...contenders);
      const ready = contenders.map((c) => c.next());
      for (const answer of await Promise.all(ready)) assert.equal(answer, "ready");
      const outcomes = contenders.map((c) => c.next());
      for (const c of contenders) c.child.stdin.write("go\n");
      const answers = await Promise.all(outcomes);
      assert.equal(answers.filter((a) => a === "held").length, 1, `try ${round}: ${answers.join(", ")}`);
      assert.equal(answers.filter((a) => a === "refused").length, PROCESSES - 1, `try ${round}: ${answers.join(", ")}`);
      for (const c of contenders) c.child.stdin.end();
      await Promise.all(contenders.map((c) => c.exited));
      assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith("ldp-telemetry.lock")), [], "nothing left behind");
    }
  } finally {
    for (const c of running) if (c.child.exitCode === null) c.child.kill(); // a failed try leaves no process behind
    rmSync(root, { recursive: true, force: true });
  }
});
