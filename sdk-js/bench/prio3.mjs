// Prio3 shard cost per report in Node (issue 25), one campaign's parameters per line of JSON on stdout:
//   cd sdk-js && npm run build && node bench/prio3.mjs [--reports N] [--repeat R]
// CPU milliseconds of this process per report (process.cpuUsage), best of --repeat runs, each sharding --reports
// measurements with fresh rand from crypto.getRandomValues (shardPrio3 with rand = null), as record() does.
// benchmarks/prio3_shard.py runs this beside the Python SDK and prints both in one table.
import { ctxFor, shardPrio3 } from "../dist/vdaf/index.js";

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const REPEAT = arg("--repeat", 3);
const CASES = [
  ["Count", { type: "count" }, () => true, 4000],
  ["Sum(255)", { type: "sum", max_measurement: 255 }, (i) => i % 256, 2000],
  ["Histogram(16)", { type: "histogram", length: 16, chunk_length: 4 }, (i) => i % 16, 2000],
  ["Histogram(1024)", { type: "histogram", length: 1024, chunk_length: 32 }, (i) => i % 1024, 60],
  // the largest encoded measurement a spec allows (16,384 field elements)
  ["Histogram(4096), 3 coins", { type: "histogram", length: 4096, noise: "coins", coins: 3, chunk_length: 128 },
    (i) => i % 4096, 6],
];
const ctx = ctxFor("00112233445566778899aabbccddeeff");
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

for (const [name, params, measurement, defaultReports] of CASES) {
  const reports = arg("--reports", defaultReports);
  const nonce = new Uint8Array(16);
  let bytes = 0;
  for (let i = 0; i < Math.min(20, reports); i++) shardPrio3(params, measurement(i), nonce, null, ctx); // warm-up
  const runs = [];
  for (let r = 0; r < REPEAT; r++) {
    const start = cpuMs();
    for (let i = 0; i < reports; i++) {
      crypto.getRandomValues(nonce);
      const { publicShare, inputShares } = shardPrio3(params, measurement(i), nonce, null, ctx);
      bytes = publicShare.length + inputShares[0].length + inputShares[1].length;
    }
    runs.push((cpuMs() - start) / reports);
  }
  console.log(JSON.stringify({ name, shard_ms: Math.min(...runs), reports, bytes, node: process.version }));
}
