/** ldp-telemetry for Node (>= 20): as the browser entry, with the state in a journal file under ``stateDir``. */
import { setDefaultStore } from "./client.js";
import { FileStore } from "./filestore.js";
import { sha256 } from "./sha256.js";
import { registerSha256 } from "./spec.js";
import { registerHpkePrimitives } from "./distributed/hpke.js";
import { nodeCrypto } from "./distributed/nodecrypto.js";
import "./kinds/local.js"; // the local kind and its randomizers, loaded at once (browsers load them on demand)
import "./numeric.js";
import "./rappor.js";

export * from "./index.js";
export { FileStore } from "./filestore.js";
export { MemoryStore } from "./store.js";
export { ByteStreamRandom, expRounded } from "./randomness.js";
export { PyFloat, canonicalJson } from "./canonical.js"; // PyFloat: a kind's float fields, fingerprinted as Python writes them

registerSha256(sha256); // fingerprints computed while specs are parsed, as the Python SDK does
registerHpkePrimitives(nodeCrypto); // distributed campaigns seal with node:crypto (loaded with the first one)

setDefaultStore((options) => {
  if (typeof options.stateDir !== "string") throw new TypeError("stateDir is required in Node (where the queue and ledger live)");
  return new FileStore(options.stateDir);
});
