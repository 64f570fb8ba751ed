// The heavy_hitters kind in the browser bundle: dist/browser/heavy_hitters.js (the kind's spec fields, its planner
// for "auto", PEM and SFP reports, SHA-256), loaded with the first heavy_hitters spec: 5,279 bytes gzipped when
// measured, within HEAVY_HITTERS_BUDGET; it imports nothing but the main module, which never imports it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const HEAVY_HITTERS_BUDGET = 6_000;
const DIR = new URL("../dist/browser/", import.meta.url);
const read = (name) => readFileSync(new URL(name, DIR)).toString();
const imports = (text) => [...text.matchAll(/(?:import|export)\s*(?:[\w*{}\s,$]*from\s*)?["']\.\/([^"']+)["']/g)].map((m) => m[1]);

test("heavy_hitters.js: loaded on demand, importing only the main module, within its budget", () => {
  const chunk = read("heavy_hitters.js");
  const gzipped = gzipSync(chunk, { level: 9 }).length;
  console.log(`the heavy_hitters kind (heavy_hitters.js): ${chunk.length} bytes minified, ${gzipped} bytes gzipped `
    + `(budget ${HEAVY_HITTERS_BUDGET})`);
  assert.ok(gzipped <= HEAVY_HITTERS_BUDGET, `${gzipped} bytes gzipped`);
  assert.deepEqual([...new Set(imports(chunk))], ["ldp-telemetry.min.js"]);
  const main = read("ldp-telemetry.min.js");
  assert.ok(!imports(main).includes("heavy_hitters.js"), "the main module does not import it statically");
  assert.ok(main.includes('import("./heavy_hitters.js")'), "the registry loads it on demand");
  assert.ok(!chunk.includes("Math.random"), "randomness only from crypto.getRandomValues");
});
