/** AES-128-ECB from node:crypto (OpenSSL), synchronous: what Node registers for XofFixedKeyAes128 (aes.ts,
 * ``registerAes(nodeAes)``). Never in a browser bundle. */
import { createCipheriv } from "node:crypto";
import type { AesPrimitive } from "./aes.js";

export const nodeAes: AesPrimitive = {
  name: "node:crypto",
  withKey(key) {
    const cipher = createCipheriv("aes-128-ecb", key, null);
    cipher.setAutoPadding(false); // ECB without padding returns every whole block at once from update()
    return {
      encryptBlocks(blocks) {
        if (blocks.length % 16) throw new RangeError("AES blocks must be a multiple of 16 bytes");
        const out = cipher.update(blocks);
        return new Uint8Array(out.buffer, out.byteOffset, out.length);
      },
    };
  },
};
