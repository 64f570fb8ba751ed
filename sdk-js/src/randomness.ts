/** Randomness for the device path: the platform CSPRNG (``crypto.getRandomValues``) and exact samplers.
 *
 * Every draw reads bytes exactly as the Python SDK's ``SecureRandom`` reads ``os.urandom`` (CPython's
 * ``SystemRandom``): ``randbits(k)`` takes ceil(k/8) bytes big-endian and drops the excess low bits,
 * ``randbelow(n)`` repeats ``randbits(bitLength(n))`` until below n, ``tokenBytes(n)`` takes n bytes. So the same
 * bytes give the same payload in both SDKs (conformance/payloads.json). Probabilities are exact rationals (BigInt),
 * reduced as Python's ``Fraction`` reduces them: a denominator decides how many bytes a draw reads. */

/** Where the SDK's random bytes come from; production uses {@link secureRandom}. */
export interface RandomSource {
  tokenBytes(n: number): Uint8Array;
}

const CHUNK = 65536; // getRandomValues fills at most 64 KiB per call

/** The platform's CSPRNG, the only source the SDK uses by default. */
export const secureRandom: RandomSource = {
  tokenBytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += CHUNK) globalThis.crypto.getRandomValues(out.subarray(i, Math.min(n, i + CHUNK)));
    return out;
  },
};

/** Replays a fixed byte string (conformance vectors, tests); throws when it runs out. Never for real reports. */
export class ByteStreamRandom implements RandomSource {
  consumed = 0;
  constructor(private readonly data: Uint8Array) {}
  tokenBytes(n: number): Uint8Array {
    if (this.consumed + n > this.data.length) throw new RangeError("the byte stream is exhausted");
    const out = this.data.slice(this.consumed, this.consumed + n);
    this.consumed += n;
    return out;
  }
}

export function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** A uniform integer of k bits (BigInt). */
export function randbits(rng: RandomSource, k: number): bigint {
  const size = (k + 7) >> 3;
  let x = 0n;
  for (const byte of rng.tokenBytes(size)) x = (x << 8n) | BigInt(byte);
  return x >> BigInt(size * 8 - k);
}

/** A uniform integer of k <= 48 bits, as a number (the fast path of small draws). */
function randbitsSmall(rng: RandomSource, k: number): number {
  const size = (k + 7) >> 3;
  let x = 0;
  for (const byte of rng.tokenBytes(size)) x = x * 256 + byte;
  return Math.floor(x / 2 ** (size * 8 - k));
}

/** A uniform integer in [0, n). */
export function randbelow(rng: RandomSource, n: bigint): bigint {
  if (n <= 0n) throw new RangeError("randbelow needs n > 0");
  const k = bitLength(n);
  if (k <= 48) return BigInt(randbelowNumber(rng, Number(n)));
  let r = randbits(rng, k);
  while (r >= n) r = randbits(rng, k);
  return r;
}

/** A uniform integer in [0, n), n a positive integer below 2**48. */
export function randbelowNumber(rng: RandomSource, n: number): number {
  const k = n < 2 ** 32 ? 32 - Math.clz32(n) : 64 - Math.clz32(Math.floor(n / 2 ** 32));
  let r = randbitsSmall(rng, k);
  while (r >= n) r = randbitsSmall(rng, k);
  return r;
}

// -- exact rationals ------------------------------------------------------------------------------------------
/** A rational n/d in lowest terms, d > 0 (what Python's Fraction holds). */
export interface Rational {
  readonly n: bigint;
  readonly d: bigint;
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a;
  while (b) [a, b] = [b, a % b];
  return a;
}

export function rational(n: bigint, d: bigint = 1n): Rational {
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d);
  return g > 1n ? { n: n / g, d: d / g } : { n, d };
}

/** The exact value of a finite double (a dyadic rational), as Fraction(x). */
export function fromDouble(x: number): Rational {
  if (!Number.isFinite(x)) throw new RangeError("not a finite number");
  let scaled = x;
  let shift = 0n;
  while (!Number.isInteger(scaled)) {
    scaled *= 2;
    shift += 1n;
  }
  return rational(BigInt(scaled), 1n << shift);
}

export const PROB_BITS = 32;
export const PROB_DENOMINATOR = 2 ** 32;

/** The largest multiple of 2**-32 at or below ``p`` (reduced). */
export function quantizeDown(p: number): Rational {
  return rational(BigInt(Math.floor(p * PROB_DENOMINATOR)), 1n << 32n);
}

/** The largest multiple of 2**-32 at or below n/d (n, d > 0), exactly (reduced). */
export function quantizeRatio(n: bigint, d: bigint): Rational {
  return rational((n << 32n) / d, 1n << 32n);
}

/** The smallest multiple of 2**-32 at or above ``p`` (reduced). */
export function quantizeUp(p: number): Rational {
  return rational(BigInt(Math.ceil(p * PROB_DENOMINATOR)), 1n << 32n);
}

/** A multiple of 2**-32 as its threshold out of 2**32. */
export function threshold(p: Rational): number {
  return Number((p.n << 32n) / p.d);
}

export function toNumber(p: Rational): number {
  return Number(p.n) / Number(p.d);
}

/** True with exactly probability p. */
export function bernoulli(rng: RandomSource, p: Rational): boolean {
  if (p.d <= 0xffffffffffffn) return randbelowNumber(rng, Number(p.d)) < Number(p.n);
  return randbelow(rng, p.d) < p.n;
}

/** ``count`` draws, each true with probability threshold / 2**32: four little-endian bytes per draw. */
export function bernoulliMany(rng: RandomSource, thresholdValue: number, count: number): Uint8Array {
  const bytes = rng.tokenBytes(4 * count);
  const words = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint8Array(count);
  for (let i = 0; i < count; i++) out[i] = words.getUint32(4 * i, true) < thresholdValue ? 1 : 0;
  return out;
}

/** Little-endian 32-bit words of fresh random bytes (the native order Python's memoryview.cast("I") reads). */
export function randomWords(rng: RandomSource, count: number): Uint32Array {
  const bytes = rng.tokenBytes(4 * count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) out[i] = view.getUint32(4 * i, true);
  return out;
}

/** A uniform double in [0, 1) on the grid of multiples of 2**-53 (randbits(53) / 2**53). */
export function uniformUnit(rng: RandomSource): number {
  const b = rng.tokenBytes(7);
  const high = (b[0] << 16) | (b[1] << 8) | b[2];
  const low = ((b[3] << 24) | (b[4] << 16) | (b[5] << 8) | b[6]) >>> 0;
  return (high * 2 ** 29 + Math.floor(low / 8)) / 2 ** 53;
}

const EXP_BITS = 200n;
const EXP_ONE = 1n << EXP_BITS;

/** e**x as a double from a 200-bit fixed-point evaluation, |x| <= 64, for x >= 0 at or below e**x: the same
 * integer algorithm as the Python SDK's ``exp_rounded`` (every step rounded down, the result truncated), so both
 * derive bit-identical probabilities (Math.exp and libm's exp differ in the last bit for about one argument in
 * four) and no privacy ratio built on it exceeds e**eps. */
export function expRounded(x: number): number {
  if (!(Math.abs(x) <= 64)) throw new RangeError("expRounded needs |x| <= 64"); // NaN and infinities too
  const ratio = fromDouble(Math.abs(x));
  const shift = 40 - Math.clz32(Math.abs(x)); // 8 + the bit length of the integer part (clz32 truncates; 32 for 0)
  const y = (ratio.n << EXP_BITS) / (ratio.d << BigInt(shift));
  let total = EXP_ONE, term = EXP_ONE;
  for (let i = 1n; term; i++) {
    term = term * y / EXP_ONE / i;
    total += term;
  }
  for (let i = 0; i < shift; i++) total = total * total / EXP_ONE;
  if (x < 0) total = EXP_ONE * EXP_ONE / total;
  const drop = bitLength(total) - 53; // > 0: total >= 2**200 e**-64; 53 bits convert exactly
  return Number(total >> BigInt(drop)) * 2 ** (drop - 200);
}
