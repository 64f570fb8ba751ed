// Poplar1 in headless Chromium (Debian's chromium through puppeteer-core, as tests/sdk_js/test_browser*.py): a page
// that loads the main module has fetched no Poplar1 code; loadMechanism("poplar1") fetches poplar1.js (and vdaf.js),
// and the page's shards (@noble/ciphers' AES) of every draft vector are the vector's bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync);
const DIR = fileURLToPath(new URL("../../tests/data/vdaf-test-vectors/", import.meta.url));
const FILES = readdirSync(DIR).filter((f) => f.startsWith("Poplar1_") && f.endsWith(".json")).map((f) => DIR + f);

test("Chromium loads the poplar1 chunk only on demand and shards the draft's vectors byte for byte", { skip: !CHROMIUM && "no chromium" }, () => {
  const script = fileURLToPath(new URL("../scripts/browser-poplar1.mjs", import.meta.url));
  const out = JSON.parse(execFileSync(process.execPath, [script, CHROMIUM, ...FILES], { encoding: "utf8", timeout: 180_000 }));
  assert.equal(out.error, undefined, out.error);
  assert.deepEqual(out.console, []);
  assert.ok(out.before.includes("/ldp-telemetry.min.js"));
  for (const chunk of ["/poplar1.js", "/vdaf.js"]) {
    assert.ok(!out.before.includes(chunk), `${chunk} not fetched by a page that only loaded the SDK`);
    assert.ok(out.after.includes(chunk), `${chunk} fetched by loadMechanism("poplar1")`);
  }
  assert.ok(out.cases.length >= FILES.length, "every file has a successful shard");
  for (const c of out.cases) {
    assert.equal(c.public_share, c.expected_public_share, `${c.file} report ${c.index}: public share`);
    assert.deepEqual(c.input_shares, c.expected_input_shares, `${c.file} report ${c.index}: input shares`);
  }
});
