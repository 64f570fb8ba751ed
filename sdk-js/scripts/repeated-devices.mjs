// One period of devices of the JavaScript SDK in repeated campaigns (tests/sdk_js/test_repeated_e2e.py): each device
// is a Client over its own state directory (the file store: its memoized answers and ledger survive from one
// period's process to the next), its clock ``offset`` seconds ahead as the collector's, drawing from a stream seeded
// by the test (``seed``). Each records its value per campaign, a second value the same period, then flushes.
// stdin: {"url", "key", "offset", "devices": [{"dir", "seed", "values": {campaign: value}}], "concurrency"};
// stdout: per device {"first": {campaign: status}, "second": {...}, "sent", "remaining", "spent": {campaign: {...}}}.
import { createHash } from "node:crypto";
import { Client } from "../dist/node.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { url, key, offset, devices, concurrency = 10 } = JSON.parse(input);

/** SHA-256 in counter mode over ``seed``: reproducible bytes for a test (never for real devices). */
function seeded(seed) {
  let counter = 0, buffer = new Uint8Array(0);
  return {
    tokenBytes(n) {
      while (buffer.length < n) {
        const block = createHash("sha256").update(`${seed}:${counter++}`).digest();
        buffer = Uint8Array.from([...buffer, ...block]);
      }
      const out = buffer.slice(0, n);
      buffer = buffer.slice(n);
      return out;
    },
  };
}

async function device({ dir, seed, values }) {
  const campaigns = Object.keys(values);
  const client = new Client({ url, apiKey: key, stateDir: dir, background: false, campaigns, rng: seeded(seed),
    clock: () => Date.now() / 1000 + offset, logger: { warn: () => undefined } });
  try {
    await client.prepare();
    const first = {}, second = {}, spent = {};
    for (const campaign of campaigns) first[campaign] = (await client.record(campaign, values[campaign])).status;
    for (const campaign of campaigns) second[campaign] = (await client.record(campaign, values[campaign])).status;
    const result = await client.flush(60);
    for (const campaign of campaigns) spent[campaign] = await client.spent(campaign);
    return { first, second, sent: result.sent, remaining: result.remaining, rejected: result.rejected, spent };
  } finally {
    await client.close(0);
  }
}

const results = new Array(devices.length);
let next = 0;
await Promise.all(Array.from({ length: Math.min(concurrency, devices.length) }, async () => {
  while (next < devices.length) {
    const index = next++;
    results[index] = await device(devices[index]);
  }
}));
process.stdout.write(JSON.stringify(results));
