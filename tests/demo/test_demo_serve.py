"""``ldp-telemetry demo --serve`` (issue 38): once the reports are written the local collector keeps serving, its
dashboard's address and the admin key printed, until SIGTERM (or Ctrl-C); then it stops and nothing is left."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import requests

from demo.scenario import CAMPAIGNS
from tests.collector.helpers import ldp_command

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = re.compile(r"^dashboard: (http://127\.0\.0\.1:\d+)/dashboard/ \(admin key: (\S+)\)$", re.MULTILINE)


def _read_lines(stream, lines: list[str], seen: threading.Event) -> None:
    for line in stream:
        lines.append(line)
        if ADDRESS.search(line):
            seen.set()


def test_demo_serve_prints_the_dashboard_serves_it_until_sigterm_and_leaves_nothing(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    demo = subprocess.Popen(
        ldp_command("demo", "--users", "10", "--seed", "7", "--serve", "--workdir", str(work), "--out", str(out)),
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    seen = threading.Event()
    reader = threading.Thread(target=_read_lines, args=(demo.stdout, lines, seen), daemon=True)
    reader.start()
    try:
        while not seen.wait(0.5):  # no timing assertion: the demo either prints the address or ends
            assert demo.poll() is None, f"the demo ended before serving: {''.join(lines)}{demo.stderr.read()}"
        url, admin_key = ADDRESS.search("".join(lines)).groups()
        page = requests.get(f"{url}/dashboard/", timeout=30)
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
        assert "Content-Security-Policy" in page.headers
        listing = requests.get(f"{url}/v1/dashboard/campaigns", headers={"Authorization": f"Bearer {admin_key}"},
                               timeout=30)
        assert listing.status_code == 200, listing.text
        served = {row["name"]: row for row in listing.json()["campaigns"]}
        assert set(served) == {campaign.name for campaign in CAMPAIGNS}
        assert all(row["reports"] == 10 for row in served.values())  # 10 users, one report each
        assert requests.get(f"{url}/v1/dashboard/campaigns", timeout=30).status_code == 401  # still the admin's
        assert work.is_dir() and any(work.iterdir())  # its database lives while it serves
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            code = demo.wait(timeout=120)
        finally:
            if demo.poll() is None:
                demo.kill()
    reader.join(timeout=10)
    stderr = demo.stderr.read()
    demo.stdout.close()
    demo.stderr.close()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert list(work.iterdir()) == []  # the demo's own subfolder (database, log, devices) is gone
    assert (out / "index.html").is_file()  # the reports stay
    for _ in range(50):  # the collector child has gone with it: its port is refused
        try:
            requests.get(f"{url}/readyz", timeout=2)
        except requests.ConnectionError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"{url} still answers after the demo ended")
