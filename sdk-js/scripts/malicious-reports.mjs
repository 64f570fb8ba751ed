// A malicious device built from the SDK's own pieces (tests/sdk_js/test_distributed_e2e.py): reports of
// already-encoded, invalid measurements with a valid proof of that encoding (Prio3.shardEncoded skips the device's
// checks), a report whose proof has one byte flipped before sealing, and an honest report moved to another report id
// after sealing. stdin: {"spec": the listed spec with its aggregators block, "batch", "measurements": [[...]]};
// stdout: {"invalid": [reports], "flipped": report, "moved": report}.
import { randomUUID } from "node:crypto";
import { loadMechanism, loadSpec } from "../dist/node.js";
import { seal } from "../dist/distributed/hpke.js";
import { HELPER, LEADER, b64url, fromB64url, inputShareInfo, reportNonce } from "../dist/distributed/messages.js";
import { ctxFor, prio3For } from "../dist/vdaf/index.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { spec: source, batch, measurements } = JSON.parse(input);
await loadMechanism("prio3");
const spec = loadSpec(source, true); // the listing's item: the spec with its aggregators block
const vdaf = prio3For(spec.prio3);
const configs = [source.aggregators.leader.hpke_config, source.aggregators.helper.hpke_config];

/** A report of ``shards`` sealed as a device seals (for ``sealedId``; sent under ``reportId``). */
async function report(reportId, { publicShare, inputShares }, sealedId = reportId) {
  const payload = { public_share: b64url(publicShare), batch };
  for (const [index, key, role] of [[0, "leader_share", LEADER], [1, "helper_share", HELPER]]) {
    const info = inputShareInfo(spec.name, spec.fingerprint, sealedId, role, publicShare, batch);
    const sealed = await seal(fromB64url(configs[index].public_key), inputShares[index], info);
    payload[key] = { config_id: configs[index].id, ciphertext: b64url(sealed) };
  }
  return { report_id: reportId, campaign: spec.name, fingerprint: spec.fingerprint, payload };
}

const rand = () => crypto.getRandomValues(new Uint8Array(vdaf.randSize));
const shardEncoded = (id, meas) => vdaf.shardEncoded(ctxFor(spec.fingerprint), meas.map(BigInt), reportNonce(id), rand());
const invalid = [];
for (const meas of measurements) {
  const id = randomUUID();
  invalid.push(await report(id, shardEncoded(id, meas)));
}
const flippedId = randomUUID();
const honest = vdaf.shard(ctxFor(spec.fingerprint), 0, reportNonce(flippedId), rand());
const leaderShare = honest.inputShares[0].slice();
leaderShare[leaderShare.length - 32 - 16] ^= 1; // the low byte of the proof's last element (the 32-byte blind follows)
const flipped = await report(flippedId, { publicShare: honest.publicShare, inputShares: [leaderShare, honest.inputShares[1]] });
const sealedFor = randomUUID();
const moved = await report(randomUUID(), vdaf.shard(ctxFor(spec.fingerprint), 1, reportNonce(sealedFor), rand()), sealedFor);
process.stdout.write(JSON.stringify({ invalid, flipped, moved }));
