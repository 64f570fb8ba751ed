/** Canonical JSON exactly as the Python SDK writes it for fingerprints: ``json.dumps(sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False)``, floats written as Python's ``repr`` writes them. */

/** A number that Python holds as a float (written "1.0", "1e-05", "1e+16"). */
export class PyFloat {
  constructor(readonly value: number) {}
}

export function pyFloatRepr(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError("canonical JSON has no NaN or Infinity");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, exponent] = Math.abs(x).toExponential().split("e"); // shortest round-trip digits
  const digits = mantissa.replace(".", "");
  const decpt = Number(exponent) + 1; // x = 0.DIGITS * 10**decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const e = decpt - 1;
  const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${body}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

export function canonicalJson(value: unknown): string {
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isInteger(value)) return pyFloatRepr(value);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.keys(value as object).sort() // ASCII field names: UTF-16 order is code-point order;
  return `{${entries.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
}
