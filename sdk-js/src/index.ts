/** ldp-telemetry for browsers (and any runtime with IndexedDB): values are perturbed under local differential
 * privacy on the device; only the perturbed report is stored and sent. */
import { setDefaultStore } from "./client.js";
import { IndexedDBStore } from "./idbstore.js";

setDefaultStore((options) => new IndexedDBStore(options.dbName));

export * from "./errors.js";
export { Client, loadMechanism, type ClientOptions, type ClientStatus, type FlushResult, type Recorded, type RecordStatus } from "./client.js";
export { Spec, fingerprinted, loadSpec } from "./spec.js";
export { loadKind, registerKind, type CampaignKind, type Envelope, type KindLoader } from "./kinds/index.js";
export { mechanismFromSpec, type Mechanism, type MechanismOptions, type Payload } from "./mechanisms.js";
export { secureRandom, type RandomSource } from "./randomness.js";
export { type Store, type ReportPolicy, type QueueLimits, type QueuedReport, type Spending } from "./store.js";
export { IndexedDBStore } from "./idbstore.js";
