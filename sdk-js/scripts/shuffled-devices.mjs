// Devices of the JavaScript SDK sending a shuffled campaign's reports (tests/sdk_js/test_shuffled_e2e.py): each is a
// Client over its own state directory whose ``url`` is the shuffler's (devices send to it as to a collector), without
// a report cap, so the spec's ``budget`` is what stops it. Each records its values in order, then flushes.
// stdin: {"url", "key", "devices": [{"dir", "campaign", "values": [...]}]};
// stdout: per device {"statuses": [...], "sent", "remaining", "rejected", "spent"}.
import { Client } from "../dist/node.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { url, key, devices } = JSON.parse(input);

async function device({ dir, campaign, values }) {
  const client = new Client({ url, apiKey: key, stateDir: dir, background: false, campaigns: [campaign],
    policy: { maxReports: null }, logger: { warn: () => undefined } });
  try {
    await client.prepare();
    const statuses = [];
    for (const value of values) statuses.push((await client.record(campaign, value)).status);
    const result = await client.flush(60);
    return { statuses, sent: result.sent, remaining: result.remaining, rejected: result.rejected,
      spent: await client.spent(campaign) };
  } finally {
    await client.close(0);
  }
}

const results = [];
for (const each of devices) results.push(await device(each));
process.stdout.write(JSON.stringify(results));
