"""A distributed campaign recorded in headless Chromium (Debian's chromium, driven by puppeteer-core): the example
page examples/web/distributed.html, served from an origin both aggregators allow, loads the SDK's main module,
then the distributed chunk with the campaign's spec, reads the helper's HPKE config from the helper, shards, seals
with WebCrypto and delivers to a real leader (``serve --role leader``) and helper (``serve --role helper``) on
loopback; the batch's release then counts every browser's report."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

from tests.collector.distributed.test_e2e_devices import aggregators, histogram_spec
from tests.collector.helpers import ldp_command
from tests.collector.test_cors_browser import chromium, page_server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web" / "distributed.html"
DEVICES = 3
DOMAIN = ["chrome", "safari", "edge", "firefox", "other"]


def test_example_page_records_into_a_distributed_campaign_and_the_release_counts_it(tmp_path: Path,
                                                                                     sdk_js: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    shutil.copy(EXAMPLE, pages / "index.html")
    for built in (sdk_js / "dist" / "browser").iterdir():
        shutil.copy(built, pages / built.name)
    with page_server(pages) as origin, aggregators(tmp_path, extra=("--cors-origin", origin)) as servers:
        servers.create(histogram_spec("browser_dist", DOMAIN, min_batch=2))
        public = subprocess.run(ldp_command("keys", "create", "--role", "ingest", "--public", "--campaign",
                                            "browser_dist", "--db", str(servers.leader_db)),
                                check=True, capture_output=True, text=True).stdout.strip()
        page = (f"{origin}/index.html?leader={quote(servers.leader_url)}&helper={quote(servers.helper_url)}"
                f"&key={quote(public)}")
        done = subprocess.run([shutil.which("node") or "node", "scripts/browser-distributed.mjs", page, chromium(),
                               str(DEVICES)], cwd=sdk_js, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stdout[:3000], done.stderr[-3000:])
        seen = json.loads(done.stdout)
        assert seen["devices"] == ["queued pending=0 sent=1"] * DEVICES, seen
        assert not [line for line in seen["console"] if "pageerror" in line], seen["console"]
        # the chunks of distributed campaigns loaded on demand, after the main module
        loaded = seen["loaded"]
        assert loaded.index("/ldp-telemetry.min.js") < loaded.index("/prio3.js") < loaded.index("/vdaf.js")
        batch = servers.end_day()
        release = servers.call("POST", "/v1/campaigns/browser_dist/collect", {"batch": batch})
    assert release["report_count"] == DEVICES and not release["rejected"], release
