/** HMAC-SHA256 (RFC 2104) and MD5 (RFC 1321), synchronous, for RAPPOR's Bloom hashing and memoized permanent
 * responses (computed inside ``record()``); in browsers this module loads with the RAPPOR randomizer. */

import { pad, sha256 } from "./sha256.js";

export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array {
  const block = new Uint8Array(64);
  block.set(key.length > 64 ? sha256(key) : key);
  const inner = new Uint8Array(64 + message.length);
  const outer = new Uint8Array(64 + 32);
  for (let i = 0; i < 64; i++) {
    inner[i] = block[i] ^ 0x36;
    outer[i] = block[i] ^ 0x5c;
  }
  inner.set(message, 64);
  outer.set(sha256(inner), 64);
  return sha256(outer);
}

const MD5_SHIFTS = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const MD5_K = new Uint32Array(64).map((_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0);

export function md5(data: Uint8Array): Uint8Array {
  const view = pad(data, false);
  const h = new Uint32Array([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]);
  const m = new Uint32Array(16);
  for (let offset = 0; offset < view.byteLength; offset += 64) {
    for (let i = 0; i < 16; i++) m[i] = view.getUint32(offset + 4 * i, true);
    let [a, b, c, d] = h;
    for (let i = 0; i < 64; i++) {
      const round = i >> 4;
      let f: number, g: number;
      if (round === 0) { f = (b & c) | (~b & d); g = i; }
      else if (round === 1) { f = (d & b) | (~d & c); g = (5 * i + 1) & 15; }
      else if (round === 2) { f = b ^ c ^ d; g = (3 * i + 5) & 15; }
      else { f = c ^ (b | ~d); g = (7 * i) & 15; }
      const s = MD5_SHIFTS[(round << 2) | (i & 3)];
      const sum = (a + f + MD5_K[i] + m[g]) | 0;
      a = d; d = c; c = b;
      b = (b + ((sum << s) | (sum >>> (32 - s)))) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  }
  const out = new Uint8Array(16);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 4; i++) outView.setUint32(4 * i, h[i], true);
  return out;
}

