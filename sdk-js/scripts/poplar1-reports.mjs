// Poplar1 reports made by the SDK's poplar1 kind (dist/kinds/poplar1.js) from given random bytes, for the Python
// cross-check (tests/sdk_js/test_poplar1_interop.py), which opens the sealed shares with the aggregators' keys and
// compares them with the Python VDAF layer's shards from the same bytes. stdin: {"spec": {...}, "leader": config,
// "helper": config, "cases": [{"value": string or {"bytes": b64url}, "report_id", "batch", "rand": b64url}]};
// stdout: {"fingerprint", "payloads": [...]} (a case whose value the kind refuses: {"error": name}).
import "../dist/node.js";
import { loadMechanism, loadSpec } from "../dist/node.js";
import { encodePoplar1Value, sealPoplar1 } from "../dist/kinds/poplar1.js";
import { fromB64url } from "../dist/distributed/messages.js";

await loadMechanism("poplar1");
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { spec: data, leader, helper, cases } = JSON.parse(input);
const spec = loadSpec(data);
const payloads = [];
for (const c of cases) {
  const value = typeof c.value === "string" ? c.value : fromB64url(c.value.bytes);
  try {
    const measurement = encodePoplar1Value(spec.params, value);
    payloads.push(await sealPoplar1(spec, measurement, leader, helper, c.report_id, c.batch, fromB64url(c.rand)));
  } catch (error) {
    payloads.push({ error: error.name });
  }
}
process.stdout.write(JSON.stringify({ fingerprint: spec.fingerprint, payloads }));
