import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, InvalidValueType, SpecError, loadSpec, mechanismFromSpec } from "../dist/node.js";
import { fakeCollector, quiet } from "./helpers.mjs";

const WITH_CATCH_ALL = { name: "browser", mechanism: "grr", epsilon: 1.0, domain: ["chrome", "firefox", "other"], catch_all: "other" };

test("null and undefined are refused at once, even by a campaign with a catch_all (never its report)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-values-"));
  try {
    const collector = fakeCollector([WITH_CATCH_ALL]);
    const c = new Client({ url: "http://127.0.0.1:9", apiKey: "k", stateDir: dir, specs: [WITH_CATCH_ALL],
      fetch: collector.fetch, logger: quiet, background: false });
    for (const value of [null, undefined, true, {}]) assert.throws(() => c.record("browser", value), InvalidValueType);
    assert.deepEqual(await c.spent("browser"), { epsilon: 0, reports: 0 });
    assert.equal((await c.record("browser", "opera")).status, "queued", "a string outside the domain: the catch-all");
    await c.close(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const randomizer = mechanismFromSpec(loadSpec(WITH_CATCH_ALL));
  assert.throws(() => randomizer.perturb(null), InvalidValueType);
});

test("an epsilon out of range names the range and the side it is on", () => {
  const spec = (epsilon) => ({ name: "b", mechanism: "grr", epsilon, domain: ["a", "b"] });
  assert.throws(() => loadSpec(spec(0.001)), (e) => e instanceof SpecError && /\[0\.01, 20\].*too small/.test(e.message));
  assert.throws(() => loadSpec(spec(25)), (e) => e instanceof SpecError && /\[0\.01, 20\].*too large/.test(e.message));
  assert.throws(() => loadSpec(spec("1")), (e) => e instanceof SpecError && !/too/.test(e.message));
});
