// Step 6, the JavaScript side: the bins kind for sdk-js, written against the package's public entry only and
// registered by the device with registerKind("bins", () => import(".../bins-kind.mjs")). It parses the kind's own
// fields as bins_device.py does (the same SpecError fields, the same identity, so the same fingerprint) and draws a
// report the same way: the true bin with probability floor(2^32 e^eps / (e^eps + bins - 1)) / 2^32, else another bin
// uniformly. (Its per-device cap is the Python device's: sdk-js gives a kind no state slot of its own.)
import { InvalidValueType, PyFloat, Spec, SpecError, expRounded } from "../../sdk-js/dist/node.js";

const MAX_BINS = 64;

/** A spec of kind "bins": the fingerprint covers the envelope's name and expiry, the kind, epsilon and bins. */
class BinsSpec extends Spec {
  constructor(envelope, epsilon, bins, perDevice) {
    super(envelope.name, "", epsilon, null, null, null, null, null, envelope.expires); // no randomizer: mechanism ""
    this.trust = envelope.trust;
    this.bins = bins;
    this.perDevice = perDevice;
  }

  identity() {
    // epsilon as Python writes a float (2.0, not 2): the same canonical JSON, the same fingerprint
    const out = { name: this.name, kind: "bins", trust: this.trust, epsilon: new PyFloat(this.epsilon), bins: this.bins };
    if (this.expires !== null) out.expires = this.expires;
    return out;
  }
}

/** An unsigned 32-bit word from the device's random source. */
const word = (rng) => new DataView(rng.tokenBytes(4).buffer).getUint32(0, true);

/** A uniform integer in [0, n) by rejection (n <= 2^32). */
function below(rng, n) {
  const limit = Math.floor(2 ** 32 / n) * n;
  for (;;) {
    const w = word(rng);
    if (w < limit) return w % n;
  }
}

class BinsReporter {
  constructor(spec, rng) {
    this.spec = spec;
    this.rng = rng;
    const e = expRounded(spec.epsilon);
    this.keep = Math.floor((2 ** 32 * e) / (e + spec.bins - 1)); // a threshold on one 32-bit word
  }

  perturb(value) {
    if (!Number.isInteger(value) || value < 0 || value >= this.spec.bins) {
      throw new InvalidValueType(`campaign ${this.spec.name}: a bin in [0, ${this.spec.bins})`);
    }
    if (word(this.rng) < this.keep) return { bin: value };
    const other = below(this.rng, this.spec.bins - 1);
    return { bin: other < value ? other : other + 1 };
  }
}

function integer(data, field, low, high, fallback) {
  const value = data[field] ?? fallback;
  if (!Number.isInteger(value) || value < low || (high !== null && value > high)) {
    throw new SpecError(field, high !== null ? `must be an integer in [${low}, ${high}]` : `must be an integer >= ${low}`);
  }
  return value;
}

export default {
  name: "bins",
  trustModels: ["local"],
  fields: ["bins", "per_device"],
  parse(data, envelope) {
    const epsilon = data.epsilon;
    if (typeof epsilon !== "number" || !(epsilon >= 0.01 && epsilon <= 20)) throw new SpecError("epsilon", "must be a number in [0.01, 20]");
    return new BinsSpec(envelope, epsilon, integer(data, "bins", 2, MAX_BINS), integer(data, "per_device", 1, null, 1));
  },
  reporter: (spec, rng) => new BinsReporter(spec, rng),
};
