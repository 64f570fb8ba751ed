// Reports made by the JavaScript SDK's randomizers (CSPRNG), for the statistical conformance tests
// (tests/sdk_js/test_statistical.py): stdin is a JSON list of jobs {spec, values: [[value, count], ...],
// freshDevices}; stdout is a JSON list with, per job, the payloads in the order of ``values``.
// freshDevices builds a new randomizer per report (RAPPOR: a new device secret and cohort each time).
import { loadSpec, mechanismFromSpec } from "../dist/node.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const job of JSON.parse(input)) {
  const spec = loadSpec(job.spec);
  let mechanism = mechanismFromSpec(spec);
  const payloads = [];
  for (const [value, count] of job.values) {
    for (let i = 0; i < count; i++) {
      if (job.freshDevices) mechanism = mechanismFromSpec(spec);
      payloads.push(mechanism.perturb(value));
    }
  }
  out.push(payloads);
}
process.stdout.write(JSON.stringify(out));
