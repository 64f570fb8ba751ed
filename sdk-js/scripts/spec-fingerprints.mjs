// The SDK's reading of campaign specs (tests/sdk_js/test_distributed_interop.py compares it with the Python SDK's):
// stdin: a JSON list of specs; stdout: per spec {"fingerprint"} or {"field"} of the SpecError.
import { loadMechanism, loadSpec } from "../dist/node.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
await loadMechanism("prio3");
const out = JSON.parse(input).map((spec) => {
  try {
    return { fingerprint: loadSpec(spec).fingerprint };
  } catch (error) {
    return { field: error.field ?? String(error) };
  }
});
process.stdout.write(JSON.stringify(out));
