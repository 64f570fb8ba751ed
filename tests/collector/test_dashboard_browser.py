"""The dashboard in a real browser: headless Chromium (Debian's, through puppeteer-core as the SDK's browser tests
drive it) against a real ``ldp-telemetry serve`` over a real SQLite file.  What each page shows equals the API's
answer; more reports show without a reload; a hostile value renders as text; a refused key shows the message; a
bad spec's error names its field beside it.  Screenshots of each page go to ``LDP_TEST_ARTEFACTS`` (default: the
test's temporary folder); with ``LDP_DASHBOARD_DOCS_IMAGES=1`` they are also copied to docs/img/."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import client_sdk
from collector.storage import open_storage
from tests.collector.helpers import bearer, make_reports, running_server
from tests.collector.test_cors_browser import chromium
from tests.collector.test_storage import group_of
from tests.sdk_js.conftest import SDK_JS, install

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<img src=x onerror=alert(1)>"
SPEC = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "description": HOSTILE,
        "domain": [HOSTILE, "firefox", "safari", "edge"]}
OTHER = {"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 1000]}
DAYS = ["2024-03-01", "2024-03-02", "2024-03-03"]
PAGES = ("dashboard-refused.png", "dashboard-campaigns.png", "dashboard-campaign.png", "dashboard-new-campaign.png")


def _get(url: str, key: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, headers=bearer(key)), timeout=30) as response:
        return json.load(response)


def artefacts(tmp_path: Path) -> Path:
    "Where the screenshots go: LDP_TEST_ARTEFACTS/dashboard, or the test's own folder"
    root = os.environ.get("LDP_TEST_ARTEFACTS")
    folder = Path(root) / "dashboard" if root else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_dashboard_shows_the_apis_numbers_live_and_safely(tmp_path: Path) -> None:
    install()  # puppeteer-core, from sdk-js's lock file
    db = tmp_path / "collector.db"
    rng = random.Random(7)
    with open_storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        campaign, _ = storage.create_campaign(client_sdk.load_spec(SPEC).to_dict(derived=False), "2024-01-01")
        storage.create_campaign(client_sdk.load_spec(OTHER).to_dict(derived=False), "2024-01-01")
        for index, day in enumerate(DAYS):
            storage.insert_reports([group_of(campaign, [rng.choice(SPEC["domain"]) for _ in range(800)], index)], day)
    later = tmp_path / "later.json"
    later.write_text(json.dumps({"reports": make_reports(client_sdk.load_spec(SPEC),
                                                         [rng.choice(SPEC["domain"]) for _ in range(500)], 99)}))
    shots = artefacts(tmp_path)
    with running_server(db, tmp_path / "serve.log", workers=1) as (url, _):
        api_list = _get(f"{url}/v1/dashboard/campaigns", admin)
        api_before = _get(f"{url}/v1/campaigns/browser/panel", admin)
        done = subprocess.run([shutil.which("node") or "node", "scripts/dashboard-drive.mjs", url, chromium(), admin,
                               ingest, str(later), "browser", str(shots)],
                              cwd=SDK_JS, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stdout[:3000], done.stderr[-3000:])
        seen = json.loads(done.stdout)
        api_after = _get(f"{url}/v1/campaigns/browser/panel", admin)
        estimate = _get(f"{url}/v1/campaigns/browser/estimate", admin)

    # the page's own policy: no inline script or style, this origin only
    assert "script-src 'self'" in seen["csp"] and "default-src 'self'" in seen["csp"]
    # a refused key: the message, and the key never in the URL or a cookie
    assert "refused the key" in seen["refused"] and "401" in seen["refused"]
    assert "ldp_" not in seen["urlAfterKey"] + seen["listUrl"] and seen["cookies"] == 0 and seen["localStorage"] == 0
    assert seen["storedKey"]
    # the list: the API's rows, number for number
    by_name = {row[0]: row for row in seen["list"]}
    for row in api_list["campaigns"]:
        shown = by_name[row["name"]]
        assert shown[1:3] == [row["kind"], row["trust"]] and shown[4] == row["state"]
        assert shown[5] == f"{row['reports']:,}" and shown[6] == (row["last_day"] or "-")
    assert by_name["browser"][5] == f"{3 * 800:,}"
    assert seen["keyboardReached"]
    # the campaign: the panel's header, table, central baseline and planner as the API gives them
    before = seen["before"]
    assert before["n"] == str(api_before["n"]) == str(3 * 800)
    assert before["header"] == api_before["header"]
    assert before["table"] == api_before["tables"][0]["rows"]
    assert before["planner"] == api_before["planner"]["rows"]
    assert before["central"][2] == api_before["central"]["ratio_text"]
    assert before["svgs"] == 2 and "day (UTC)" in before["axisLabels"] and "fraction of reports" in before["axisLabels"]
    # the hostile value is text: no element made of it, no script run
    assert any(row[0] == HOSTILE for row in before["table"]) and before["images"] == 0 and not before["alerted"]
    # live: the new reports show without a reload, and equal the API's answer after them
    assert seen["posted"] == 500 and seen["notReloaded"]
    assert seen["after"]["n"] == str(api_after["n"]) == str(estimate["n"]) == str(3 * 800 + 500)
    assert seen["after"]["table"] == api_after["tables"][0]["rows"]
    # a bad spec: the API's problem names the field, shown beside it; the create was confirmed first
    assert seen["specError"]["field"] == "epsilon" and "epsilon" in seen["specError"]["text"]
    assert any("Create campaign bad" in message for message in seen["dialogs"])
    assert not [line for line in seen["console"] if "pageerror" in line or "Content Security Policy" in line]
    for name in PAGES:
        assert (shots / name).stat().st_size > 10_000, name
        if os.environ.get("LDP_DASHBOARD_DOCS_IMAGES") == "1":
            shutil.copy(shots / name, ROOT / "docs" / "img" / name)
