/** HPKE (RFC 9180), base mode, single shot: seal an input share to an aggregator's X25519 public key with
 * DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-128-GCM, the one suite the aggregators accept
 * (client_sdk/vdaf/hpke.py). X25519 and AES-GCM run on WebCrypto (Node >= 20, Chromium >= 133, Firefox >= 130,
 * Safari >= 17), HKDF on the SDK's own SHA-256 (sha256.ts), so no crypto library ships with the SDK. The ephemeral key is drawn by
 * WebCrypto from the OS CSPRNG; ``info`` binds the report's metadata, the AEAD's AAD is empty (as the Python SDK). */

import { LDPError } from "../errors.js";
import { hmacSha256 } from "../hmac.js";

export const KEM_X25519_HKDF_SHA256 = 0x0020;
export const KDF_HKDF_SHA256 = 0x0001;
export const AEAD_AES_128_GCM = 0x0001;
export const PUBLIC_KEY_SIZE = 32;

/** An aggregator's published HPKE configuration (DAP's HpkeConfig), as ``GET /v1/hpke_config`` lists it. */
export interface HpkeConfig {
  id: number;
  kem_id: number;
  kdf_id: number;
  aead_id: number;
  /** The X25519 public key, base64url without padding (as published). */
  public_key: string;
}

const encoder = new TextEncoder();
const bytes = (text: string): Uint8Array => encoder.encode(text);
const i2osp = (value: number, length: number): Uint8Array =>
  Uint8Array.from({ length }, (_, i) => (value >>> (8 * (length - 1 - i))) & 0xff);

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const subtle = (): SubtleCrypto => globalThis.crypto.subtle;
const buffer = (data: Uint8Array): BufferSource => data as BufferSource;

/** The primitives under HPKE: an ephemeral X25519 agreement, HMAC-SHA256 (HKDF) and AES-128-GCM. The default is
 * WebCrypto (browsers; HKDF's HMACs on the SDK's synchronous SHA-256, cheaper than a WebCrypto call each); Node's
 * entry point registers node:crypto's synchronous ones (distributed/nodecrypto.ts), a third of the cost per report
 * (benchmarks/distributed_seal.py). Both feed the one key schedule below. */
export interface HpkePrimitives {
  /** A fresh ephemeral key pair's public key (``enc``, 32 bytes) and its X25519 secret with ``recipient``. */
  agree(recipient: Uint8Array): Promise<{ enc: Uint8Array; dh: Uint8Array }> | { enc: Uint8Array; dh: Uint8Array };
  hmac(key: Uint8Array, message: Uint8Array): Uint8Array;
  /** AES-128-GCM ciphertext || tag, empty AAD. */
  aesGcm(key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array> | Uint8Array;
}

const recipients = new Map<string, Promise<CryptoKey>>(); // a device seals every report to the same two keys

function recipientKey(publicKey: Uint8Array): Promise<CryptoKey> {
  const id = String.fromCharCode(...publicKey);
  let key = recipients.get(id);
  if (key === undefined) {
    if (recipients.size >= 64) recipients.clear();
    key = subtle().importKey("raw", buffer(publicKey), { name: "X25519" }, false, []);
    recipients.set(id, key);
    key.catch(() => recipients.delete(id));
  }
  return key;
}

export const webCrypto: HpkePrimitives = {
  async agree(recipient) {
    const ephemeral = await subtle().generateKey({ name: "X25519" }, true, ["deriveBits"]) as CryptoKeyPair;
    const dh = new Uint8Array(await subtle().deriveBits({ name: "X25519", public: await recipientKey(recipient) } as
      unknown as AlgorithmIdentifier, ephemeral.privateKey, 256));
    return { enc: new Uint8Array(await subtle().exportKey("raw", ephemeral.publicKey)), dh };
  },
  hmac: hmacSha256,
  async aesGcm(key, nonce, plaintext) {
    const aesKey = await subtle().importKey("raw", buffer(key), { name: "AES-GCM" }, false, ["encrypt"]);
    return new Uint8Array(await subtle().encrypt({ name: "AES-GCM", iv: buffer(nonce) }, aesKey, buffer(plaintext)));
  },
};
let primitives = webCrypto;

export function registerHpkePrimitives(chosen: HpkePrimitives): void {
  primitives = chosen;
}

const hmac = (key: Uint8Array, message: Uint8Array): Uint8Array => primitives.hmac(key, message);

const VERSION = bytes("HPKE-v1");

/** RFC 9180 section 4: LabeledExtract and LabeledExpand over HKDF-SHA256 (outputs of at most 32 bytes). */
const labeledExtract = (suite: Uint8Array, salt: Uint8Array, label: string, ikm: Uint8Array): Uint8Array =>
  hmac(salt, concat(VERSION, suite, bytes(label), ikm));

function labeledExpand(suite: Uint8Array, prk: Uint8Array, label: string, info: Uint8Array, length: number): Uint8Array {
  const labeled = concat(i2osp(length, 2), VERSION, suite, bytes(label), info);
  return hmac(prk, concat(labeled, Uint8Array.of(1))).slice(0, length); // one HKDF-Expand block
}

const KEM_SUITE = concat(bytes("KEM"), i2osp(KEM_X25519_HKDF_SHA256, 2));
const HPKE_SUITE = concat(bytes("HPKE"), i2osp(KEM_X25519_HKDF_SHA256, 2), i2osp(KDF_HKDF_SHA256, 2),
  i2osp(AEAD_AES_128_GCM, 2));
const EMPTY = new Uint8Array(0);

/** A refused public key (low order: the shared secret would be all zero) or an unsupported config. */
export class HpkeError extends LDPError {}

/** Check a published config (the one suite, a 32-byte key); throws HpkeError naming the field. */
export function checkedConfig(config: unknown, decode: (text: string) => Uint8Array): HpkeConfig {
  const c = config as Record<string, unknown> | null;
  if (!c || typeof c !== "object") throw new HpkeError("hpke_config: must be a JSON object");
  const extra = Object.keys(c).filter((k) => !["id", "kem_id", "kdf_id", "aead_id", "public_key"].includes(k));
  if (extra.length) throw new HpkeError(`${extra.sort()[0]}: unknown field of an HPKE config`);
  if (!(Number.isInteger(c.id) && (c.id as number) >= 0 && (c.id as number) <= 255)) {
    throw new HpkeError("id: must be an integer in [0, 255]");
  }
  for (const [field, supported] of [["kem_id", KEM_X25519_HKDF_SHA256], ["kdf_id", KDF_HKDF_SHA256],
    ["aead_id", AEAD_AES_128_GCM]] as const) {
    if (c[field] !== supported) throw new HpkeError(`${field}: unsupported HPKE algorithm (only X25519 / HKDF-SHA256 / AES-128-GCM)`);
  }
  let key: Uint8Array | null = null;
  try {
    key = typeof c.public_key === "string" ? decode(c.public_key) : null;
  } catch {
    key = null;
  }
  if (key === null || key.length !== PUBLIC_KEY_SIZE) throw new HpkeError("public_key: must be 32 bytes (an X25519 public key)");
  return c as unknown as HpkeConfig;
}

/** ``enc || ciphertext`` of ``plaintext`` to ``publicKey`` (32 raw bytes) with ``info`` bound (RFC 9180 SealBase). */
export async function seal(publicKey: Uint8Array, plaintext: Uint8Array, info: Uint8Array): Promise<Uint8Array> {
  let agreed: { enc: Uint8Array; dh: Uint8Array };
  try {
    agreed = await primitives.agree(publicKey);
  } catch (error) {
    throw new HpkeError(`cannot seal to this public key: ${error}`);
  }
  const { enc, dh } = agreed;
  if (dh.every((b) => b === 0)) throw new HpkeError("cannot seal to this public key: a low-order point");
  // the KEM: ExtractAndExpand(dh, enc || pkR)
  const eaePrk = labeledExtract(KEM_SUITE, EMPTY, "eae_prk", dh);
  const shared = labeledExpand(KEM_SUITE, eaePrk, "shared_secret", concat(enc, publicKey), 32);
  // the key schedule, mode_base (0x00), no PSK
  const context = concat(Uint8Array.of(0), labeledExtract(HPKE_SUITE, EMPTY, "psk_id_hash", EMPTY),
    labeledExtract(HPKE_SUITE, EMPTY, "info_hash", info));
  const secret = labeledExtract(HPKE_SUITE, shared, "secret", EMPTY);
  const key = labeledExpand(HPKE_SUITE, secret, "key", context, 16);
  const nonce = labeledExpand(HPKE_SUITE, secret, "base_nonce", context, 12); // sequence number 0
  return concat(enc, await primitives.aesGcm(key, nonce, plaintext));
}
