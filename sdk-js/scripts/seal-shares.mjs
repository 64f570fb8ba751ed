// Seal plaintexts with the SDK's HPKE (dist/distributed/hpke.js), the info built by the SDK from each case's
// metadata: the interoperability test (tests/sdk_js/test_distributed_interop.py) opens them with the aggregators'
// Python code. stdin: {"public_key": b64url, "cases": [{campaign, fingerprint, report_id, role, public_share,
// batch, plaintext}]} (bytes as base64url); stdout: the sealed shares, base64url. With --webcrypto, the browsers'
// primitives (WebCrypto) instead of node:crypto's.
import "../dist/node.js";
import { registerHpkePrimitives, seal, webCrypto } from "../dist/distributed/hpke.js";
import { b64url, fromB64url, inputShareInfo } from "../dist/distributed/messages.js";

if (process.argv.includes("--webcrypto")) registerHpkePrimitives(webCrypto);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { public_key: publicKey, cases } = JSON.parse(input);
const sealed = [];
for (const c of cases) {
  const info = inputShareInfo(c.campaign, c.fingerprint, c.report_id, c.role, fromB64url(c.public_share), c.batch);
  sealed.push(b64url(await seal(fromB64url(publicKey), fromB64url(c.plaintext), info)));
}
process.stdout.write(JSON.stringify(sealed));
