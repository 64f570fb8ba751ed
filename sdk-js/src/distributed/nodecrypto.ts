/** HPKE's primitives on node:crypto (synchronous, no WebCrypto promise per step): what Node's entry point registers
 * for sealing input shares (distributed/hpke.ts holds the one key schedule). Never in the browser bundle. */

import { createCipheriv, createHmac, createPublicKey, diffieHellman, generateKeyPairSync,
  type KeyObject } from "node:crypto";
import type { HpkePrimitives } from "./hpke.js";

// X25519 keys in DER (SubjectPublicKeyInfo): this prefix, then the 32 raw bytes (RFC 8410)
const SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x03, 0x21, 0x00]);
const recipients = new Map<string, KeyObject>();

function recipientKey(raw: Uint8Array): KeyObject {
  const id = Buffer.from(raw).toString("hex");
  let key = recipients.get(id);
  if (key === undefined) {
    if (recipients.size >= 64) recipients.clear();
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
    recipients.set(id, key);
  }
  return key;
}

export const nodeCrypto: HpkePrimitives = {
  agree(recipient) {
    const { publicKey, privateKey } = generateKeyPairSync("x25519"); // the OS CSPRNG, through OpenSSL
    const enc = new Uint8Array(Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url")); // JWK: cheapest export
    return { enc, dh: new Uint8Array(diffieHellman({ privateKey, publicKey: recipientKey(recipient) })) };
  },
  hmac: (key, message) => new Uint8Array(createHmac("sha256", key).update(message).digest()),
  aesGcm(key, nonce, plaintext) {
    const cipher = createCipheriv("aes-128-gcm", key, nonce);
    return new Uint8Array(Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]));
  },
};

