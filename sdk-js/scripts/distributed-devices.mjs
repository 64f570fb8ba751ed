// Devices of the JavaScript SDK recording into a distributed campaign (tests/sdk_js/test_distributed_e2e.py): one
// Client per value (its own in-memory state, the helper's URL as the app ships it), one record(), one flush() to
// the leader. stdin: {"url", "key", "helper", "campaign", "values": [...], "concurrency"}; stdout: per device
// {"status", "sent", "remaining", "rejected", "spent"}.
import { Client, MemoryStore } from "../dist/node.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { url, key, helper, campaign, values, concurrency = 20 } = JSON.parse(input);

async function device(value) {
  const client = new Client({ url, apiKey: key, store: new MemoryStore(), background: false, campaigns: [campaign],
    aggregators: { helper }, logger: { warn: () => undefined } });
  try {
    await client.prepare();
    const { status } = await client.record(campaign, value);
    const result = await client.flush(60);
    return { status, sent: result.sent, remaining: result.remaining, rejected: result.rejected,
      spent: await client.spent(campaign), condition: result.condition };
  } finally {
    await client.close(0);
  }
}

const results = new Array(values.length);
let next = 0;
await Promise.all(Array.from({ length: Math.min(concurrency, values.length) }, async () => {
  while (next < values.length) {
    const index = next++;
    results[index] = await device(values[index]);
  }
}));
process.stdout.write(JSON.stringify(results));
