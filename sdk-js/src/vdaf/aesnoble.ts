/** AES-128 from @noble/ciphers (audited, synchronous, in the poplar1 chunk only): the default for XofFixedKeyAes128,
 * as WebCrypto has no ECB and answers each block with a promise (aes.ts's ``webCryptoAes``, about 6x slower per
 * shard in Chromium). A Node app may register node:crypto's ECB instead (aesnode.ts). */
import { ecb } from "@noble/ciphers/aes.js";
import type { AesPrimitive } from "./aes.js";

export const nobleAes: AesPrimitive = {
  name: "noble",
  withKey(key) {
    const copy = key.slice();
    return {
      encryptBlocks(blocks) {
        if (blocks.length % 16) throw new RangeError("AES blocks must be a multiple of 16 bytes");
        return ecb(copy, { disablePadding: true }).encrypt(blocks); // a cipher object encrypts once
      },
    };
  },
};
