/** The device's half of the distributed messages (client_sdk/distributed_messages.py and the binding in
 * client_sdk/distributed.py): base64url, the Prio3 context and nonce, and each input share's HPKE info. */

import { fromHex } from "../hash.js";
import { concat } from "./hpke.js";

export const INFO_PREFIX = "ldp-telemetry input share";
export const BATCH_INFO_PREFIX = "ldp-telemetry input share for a batch"; // a batch-bound info never equals an unbound one
const CLIENT = 0x01; // DAP's Role: the sender of an input share
export const LEADER = 0x02;
export const HELPER = 0x03;

const encoder = new TextEncoder();

/** base64url without padding (RFC 4648 section 5). */
export function b64url(data: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < data.length; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Strict base64url without padding (canonical too); throws RangeError otherwise. */
export function fromB64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw new RangeError("must be base64url without padding");
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const out = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  if (b64url(out) !== text) throw new RangeError("must be canonical base64url without padding");
  return out;
}

/** The Prio3 nonce of a report: the 16 bytes of its id (a UUID in canonical lower-case text). */
export function reportNonce(reportId: string): Uint8Array {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(reportId)) {
    throw new RangeError(`report_id: must be a UUID in canonical lower-case text, got ${reportId}`);
  }
  return fromHex(reportId.replace(/-/g, ""));
}

/** The batch of ``seconds`` (dividing a day: a spec's ``window``) that a report made at ``now`` (seconds since the
 * epoch) is for: its UTC day YYYY-MM-DD for a day's batch, else the batch's start YYYY-MM-DDTHH:MMZ
 * (``client_sdk.clock.batch_at``). */
export const batchOf = (now: number, seconds = 86_400): string => {
  const start = new Date(Math.floor(now / seconds) * seconds * 1000).toISOString();
  return seconds === 86_400 ? start.slice(0, 10) : `${start.slice(0, 16)}Z`;
};

const lengthPrefixed = (data: Uint8Array): Uint8Array => {
  const out = new Uint8Array(4 + data.length);
  new DataView(out.buffer).setUint32(0, data.length);
  out.set(data, 4);
  return out;
};

/** The HPKE info of one input share (``client_sdk.distributed.input_share_info``): prefix || 0x01 || role ||
 * the length-prefixed campaign name, the 16 fingerprint bytes, the 16 report-id bytes, the length-prefixed public
 * share and, for a report naming its batch, the length-prefixed batch. */
export function inputShareInfo(campaign: string, fingerprint: string, reportId: string, role: number,
  publicShare: Uint8Array, batch: string | null): Uint8Array {
  const canonical = concat(lengthPrefixed(encoder.encode(campaign)), fromHex(fingerprint), reportNonce(reportId),
    lengthPrefixed(publicShare));
  const prefix = encoder.encode(batch === null ? INFO_PREFIX : BATCH_INFO_PREFIX);
  const tail = batch === null ? new Uint8Array(0) : lengthPrefixed(encoder.encode(batch));
  return concat(prefix, Uint8Array.of(CLIENT, role), canonical, tail);
}
