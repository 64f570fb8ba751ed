export * from "./errors.js";
export { Spec, loadSpec } from "./spec.js";
export { mechanismFromSpec, type Mechanism, type MechanismOptions, type Payload } from "./mechanisms.js";
export { ByteStreamRandom, secureRandom, expRounded, type RandomSource } from "./randomness.js";
export { canonicalJson } from "./canonical.js";
