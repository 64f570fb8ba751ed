// What record() answers for a campaign the collector closed or does not have: the steps of
// tests/client_sdk/test_closed_campaigns.py, with the same statuses (held before the device has heard of the
// campaign, then campaign_closed, kept in the state directory across a restart; an unknown one held again).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "../dist/node.js";
import { BROWSER, fakeCollector, quiet } from "./helpers.mjs";

function client(stateDir, fetch, extra = {}) {
  return new Client({ url: "http://collector.test", apiKey: "k", stateDir, fetch, background: false, logger: quiet,
    backoffBase: 0.01, backoffCap: 0.05, ...extra });
}

function closedBrowser() {
  const collector = fakeCollector([BROWSER]);
  const listing = collector.fetch;
  collector.fetch = async (url, init = {}) => {
    const response = await listing(url, init);
    if (new URL(url).pathname !== "/v1/campaigns") return response;
    const body = await response.json();
    body.campaigns[0].closed = true;
    return Response.json(body);
  };
  return collector;
}

const offline = async () => { throw new TypeError("fetch failed"); };

test("a closed campaign answers campaign_closed once heard of, and after a restart (offline)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-js-closed-"));
  try {
    const c = client(dir, closedBrowser().fetch);
    assert.equal((await c.record("browser", "chrome")).status, "held"); // nothing known yet
    assert.equal((await c.record("ghost", "x")).status, "held");
    await c.prepare();
    assert.equal((await c.record("browser", "chrome")).status, "campaign_closed");
    assert.equal((await c.record("ghost", "x")).status, "unknown_campaign");
    assert.equal((await c.status()).pending, 0);
    await c.close();

    const restarted = client(dir, offline);
    assert.equal((await restarted.record("browser", "chrome")).status, "campaign_closed"); // from the state file
    assert.equal((await restarted.record("ghost", "x")).status, "held"); // may have been created meanwhile
    assert.equal((await restarted.status()).pending, 0);
    await restarted.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a campaign closed after its spec was cached answers campaign_closed after the listing", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-js-closed-"));
  try {
    const c = client(dir, fakeCollector([BROWSER]).fetch, { campaigns: ["browser"] });
    await c.prepare();
    assert.equal((await c.record("browser", "chrome")).status, "queued");
    await c.close(0);
    const restarted = client(dir, closedBrowser().fetch, { campaigns: ["browser"] });
    await restarted.prepare();
    assert.equal((await restarted.record("browser", "chrome")).status, "campaign_closed");
    await restarted.close(0);
    const again = client(dir, offline, { campaigns: ["browser"] });
    assert.equal((await again.record("browser", "chrome")).status, "campaign_closed"); // its cached spec is gone
    await again.close(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
