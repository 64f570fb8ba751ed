// A fake collector behind an injected fetch: it answers as ldp-telemetry's collector does and records requests.
import { loadSpec } from "../dist/node.js";

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
