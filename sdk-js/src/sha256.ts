/** SHA-256 (FIPS 180-4), synchronous: RAPPOR's HMAC runs inside ``record()``, and Node computes fingerprints
 * with it while specs are parsed (browsers use WebCrypto's digest for those, asynchronously, and load this module
 * with RAPPOR). Checked against node:crypto in test/hash.test.mjs. */

const K256 = new Uint32Array(64);
const H256 = new Uint32Array(8);
(() => {
  // the fractional parts of the square and cube roots of the first primes
  let n = 2;
  for (let i = 0; i < 64; n++) {
    let prime = true;
    for (let f = 2; f * f <= n; f++) if (n % f === 0) prime = false;
    if (!prime) continue;
    if (i < 8) H256[i] = frac(Math.sqrt(n));
    K256[i++] = frac(Math.cbrt(n));
  }
})();

function frac(x: number): number {
  return ((x - Math.floor(x)) * 2 ** 32) >>> 0;
}

export function pad(data: Uint8Array, bigEndian: boolean): DataView {
  const length = ((data.length + 8) >> 6) * 64 + 64;
  const out = new Uint8Array(length);
  out.set(data);
  out[data.length] = 0x80;
  const view = new DataView(out.buffer);
  const bits = data.length * 8;
  if (bigEndian) {
    view.setUint32(length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(length - 4, bits >>> 0);
  } else {
    view.setUint32(length - 8, bits >>> 0, true);
    view.setUint32(length - 4, Math.floor(bits / 2 ** 32), true);
  }
  return view;
}

export function sha256(data: Uint8Array): Uint8Array {
  const view = pad(data, true);
  const h = H256.slice();
  const w = new Uint32Array(64);
  for (let offset = 0; offset < view.byteLength; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + 4 * i);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15], b = w[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + s1 + ((e & f) ^ (~e & g)) + K256[i] + w[i]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(4 * i, h[i]);
  return out;
}

