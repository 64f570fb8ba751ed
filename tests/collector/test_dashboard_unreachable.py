"""The dashboard when its collector goes away (issue 38), in headless Chromium against a real ``serve``: a campaign's
page is open (its rejected reports by reason as the API counts them); the collector stops: the page says it is
unreachable and keeps retrying; a collector starts on the same port: the page shows the campaign again without a
reload and without asking for the key again.  The unreachable page's screenshot goes to ``LDP_TEST_ARTEFACTS``."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import client_sdk
from collector.storage import open_storage
from tests.collector.helpers import bearer, free_port, make_reports, running_server
from tests.collector.test_cors_browser import chromium
from tests.collector.test_dashboard_browser import artefacts
from tests.sdk_js.conftest import SDK_JS, install

SPEC = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "edge"]}


def _post(url: str, key: str, reports: list[dict]) -> dict:
    import urllib.request

    request = urllib.request.Request(f"{url}/v1/reports", data=json.dumps({"reports": reports}).encode(),
                                     headers={**bearer(key), "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def _get(url: str, key: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, headers=bearer(key)), timeout=30) as response:
        return json.load(response)


def _step(driver: subprocess.Popen, name: str) -> dict:
    "The driver's next JSON line; it must be step ``name``"
    assert driver.stdout is not None
    line = driver.stdout.readline()
    assert line, f"the driver ended before step {name}: {driver.stderr.read() if driver.stderr else ''}"
    seen = json.loads(line)
    assert seen["step"] in (name, "done") and "error" not in seen, seen
    return seen


def test_the_page_says_the_collector_is_unreachable_and_recovers_on_its_return(tmp_path: Path) -> None:
    install()  # puppeteer-core, from sdk-js's lock file
    db = tmp_path / "collector.db"
    spec = client_sdk.load_spec(SPEC)
    with open_storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        storage.create_campaign(spec.to_dict(derived=False), "2024-01-01")
    port, shots = free_port(), artefacts(tmp_path)
    bad_shape = [{"report_id": str(uuid.uuid4()), "campaign": "browser", "fingerprint": spec.fingerprint,
                  "payload": "not bits"} for _ in range(3)]
    bad_length = [{**report, "report_id": str(uuid.uuid4())} for report in bad_shape[:2]]
    for report in bad_length:
        report["payload"] = [0, 1]  # OUE takes one bit per domain value: 4 here
    with running_server(db, tmp_path / "serve.log", port=port, workers=1) as (url, server):
        answer = _post(url, ingest, [*make_reports(spec, ["chrome"] * 20), *bad_shape, *bad_length])
        assert (answer["accepted"], answer["rejected"]) == (20, 5)
        counted = _get(f"{url}/v1/campaigns/browser/panel", admin)["rejections"]
        assert sum(counted.values()) == 5
        driver = subprocess.Popen([shutil.which("node") or "node", "scripts/dashboard-unreachable.mjs", url,
                                   chromium(), admin, "browser", str(shots)],
                                  cwd=SDK_JS, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        try:
            opened = _step(driver, "open")
        except BaseException:
            driver.kill()
            raise
    assert driver.stdin is not None
    try:
        # the page's rejections table: the API's counts, reason by reason
        assert {reason: int(n.replace(",", "")) for reason, n in opened["rejections"]} == counted
        driver.stdin.write("stopped\n")  # running_server has stopped the collector (SIGTERM, waited for)
        driver.stdin.flush()
        unreachable = _step(driver, "unreachable")
        assert "unreachable" in unreachable["text"] and "retrying" in unreachable["text"]
        with running_server(db, tmp_path / "serve-again.log", port=port, workers=1):
            driver.stdin.write("back\n")
            driver.stdin.flush()
            done = _step(driver, "done")
            code = driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=10)
        for stream in (driver.stdin, driver.stdout, driver.stderr):
            if stream is not None:
                stream.close()
    assert code == 0, done
    assert done["recovered"].startswith("updated") and done["n"] == "20"
    assert done["notReloaded"] and done["loginHidden"]  # the same page, the key kept in the tab
    assert not [line for line in done["console"] if "pageerror" in line]
    assert (shots / "dashboard-unreachable.png").stat().st_size > 10_000
