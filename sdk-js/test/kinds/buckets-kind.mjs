// A campaign kind from outside the package (issue 32): its own spec field (``buckets``), its own validation and its
// own reports, written against the package's public entry only. test/kinds.test.mjs registers it with registerKind.
import { InvalidValueType, Spec, SpecError } from "../../dist/node.js";

/** A spec of kind "buckets": the fingerprint covers the kind's name and its field. */
class BucketsSpec extends Spec {
  constructor(envelope, epsilon, buckets) {
    super(envelope.name, "", epsilon, null, null, null, null, null, envelope.expires); // no randomizer: mechanism ""
    this.buckets = buckets;
  }

  identity() {
    return { kind: "buckets", name: this.name, epsilon: this.epsilon, buckets: this.buckets };
  }
}

/** Randomized response over the buckets: the true bucket with probability 1/2, else a uniform one. */
class BucketsReporter {
  constructor(spec, rng) {
    this.spec = spec;
    this.rng = rng;
  }

  perturb(value) {
    if (!Number.isInteger(value) || value < 0 || value >= this.spec.buckets) {
      throw new InvalidValueType(`campaign ${this.spec.name}: a bucket in [0, ${this.spec.buckets})`);
    }
    const [coin, draw] = this.rng.tokenBytes(2);
    return { bucket: coin & 1 ? value : draw % this.spec.buckets };
  }
}

export default {
  name: "buckets",
  trustModels: ["local"],
  fields: ["buckets"],
  parse(data, envelope) {
    const buckets = data.buckets;
    if (!Number.isInteger(buckets) || buckets < 2 || buckets > 64) throw new SpecError("buckets", "must be an integer in [2, 64]");
    if (typeof data.epsilon !== "number" || !(data.epsilon > 0 && data.epsilon <= 20)) throw new SpecError("epsilon", "must be in (0, 20]");
    return new BucketsSpec(envelope, data.epsilon, buckets);
  },
  reporter: (spec, rng) => new BucketsReporter(spec, rng),
};
