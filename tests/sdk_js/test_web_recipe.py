"""docs/sdk-js.md's "The example web page" recipe, run as written in a fresh directory: the campaigns, the public
key, the collector with the page's origin allowed, the static server; then headless Chromium (Debian's chromium
through puppeteer-core, ``scripts/browser-drive.mjs``) opens the printed address, ticks the consent box (unchecked
at first: no client, no request before it), records, reloads and delivers, and the recipe's report counts the
device. Only what names this machine changes: the example ports (8000, 8080) become free ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.collector.helpers import free_port
from tests.collector.test_cors_browser import chromium
from tests.test_readme_distributed import ROOT, run, section, shell_blocks

from .conftest import SDK_JS


def test_the_web_example_recipe_runs_as_written(tmp_path: Path, sdk_js: Path) -> None:
    text = section((ROOT / "docs" / "sdk-js.md").read_text(), "The example web page")
    assert "cd sdk-js && npm ci && npm run build" in text  # what the sdk_js fixture did
    serve, report = shell_blocks(text)
    address = re.search(r'echo "open (\S+)"', serve)
    assert address is not None
    collector, page = free_port(), free_port()
    ports = {"8000": str(collector), "8080": str(page)}
    script = re.sub(r"\b(8000|8080)\b", lambda m: ports[m.group(1)], serve)
    url = re.sub(r"\b(8000|8080)\b", lambda m: ports[m.group(1)], address.group(1))
    drive = tmp_path / "drive.json"
    script += (f"for try in $(seq 300); do curl -fs http://127.0.0.1:{collector}/readyz >/dev/null && "
               f"curl -fs http://127.0.0.1:{page}/index.html >/dev/null && break; sleep 0.1; done\n"
               f'(cd {SDK_JS} && node scripts/browser-drive.mjs "{url}" {chromium()} 1) > {drive}\n'
               + report)
    for name in ("examples", "sdk-js"):  # the recipe runs from the repository root
        (tmp_path / name).symlink_to(ROOT / name)
    output = run(script, tmp_path)
    seen = json.loads(drive.read_text())
    assert seen["consentAsked"] == [True, True, True], seen  # the device's first visit and both tabs
    (device,) = seen["devices"]
    assert device["recorded"] == "queued queued queued" and device["after"]["sent"] == 3, device
    assert "n = 1 reports" in output, output[-2000:]
    assert not [line for line in seen["console"] if "pageerror" in line], seen["console"]
