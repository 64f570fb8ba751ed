/** Hex and UTF-8 helpers (SHA-256 is in sha256.ts, HMAC and MD5 in hmac.ts). */

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
