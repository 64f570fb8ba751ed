/** The prio3 kind: distributed campaigns (``client_sdk/kinds/prio3.py``). Its fields (the Prio3 circuit, the DP
 * release's noise, the batch window, the listing's aggregators block) are validated by distributed/spec.ts; a report
 * is the value's Prio3 measurement, sharded and sealed to the leader and the helper (distributed.ts). This module
 * loads with the first distributed spec (browsers: dist/browser/prio3.js, which loads vdaf.js, the sharder). */

import { Prio3Sealer } from "../distributed.js";
import { distributedFromDict, type DistributedSpec } from "../distributed/spec.js";
import { provideKind, type CampaignKind } from "./index.js";

export const kind: CampaignKind = {
  name: "prio3",
  trustModels: ["distributed"],
  // aggregators: the listing's block, cached with the spec
  fields: ["mechanism", "domain", "prio3", "max_measurement", "length", "max_weight", "noise", "coins",
    "honest_fraction", "min_batch", "window", "aggregators"],
  parse: (d, { name, expires, delta }) => distributedFromDict(d, name, expires, delta),
  reporter: (spec) => new Prio3Sealer(spec as DistributedSpec),
};

provideKind(kind);
