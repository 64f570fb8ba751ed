// A fake collector behind an injected fetch: it answers as ldp-telemetry's collector does and records requests.
import { loadMechanism, loadSpec } from "../dist/node.js";
import { b64url } from "../dist/distributed/messages.js";

export const BROWSER = { name: "browser", mechanism: "oue", epsilon: 1.0, domain: ["chrome", "firefox", "safari", "other"] };
export const LOAD = { name: "load_ms", mechanism: "laplace", epsilon: 1.0, range: [0, 5000] };
export const HOME = { name: "home", mechanism: "rappor", rappor: { k: 32, h: 2, m: 8 } };

export const quiet = { warn() {} };

export function fakeCollector(specs = [BROWSER, LOAD, HOME]) {
  const collector = {
    requests: [],
    reports: new Map(),
    answer: null, // (request) => Response to override the next answers
    fetch: async (url, init = {}) => {
      const path = new URL(url).pathname;
      const request = { method: init.method ?? "GET", path, headers: init.headers ?? {}, body: init.body, keepalive: init.keepalive };
      collector.requests.push(request);
      if (collector.answer) {
        const answer = collector.answer(request);
        if (answer) return answer;
      }
      if (path === "/v1/campaigns") {
        const campaigns = specs.map((spec) => ({ name: spec.name, spec, fingerprint: loadSpec(spec).fingerprint }));
        return Response.json({ campaigns });
      }
      if (path === "/v1/reports") {
        const { reports } = JSON.parse(init.body);
        let accepted = 0, duplicate = 0;
        for (const report of reports) {
          if (collector.reports.has(report.report_id)) duplicate += 1;
          else { collector.reports.set(report.report_id, report); accepted += 1; }
        }
        return Response.json({ accepted, duplicate, rejected: 0, errors: [] });
      }
      return new Response("{}", { status: 404 });
    },
  };
  return collector;
}

export function problemResponse(status, headers = {}) {
  return new Response(JSON.stringify({ title: "no", field: "key", detail: "revoked" }),
    { status, headers: { "content-type": "application/problem+json", ...headers } });
}

export const LEADER_URL = "https://leader.test";
export const HELPER_URL = "https://helper.test";

export async function hpkeConfig(id) {
  const pair = await crypto.subtle.generateKey({ name: "X25519" }, true, ["deriveBits"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  return { id, kem_id: 0x20, kdf_id: 1, aead_id: 1, public_key: b64url(raw) };
}

/** A leader listing the distributed campaigns ``specs`` with an aggregators block, and a helper publishing its
 * config (the real ones: tests/sdk_js/test_distributed_e2e.py). */
export async function fakeAggregators(specs) {
  await loadMechanism("prio3");
  const fake = { requests: [], reports: new Map(), helperUp: true, leader: await hpkeConfig(1), helper: await hpkeConfig(2) };
  fake.listedHelper = () => ({ url: HELPER_URL, hpke_config: fake.helper }); // what the leader claims
  fake.fetch = async (url, init = {}) => {
    const { origin, pathname } = new URL(url);
    fake.requests.push({ origin, path: pathname, headers: init.headers ?? {} });
    if (origin === HELPER_URL && pathname === "/v1/hpke_config") {
      if (!fake.helperUp) throw new TypeError("fetch failed");
      return Response.json({ configs: [fake.helper] });
    }
    if (origin === LEADER_URL && pathname === "/v1/campaigns") {
      const aggregators = { leader: { hpke_config: fake.leader }, helper: fake.listedHelper() };
      return Response.json({ campaigns: specs.map((spec) => ({ name: spec.name, spec, aggregators,
        fingerprint: loadSpec(spec).fingerprint })) });
    }
    if (origin === LEADER_URL && pathname === "/v1/reports") {
      const { reports } = JSON.parse(init.body);
      for (const report of reports) fake.reports.set(report.report_id, report);
      return Response.json({ accepted: reports.length, duplicate: 0, rejected: 0, errors: [] });
    }
    return new Response("{}", { status: 404 });
  };
  return fake;
}
