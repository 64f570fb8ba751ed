// The quantized parameters each randomizer draws with, for the exact privacy audit (tests/audit.py,
// tests/sdk_js/test_statistical.py): stdin is a JSON list of specs; stdout a JSON list, per spec, of its epsilon,
// its mechanism and its parameters (rationals as "n/d" strings, doubles as numbers).
import { loadSpec, mechanismFromSpec } from "../dist/node.js";

const ratio = (r) => `${r.n}/${r.d}`;
const unit = (threshold) => `${threshold}/${2 ** 32}`;

function parameters(m) {
  switch (m.spec.mechanism) {
    case "grr": return { keep: ratio(m.keep), d: m.d };
    case "olh": return { keep: ratio(m.keep), g: m.g };
    case "hadamard": return { keep: ratio(m.keep) };
    case "sue": case "oue": return { true_bit_one: ratio(m.trueBitOne), other_bit_one: ratio(m.otherBitOne) };
    case "laplace": return { scale_steps: ratio(m.scaleSteps) };
    case "duchi": return { slope: ratio(m.slope) };
    case "piecewise": return { central: ratio(m.central), magnitude: m.magnitude };
    case "hybrid": // its branches share its spec
      return { central: ratio(m.piecewise.central), magnitude: m.piecewise.magnitude, slope: ratio(m.duchi.slope) };
    case "rappor": return { f_half: unit(m.prrThreshold), p: unit(m.pThreshold), q: unit(m.qThreshold), h: m.params.h };
    default: throw new Error(`no parameters for ${m.spec.mechanism}`);
  }
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = JSON.parse(input).map((data) => {
  const spec = loadSpec(data);
  return { epsilon: spec.epsilon, mechanism: spec.mechanism, parameters: parameters(mechanismFromSpec(spec)) };
});
process.stdout.write(JSON.stringify(out));
