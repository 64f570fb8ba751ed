"""Distributed campaigns recorded in headless Chromium (Debian's chromium, driven by puppeteer-core), served from an
origin both aggregators allow, delivered to a real leader (``serve --role leader``) and helper (``serve --role
helper``) on loopback:

* the example page examples/web/distributed.html loads the SDK's main module, then the distributed chunk with the
  campaign's spec, reads the helper's HPKE config from the helper, shards, seals with WebCrypto and delivers; the
  batch's release then counts every browser's report;
* a distributed quantiles campaign: each page is several devices (one ``Client`` each, its own IndexedDB database),
  which load the quantiles kind and the distributed chunk with the listing, clamp and bucket a latency (counting
  the clamp in the device's state), seal it and deliver; with values sealed by the Python SDK beside them, the
  collection's p50, p95 and p99 intervals cover the truth (test_e2e_quantiles.py's checks).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import numpy as np

from tests.collector.distributed.test_e2e_devices import Aggregators, aggregators, histogram_spec
from tests.collector.distributed.test_e2e_quantiles import collect_and_check_quantiles, quantiles_spec
from tests.collector.helpers import ldp_command
from tests.collector.test_cors_browser import chromium, page_server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web" / "distributed.html"
DEVICES = 3
DOMAIN = ["chrome", "safari", "edge", "firefox", "other"]
CONTEXTS, PAGE_DEVICES, UPLOADED = 3, 40, 1_880  # 120 browser devices, 2,000 values
# A page of PAGE_DEVICES devices (the values in #input): one Client each, its own IndexedDB database, the helper's
# URL as an app ships it; each records one value and flushes; #status: every device's outcome and clamp count
QUANTILES_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>distributed quantiles devices</title>
<pre id="status">starting</pre>
<script type="application/json" id="input">%s</script>
<script type="module">
  import { Client } from "./ldp-telemetry.min.js";

  const { leader, helper, key, campaign, values, device } = JSON.parse(document.getElementById("input").textContent);
  const outcomes = [];
  async function one(index) {
    const client = new Client({ url: leader, apiKey: key, campaigns: [campaign], aggregators: { helper },
      dbName: `device-${device}-${index}`, background: false, timeout: 60 }); // a loaded machine: patient fetches
    try {
      await client.prepare();
      const { status } = await client.record(campaign, values[index]);
      const { sent, remaining, rejected, condition } = await client.flush(120);
      const state = JSON.parse(await client.store.setting(`quantiles:${campaign}`));
      outcomes[index] = { status, sent, remaining, rejected, condition, clamped: state?.clamped ?? 0 };
    } finally {
      await client.close(0);
    }
  }
  let next = 0;
  Promise.all(Array.from({ length: 4 }, async () => { while (next < values.length) await one(next++); }))
    .then(() => JSON.stringify(outcomes), (error) => `error: ${error.stack ?? error}`)
    .then((text) => { document.getElementById("status").textContent = text; });
</script>
"""


def _pages(tmp_path: Path, sdk_js: Path) -> Path:
    "A directory to serve: the browser bundle (the pages are added beside it)"
    pages = tmp_path / "pages"
    pages.mkdir()
    for built in (sdk_js / "dist" / "browser").iterdir():
        shutil.copy(built, pages / built.name)
    return pages


def _public_key(servers: Aggregators, campaign: str) -> str:
    "A public ingest key of the leader for ``campaign`` (what a page ships)"
    return subprocess.run(ldp_command("keys", "create", "--role", "ingest", "--public", "--campaign", campaign,
                                      "--db", str(servers.leader_db)),
                          check=True, capture_output=True, text=True).stdout.strip()


def _drive(sdk_js: Path, page: str, contexts: int) -> dict:
    "scripts/browser-distributed.mjs: ``page`` in ``contexts`` browser contexts; what it saw (no page error)"
    done = subprocess.run([shutil.which("node") or "node", "scripts/browser-distributed.mjs", page, chromium(),
                           str(contexts)], cwd=sdk_js, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[:3000], done.stderr[-3000:])
    seen = json.loads(done.stdout)
    assert not [line for line in seen["console"] if "pageerror" in line], seen["console"]
    return seen


def test_example_page_records_into_a_distributed_campaign_and_the_release_counts_it(tmp_path: Path,
                                                                                     sdk_js: Path) -> None:
    pages = _pages(tmp_path, sdk_js)
    shutil.copy(EXAMPLE, pages / "index.html")
    with page_server(pages) as origin, aggregators(tmp_path, extra=("--cors-origin", origin)) as servers:
        servers.create(histogram_spec("browser_dist", DOMAIN, min_batch=2))
        page = (f"{origin}/index.html?leader={quote(servers.leader_url)}&helper={quote(servers.helper_url)}"
                f"&key={quote(_public_key(servers, 'browser_dist'))}")
        seen = _drive(sdk_js, page, DEVICES)
        assert seen["devices"] == ["queued pending=0 sent=1"] * DEVICES, seen
        # the chunks of distributed campaigns loaded on demand, after the main module
        loaded = seen["loaded"]
        assert loaded.index("/ldp-telemetry.min.js") < loaded.index("/prio3.js") < loaded.index("/vdaf.js")
        batch = servers.end_day()
        release = servers.call("POST", "/v1/campaigns/browser_dist/collect", {"batch": batch})
    assert release["report_count"] == DEVICES and not release["rejected"], release


def test_browser_devices_seal_distributed_quantiles_and_the_quantile_intervals_cover_the_truth(
        tmp_path: Path, sdk_js: Path) -> None:
    generator = np.random.default_rng(3634)
    values = [float(v) for v in generator.lognormal(5.0, 0.8, size=CONTEXTS * PAGE_DEVICES + UPLOADED)]
    values[:4] = [-50.0, 1e9, 2000.0, 0.0]  # a browser device clamps the first two (the bounds are in the range)
    pages = _pages(tmp_path, sdk_js)
    with page_server(pages) as origin, aggregators(tmp_path, extra=("--cors-origin", origin)) as servers:
        spec, block = servers.create(quantiles_spec("latency", min_batch=100))
        public = _public_key(servers, "latency")
        for context in range(CONTEXTS):
            page = {"leader": servers.leader_url, "helper": servers.helper_url, "campaign": "latency", "key": public,
                    "device": context, "values": values[context * PAGE_DEVICES:(context + 1) * PAGE_DEVICES]}
            # a script element's text is not HTML-decoded: only "</" could end it early
            (pages / f"devices-{context}.html").write_text(QUANTILES_PAGE % json.dumps(page).replace("</", "<\\/"))
        seen = _drive(sdk_js, f"{origin}/devices-{{device}}.html", CONTEXTS)
        assert len(seen["devices"]) == CONTEXTS and not [s for s in seen["devices"] if not s.startswith("[")], seen
        outcomes = [outcome for status in seen["devices"] for outcome in json.loads(status)]
        assert len(outcomes) == CONTEXTS * PAGE_DEVICES
        # 120 devices share one public key (PUBLIC_RATE_LIMIT requests a second): a device whose listing was
        # refused (429, Retry-After) holds its value in memory, and its flush waits the refusal out and delivers it
        delivered = {"sent": 1, "remaining": 0, "rejected": 0, "condition": None}
        undelivered = [(i, o) for i, o in enumerate(outcomes)
                       if o["status"] not in ("queued", "held") or {**o, "status": None, "clamped": 0}
                       != {**delivered, "status": None, "clamped": 0}]
        assert not undelivered, undelivered
        assert [o["clamped"] for o in outcomes[:4]] == [1, 1, 0, 0], outcomes[:4]  # on the device, never sent
        # the kind's module, then the distributed chunk, loaded on demand after the main module
        loaded = seen["loaded"]
        assert loaded.index("/ldp-telemetry.min.js") < loaded.index("/quantiles.js") < loaded.index("/prio3.js") \
            < loaded.index("/vdaf.js")
        assert servers.upload(spec, block, values[CONTEXTS * PAGE_DEVICES:]) == UPLOADED
        collect_and_check_quantiles(servers, spec, servers.end_day(), values)
