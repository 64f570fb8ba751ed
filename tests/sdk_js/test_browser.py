"""The JavaScript SDK where it runs: headless Chromium (Debian's chromium, driven by puppeteer-core) loads the
example page (examples/web/index.html) from an origin the collector allows, records values with a public ingest
key, reloads the page (the queue in IndexedDB survives) and delivers to a real ``ldp-telemetry serve``; the
collector's estimates then count the reports."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import client_sdk
from collector.storage import open_storage
from tests.collector.helpers import bearer, running_server
from tests.collector.test_cors_browser import chromium, page_server

from .conftest import SDK_JS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web" / "index.html"
DEVICES = 3
SPECS = [
    {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "edge", "other"]},
    {"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 60000]},
    {"name": "pages", "mechanism": "rappor", "rappor": {"k": 32, "h": 2, "m": 4}},
]


def _get(url: str, key: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, headers=bearer(key)), timeout=30) as response:
        return json.load(response)


def test_example_page_records_survives_a_reload_and_delivers(tmp_path: Path, sdk_js: Path) -> None:
    db = tmp_path / "collector.db"
    with open_storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        public, _ = storage.create_key("ingest", "2024-01-01", public=True, campaigns=[s["name"] for s in SPECS])
        for body in SPECS:
            storage.create_campaign(client_sdk.load_spec(body).to_dict(derived=False), "2024-01-01")
    pages = tmp_path / "pages"
    pages.mkdir()
    shutil.copy(EXAMPLE, pages / "index.html")
    for built in (sdk_js / "dist" / "browser").iterdir():
        shutil.copy(built, pages / built.name)
    with page_server(pages) as origin, running_server(db, tmp_path / "serve.log", workers=1,
                                                      extra=("--rate-limit", "0", "--public-rate-limit", "0",
                                                             "--cors-origin", origin)) as (url, _):
        page = f"{origin}/index.html?collector={quote(url)}&key={quote(public)}"
        done = subprocess.run([shutil.which("node") or "node", "scripts/browser-drive.mjs", page, chromium(),
                               str(DEVICES)], cwd=SDK_JS, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stdout[:3000], done.stderr[-3000:])
        seen = json.loads(done.stdout)
        estimates = {name: _get(f"{url}/v1/campaigns/{name}/estimate", admin) for name in ("browser", "load_ms")}
    assert len(seen["devices"]) == DEVICES, seen
    # privacy by default: every first visit (each device, each tab) waited, unchecked and without a client
    assert seen["consentAsked"] == [True] * (DEVICES + 2), seen["consentAsked"]
    for device in seen["devices"]:
        assert device["recorded"] == "queued queued queued", seen  # browser, load_ms (numeric.js), pages (rappor.js)
        assert device["before"]["pending"] == 3 and device["before"]["sent"] == 0, device
        assert device["again"] == "refused_by_policy", device  # one report per campaign per day
        # the reloaded page recorded nothing new (its ledger survived too) and delivered the first visit's queue
        assert device["secondVisit"] == "refused_by_policy refused_by_policy refused_by_policy", device
        assert device["after"]["sent"] == 3 and device["after"]["condition"] is None, device
    # two tabs of a fourth device recording at once: the day's report is taken once per campaign, not twice (which
    # tab takes a campaign's report is a race, decided campaign by campaign in one IndexedDB transaction each)
    per_campaign = list(zip(*(tab.split() for tab in seen["tabs"])))
    assert len(per_campaign) == 3, seen["tabs"]
    assert all(sorted(statuses) == ["queued", "refused_by_policy"] for statuses in per_campaign), seen["tabs"]
    assert estimates["browser"]["n"] == DEVICES and estimates["load_ms"]["n"] == DEVICES, estimates
    with open_storage(db) as storage:
        assert storage.count_reports("pages") == DEVICES
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("collector.db*"))
    assert b"Mozilla/5.0" not in stored and b"HeadlessChrome" not in stored  # no user agent kept anywhere
    assert not [line for line in seen["console"] if "pageerror" in line], seen["console"]
