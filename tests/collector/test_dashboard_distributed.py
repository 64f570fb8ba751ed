"""A distributed campaign's dashboard page against a real leader and helper on loopback (issue 38), in headless
Chromium: the page lists the batches with their states as the leader's progress route gives them; its collect
button, once confirmed, collects the batch (both aggregators add their noise) and the page shows the release
without a reload: the batch collected, the estimate from it.  Screenshots go to ``LDP_TEST_ARTEFACTS``; with
``LDP_DASHBOARD_DOCS_IMAGES=1`` the page after the release is copied to docs/img/dashboard-distributed.png."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from demo.devices import report_distributed
from demo.scenario import DISTRIBUTED_CAMPAIGNS
from demo.servers import create_campaigns, running_aggregators
from tests.collector.helpers import bearer
from tests.collector.test_cors_browser import chromium
from tests.collector.test_dashboard_browser import artefacts
from tests.sdk_js.conftest import SDK_JS, install

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN = DISTRIBUTED_CAMPAIGNS[0]
USERS = 30  # above the campaign's min_batch (20)


def _get(url: str, key: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, headers=bearer(key)), timeout=60) as response:
        return json.load(response)


def test_the_distributed_page_shows_batches_and_collects_one_on_confirmation(tmp_path: Path) -> None:
    install()  # puppeteer-core, from sdk-js's lock file
    name = CAMPAIGN.spec["name"]
    assert USERS > CAMPAIGN.spec["min_batch"]
    domain = CAMPAIGN.spec["domain"]
    population = {name: [domain[i % len(domain)] for i in range(USERS)]}
    shots = artefacts(tmp_path)
    with running_aggregators(tmp_path) as aggregators:
        created = create_campaigns(aggregators.url, aggregators.admin, [CAMPAIGN])
        report_distributed(aggregators.url, aggregators.ingest, created, population,
                           helper_url=aggregators.helper_url)
        day = aggregators.end_day()  # the leader and helper again, their clocks past the day's collection grace
        url, admin = aggregators.url, aggregators.admin
        progress = _get(f"{url}/v1/campaigns/{name}/progress", admin)
        done = subprocess.run([shutil.which("node") or "node", "scripts/dashboard-distributed.mjs", url, chromium(),
                               admin, name, day, str(shots)], cwd=SDK_JS, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stdout[:3000], done.stderr[-3000:])
        seen = json.loads(done.stdout)
        after = _get(f"{url}/v1/campaigns/{name}/progress", admin)
        releases = _get(f"{url}/v1/campaigns/{name}/releases", admin)["releases"]
        panel = _get(f"{url}/v1/campaigns/{name}/panel", admin)

    # before: the batches as the leader's progress route lists them, no estimate yet
    columns = seen["before"]["columns"]
    assert columns[:2] == ["batch", "state"] and columns[-1] == "action"
    assert [row[:2] for row in seen["before"]["rows"]] == [[b["batch"], b["state"]] for b in progress["batches"]]
    shown = {row[0]: dict(zip(columns, row)) for row in seen["before"]["rows"]}
    assert shown[day]["accepted"] == str(USERS) and shown[day]["state"] != "collected"
    assert seen["before"]["n"] is None and seen["before"]["noEstimate"]
    # the collect button asked first, then collected: the leader holds the release and the page shows it
    assert seen["clicked"] and any(f"Collect batch {day}?" in message for message in seen["dialogs"])
    assert [release["batch"] for release in releases] == [day]
    assert {b["batch"]: b["state"] for b in after["batches"]}[day] == "collected"
    assert [row[:2] for row in seen["after"]["rows"]] == [[b["batch"], b["state"]] for b in after["batches"]]
    # a collected batch offers no second collection; the others keep their button
    assert all((row[-1] == "-") == (row[1] in ("collected", "collecting")) for row in seen["after"]["rows"])
    assert seen["after"]["n"] == str(panel["n"]) and seen["after"]["header"] == panel["header"]
    assert seen["notReloaded"] and not [line for line in seen["console"] if "pageerror" in line]
    for shot in ("dashboard-distributed-batches.png", "dashboard-distributed.png"):
        assert (shots / shot).stat().st_size > 10_000, shot
    if os.environ.get("LDP_DASHBOARD_DOCS_IMAGES") == "1":
        shutil.copy(shots / "dashboard-distributed.png", ROOT / "docs" / "img" / "dashboard-distributed.png")
