// How the SDK reads the collector's answers: the rules of client_sdk/runtime/answers.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { acknowledgement, conditionFor, retryAfter } from "../dist/answers.js";

test("Retry-After in delta-seconds and in HTTP-date form; anything else is ignored", () => {
  const now = Date.parse("2026-01-01T00:00:00Z") / 1000;
  assert.equal(retryAfter("120", now), 120);
  assert.equal(retryAfter(" 2.5 ", now), 2.5);
  assert.equal(retryAfter("Thu, 01 Jan 2026 00:01:00 GMT", now), 60);
  assert.equal(retryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now), 0, "a date in the past: at once");
  for (const bad of ["soon", "-5", "Thu, 01 Jan 2026 00:01:00", ""]) assert.equal(retryAfter(bad, now), null, bad);
  assert.equal(retryAfter(null, now), null);
});

test("conditions by status, as the Python SDK names them", () => {
  const expected = { 401: "unauthorized", 403: "forbidden", 404: "not_found", 413: "too_large", 429: "server_unavailable",
    408: "server_unavailable", 503: "server_unavailable", 507: "server_unavailable", 301: "redirected", 400: "refused" };
  for (const [status, condition] of Object.entries(expected)) assert.equal(conditionFor(Number(status)), condition);
});

test("an answer acknowledges the batch only when its counts add up and its rejections name the batch's reports", () => {
  const ids = ["a", "b"];
  assert.deepEqual(acknowledgement({ accepted: 1, duplicate: 1, rejected: 0, errors: [] }, ids), new Map());
  assert.deepEqual(acknowledgement({ accepted: 1, duplicate: 0, rejected: 1, errors: [{ report_id: "b", field: "payload", reason: "x" }] }, ids),
    new Map([["b", "payload: x"]]));
  for (const bad of [null, "ok", { accepted: 3, duplicate: 0, rejected: 0, errors: [] },
    { accepted: 1, duplicate: 0, rejected: 1, errors: [{ report_id: "zz" }] }, { accepted: 2, duplicate: 0, rejected: 0 }]) {
    assert.equal(typeof acknowledgement(bad, ids), "string", JSON.stringify(bad));
  }
});
