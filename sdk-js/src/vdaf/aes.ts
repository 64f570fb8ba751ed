/** The AES-128 block cipher under XofFixedKeyAes128 (xofaes.ts): one key per (dst, binder), then many independent
 * blocks (ECB). The default is @noble/ciphers' synchronous ECB (aesnoble.ts, browsers); ``webCryptoAes`` encrypts
 * each block alone as WebCrypto AES-CBC with a zero IV (the first ciphertext block is AES(block)), a promise per
 * block, as WebCrypto has no ECB (about 6x slower per shard in Chromium); a Node app may register node:crypto's
 * synchronous ECB (aesnode.ts: ``registerAes(nodeAes)``). */

/** AES-128 encryption of independent 16-byte blocks under one key. */
export interface AesBlockCipher {
  /** AES(block) for each 16-byte block of ``blocks`` (a multiple of 16 bytes long), in order. */
  encryptBlocks(blocks: Uint8Array): Uint8Array | Promise<Uint8Array>;
}

/** Where AES-128 keys come from. */
export interface AesPrimitive {
  readonly name: string;
  withKey(key: Uint8Array): AesBlockCipher | Promise<AesBlockCipher>;
}

import { nobleAes } from "./aesnoble.js";

const ZERO_IV = new Uint8Array(16);

/** WebCrypto's AES-CBC, one call per block (browsers, and any runtime with globalThis.crypto.subtle). */
export const webCryptoAes: AesPrimitive = {
  name: "webcrypto",
  async withKey(key) {
    const subtle = globalThis.crypto.subtle;
    const cryptoKey = await subtle.importKey("raw", key as BufferSource, { name: "AES-CBC" }, false, ["encrypt"]);
    return {
      async encryptBlocks(blocks) {
        if (blocks.length % 16) throw new RangeError("AES blocks must be a multiple of 16 bytes");
        const count = blocks.length / 16;
        const encrypted = await Promise.all(Array.from({ length: count }, (_, i) =>
          subtle.encrypt({ name: "AES-CBC", iv: ZERO_IV }, cryptoKey, blocks.subarray(16 * i, 16 * i + 16) as BufferSource)));
        const out = new Uint8Array(blocks.length);
        encrypted.forEach((ciphertext, i) => out.set(new Uint8Array(ciphertext, 0, 16), 16 * i)); // padding block dropped
        return out;
      },
    };
  },
};

let current: AesPrimitive = nobleAes;

/** Use ``primitive`` for every later XofFixedKeyAes128 (e.g. aesnode.ts's ``nodeAes`` in Node). */
export function registerAes(primitive: AesPrimitive): void {
  current = primitive;
}

/** The AES primitive in use. */
export function currentAes(): AesPrimitive {
  return current;
}
