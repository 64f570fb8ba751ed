// Step 7, JavaScript devices: one sdk-js Client per value in this Node process (stdin: {url, key, campaign,
// values, stateDir}); each registers the bins kind from its own module, records its value and flushes to the
// collector. Prints each device's outcome as JSON.
import { Client, registerKind } from "../../sdk-js/dist/node.js";

registerKind("bins", () => import("./bins-kind.mjs"));

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { url, key, campaign, values, stateDir } = JSON.parse(input);
const outcomes = [];
for (const [index, value] of values.entries()) {
  const client = new Client({ url, apiKey: key, stateDir: `${stateDir}/device-${index}`, campaigns: [campaign],
    background: false, logger: { warn: (m) => process.stderr.write(`${m}\n`) } });
  await client.prepare(); // the campaign's spec, and the kind's module with it
  const recorded = await client.record(campaign, value);
  const flushed = await client.flush(30);
  outcomes.push({ status: recorded.status, sent: flushed.sent, rejected: flushed.rejected });
  await client.close();
}
process.stdout.write(JSON.stringify(outcomes));
