// Poplar1 in headless Chromium (Debian's chromium through puppeteer-core): serves dist/browser/ on loopback, loads
// the main module in a page, records which modules the page fetched before and after loadMechanism("poplar1"), then
// shards every shard operation of the given draft vector files in the page (WebCrypto's AES) and, with --bench N,
// times N shards of 32-bit inputs (fresh rand and nonce from crypto.getRandomValues; best of 3 runs; ms per report).
//   node scripts/browser-poplar1.mjs CHROMIUM [--bench N] [VECTOR.json ...]
// Prints {"before": [...], "after": [...], "cases": [{file, index, public_share, input_shares, expected...}], "ms"}.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import puppeteer from "puppeteer-core";

const args = process.argv.slice(2);
const chromium = args.shift();
const benchAt = args.indexOf("--bench");
const bench = benchAt >= 0 ? Number(args.splice(benchAt, 2)[1]) : 0;
const vectors = args.map((file) => ({ file, v: JSON.parse(readFileSync(file, "utf8")) }));
const DIST = new URL("../dist/browser/", import.meta.url);
const server = createServer((req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  if (path === "/") {
    res.writeHead(200, { "Content-Type": "text/html" }).end("<!doctype html><title>poplar1</title>");
    return;
  }
  try {
    const body = readFileSync(new URL(`.${path}`, DIST));
    res.writeHead(200, { "Content-Type": "text/javascript" }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const out = { before: [], after: [], cases: [], console: [] };
try {
  const page = await browser.newPage();
  const loaded = [];
  page.on("request", (request) => loaded.push(new URL(request.url()).pathname));
  page.on("pageerror", (error) => out.console.push(`pageerror: ${error.message}`));
  await page.goto(`${origin}/`);
  await page.evaluate(async () => { globalThis.sdk = await import("/ldp-telemetry.min.js"); });
  out.before = [...loaded];
  const result = await page.evaluate(async (vectors, bench) => {
    await globalThis.sdk.loadMechanism("poplar1");
    const { shardPoplar1 } = await import("/poplar1.js"); // already loaded: the same module instance
    const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
    const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    const cases = [];
    for (const { file, v } of vectors) {
      for (const op of v.operations.filter((o) => o.operation === "shard" && o.success)) {
        const r = v.reports[op.report_index];
        const { publicShare, inputShares } = await shardPoplar1(v.bits, r.measurement, fromHex(r.nonce), fromHex(r.rand),
          fromHex(v.ctx));
        cases.push({ file, index: op.report_index, public_share: toHex(publicShare), input_shares: inputShares.map(toHex),
          expected_public_share: r.public_share, expected_input_shares: r.input_shares });
      }
    }
    let ms = null;
    if (bench > 0) {
      const measurement = Array.from({ length: 32 }, (_, i) => i % 3 !== 0);
      const ctx = new TextEncoder().encode("ldp-telemetry/v1 benchmark");
      for (let i = 0; i < 20; i++) await shardPoplar1(32, measurement, crypto.getRandomValues(new Uint8Array(16)), null, ctx);
      const runs = [];
      for (let run = 0; run < 3; run++) {
        const start = performance.now();
        for (let i = 0; i < bench; i++) await shardPoplar1(32, measurement, crypto.getRandomValues(new Uint8Array(16)), null, ctx);
        runs.push((performance.now() - start) / bench);
      }
      ms = Math.min(...runs);
    }
    return { cases, ms };
  }, vectors, bench);
  out.after = [...loaded];
  Object.assign(out, result);
} catch (error) {
  out.error = String(error.stack ?? error);
  process.exitCode = 1;
} finally {
  await browser.close();
  server.close();
}
process.stdout.write(JSON.stringify(out));
