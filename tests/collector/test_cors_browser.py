"""CORS in a real browser: headless Chromium loads a page from an allowed origin and one from another origin,
and each page calls a real ``ldp-telemetry serve`` with fetch()."""

from __future__ import annotations

import functools
import html
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest

import client_sdk
from collector.storage import open_storage

from .helpers import CATEGORICAL, loopback_http_server, make_reports, running_server

OTHER = {**CATEGORICAL, "name": "secret_survey"}
# What the page does: each call's status and JSON body, or the error fetch() raised (a CORS refusal is a TypeError)
SCRIPT = """
const [collector, key, admin, reports] = JSON.parse(document.getElementById("input").textContent);
const out = {};
async function call(name, path, init) {
  try {
    const response = await fetch(collector + path, init);
    out[name] = {status: response.status, body: await response.json()};
  } catch (error) {
    out[name] = {error: error.name};
  }
}
(async () => {
  const auth = {Authorization: "Bearer " + key};
  await call("listing", "/v1/campaigns", {headers: auth});
  await call("report", "/v1/reports", {method: "POST", headers: {...auth, "Content-Type": "application/json"},
                                      body: JSON.stringify({reports})});
  await call("other", "/v1/campaigns/secret_survey", {headers: auth});
  await call("estimate", "/v1/campaigns/browser/estimate", {headers: {Authorization: "Bearer " + admin}});
  document.getElementById("out").textContent = JSON.stringify(out);
})();
"""


def chromium() -> str:
    "Debian's chromium; fails (never skips) when it is missing: scripts/test installs it"
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is not installed: apt-get install chromium (the README's test command does)")
    return found


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def page_server(directory: Path) -> Iterator[str]:
    "A static file server on loopback: the page's origin"
    handler = functools.partial(QuietHandler, directory=str(directory))
    with loopback_http_server(handler) as base:
        yield base


def run_page(tmp_path: Path, origin: str, name: str) -> dict:
    """Load ``origin/name`` in headless Chromium and return what its script found. The virtual time budget holds
    while requests are pending, so the page finishes however loaded the machine is."""
    done = subprocess.run([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--enable-logging=stderr", f"--user-data-dir={tmp_path / ('profile-' + name)}",
                           "--virtual-time-budget=30000", "--dump-dom", f"{origin}/{name}"],
                          capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found is not None and found.group(1) != "pending", (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(html.unescape(found.group(1)))


def write_page(directory: Path, name: str, collector: str, key: str, admin: str, reports: list[dict]) -> None:
    data = json.dumps([collector, key, admin, reports]).replace("</", "<\\/")  # script text is not HTML-decoded
    (directory / name).write_text(f'<!doctype html><html><body><script type="application/json" id="input">{data}'
                                  f'</script><pre id="out">pending</pre><script>{SCRIPT}</script></body></html>')


def test_chromium_lets_the_allowed_page_report_and_blocks_the_rest(tmp_path):
    db = tmp_path / "collector.db"
    with open_storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        public, _ = storage.create_key("ingest", "2024-01-01", public=True, campaigns=["browser"])
        specs = {}
        for body in (CATEGORICAL, OTHER):
            campaign, _ = storage.create_campaign(body, "2024-01-01")
            specs[campaign.name] = client_sdk.load_spec(campaign.spec.to_dict())
    pages = tmp_path / "pages"
    pages.mkdir()
    with page_server(pages) as allowed, page_server(pages) as other, \
            running_server(db, tmp_path / "serve.log", workers=1,
                           extra=("--rate-limit", "0", "--cors-origin", allowed)) as (url, _):
        write_page(pages, "allowed.html", url, public, admin, make_reports(specs["browser"], ["chrome"], seed=1))
        write_page(pages, "other.html", url, public, admin, make_reports(specs["browser"], ["edge"], seed=2))
        mine = run_page(tmp_path, allowed, "allowed.html")
        theirs = run_page(tmp_path, other, "other.html")
    assert mine["listing"]["status"] == 200
    assert [c["name"] for c in mine["listing"]["body"]["campaigns"]] == ["browser"]  # the public key's scope
    assert mine["report"] == {"status": 200, "body": {"accepted": 1, "duplicate": 0, "rejected": 0, "errors": []}}
    assert mine["other"]["status"] == 403 and mine["other"]["body"]["field"] == "name"  # a readable problem
    assert mine["estimate"] == {"error": "TypeError"}  # admin routes: refused even with an admin key
    assert theirs == {name: {"error": "TypeError"} for name in ("listing", "report", "other", "estimate")}
    with open_storage(db) as storage:
        assert storage.count_reports("browser") == 1  # the other page's report never left its browser
