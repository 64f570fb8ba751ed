/** The payloads each mechanism produces, and a check that accepts exactly them (the rules of the Python SDK's
 * ``check_payload``, which the collector applies; conformance/wire.json holds the cases). */

import { PayloadError } from "./errors.js";
import { OLH_MAX_RANGE, hadamardSize, olhRange } from "./categorical.js";
import { GRID, PM_CELLS } from "./numeric.js";
import { expRounded, fromDouble } from "./randomness.js";
import type { Spec } from "./spec.js";

function requireInt(payload: unknown, field: string, low: number, high: number): number {
  if (typeof payload !== "number" || !Number.isInteger(payload)) throw new PayloadError(field, "must be an integer");
  if (!(payload >= low && payload < high)) throw new PayloadError(field, `must be in [${low}, ${high})`);
  return payload;
}

function requireList(payload: unknown, field: string, length: number): unknown[] {
  if (!Array.isArray(payload) || payload.length !== length) throw new PayloadError(field, `must be a list of ${length} elements`);
  return payload;
}

function requireHex(payload: unknown, field: string, length: number): string {
  if (typeof payload !== "string" || payload.length !== length) {
    throw new PayloadError(field, `must be a hex string of ${length} characters`);
  }
  if (!/^[0-9A-Fa-f]*$/.test(payload)) throw new PayloadError(field, "must contain only hex digits");
  return payload;
}

function requirePackedBits(payload: unknown, field: string, width: number): void {
  const hex = requireHex(payload, field, 2 * ((width + 7) >> 3));
  const padding = 8 * (hex.length / 2) - width;
  if (padding && parseInt(hex.slice(-2), 16) & ((1 << padding) - 1)) {
    throw new PayloadError(field, `the last ${padding} padding bits must be 0`);
  }
}

/** Throw PayloadError (naming the field) unless ``payload`` is one the spec's mechanism can produce. */
export function checkPayload(spec: Spec, payload: unknown): void {
  const d = spec.domain?.length ?? 0;
  switch (spec.mechanism) {
    case "grr": requireInt(payload, "payload", 0, d); return;
    case "sue": case "oue": requirePackedBits(payload, "payload", d); return;
    case "olh": {
      const [seed, y] = requireList(payload, "payload", 2);
      requireHex(seed, "payload[0]", 32);
      requireInt(y, "payload[1]", 0, Math.min(olhRange(expRounded(spec.epsilon)), OLH_MAX_RANGE));
      return;
    }
    case "hadamard": {
      const [column, bit] = requireList(payload, "payload", 2);
      requireInt(column, "payload[0]", 0, hadamardSize(d));
      requireInt(bit, "payload[1]", 0, 2);
      return;
    }
    case "laplace": {
      const eps = fromDouble(spec.epsilon);
      const scale = Number(BigInt(2 * GRID) * eps.d) / Number(eps.n);
      const most = GRID + 64 * Math.ceil(scale);
      if (typeof payload !== "number" || !Number.isInteger(payload)) throw new PayloadError("payload", "must be an integer");
      if (Math.abs(payload) > most) throw new PayloadError("payload", `must be in [-${most}, ${most}]`);
      return;
    }
    case "duchi": requireInt(payload, "payload", 0, 2); return;
    case "piecewise": requireInt(payload, "payload", 0, PM_CELLS + 1); return;
    case "hybrid": {
      const [branch, code] = requireList(payload, "payload", 2);
      requireInt(branch, "payload[0]", 0, 2);
      requireInt(code, "payload[1]", 0, branch === 1 ? PM_CELLS + 1 : 2);
      return;
    }
    case "rappor": {
      if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
        throw new PayloadError("payload", "must be an object with cohort and bits");
      }
      const record = payload as Record<string, unknown>;
      const extra = Object.keys(record).filter((k) => k !== "cohort" && k !== "bits").sort();
      if (extra.length) throw new PayloadError(`payload.${extra[0]}`, "unknown field; allowed: cohort, bits");
      for (const name of ["cohort", "bits"]) if (!(name in record)) throw new PayloadError(`payload.${name}`, "is required");
      requireInt(record.cohort, "payload.cohort", 0, spec.rappor!.m);
      requirePackedBits(record.bits, "payload.bits", spec.rappor!.k);
      return;
    }
    default: throw new PayloadError("payload", `unknown mechanism ${spec.mechanism}`);
  }
}
