/** Hex and UTF-8 helpers, and bits packed into hex (SHA-256 is in sha256.ts, HMAC and MD5 in hmac.ts). */

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += (b < 16 ? "0" : "") + b.toString(16);
  return out;
}

export function fromHex(text: string): Uint8Array {
  const out = new Uint8Array(text.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
  return out;
}

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Pack 0/1 bytes into big-endian hex, zero-padded to whole bytes. */
export function bitsToHex(bits: Uint8Array, width: number): string {
  const out = new Uint8Array((width + 7) >> 3);
  for (let i = 0; i < width; i++) if (bits[i]) out[i >> 3] |= 0x80 >> (i & 7);
  return toHex(out);
}
