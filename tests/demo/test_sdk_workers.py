"""The demo's devices in worker processes: every user reports through its own Client, progress counts each user,
the first failing user fails the run with its message.  A small stdlib collector stands in for the real one (the
whole demo against the real collector is tests/demo/test_demo.py)."""

from __future__ import annotations

import http.server
import json
import shutil
import sys
import threading

import pytest

from client_sdk import load_spec
from demo.devices import report_through_sdk

SPECS = [load_spec({"name": "theme", "mechanism": "grr", "epsilon": 1.0, "domain": ["light", "dark"]}),
         load_spec({"name": "load_ms", "mechanism": "piecewise", "epsilon": 1.0, "range": [0, 1000]})]


class Collector(http.server.BaseHTTPRequestHandler):
    "Lists the two campaigns; accepts every report, or rejects every report when the server says so"

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        items = [{"name": s.name, "version": 1, "fingerprint": s.fingerprint, "spec": s.to_dict()} for s in SPECS]
        self._answer({"campaigns": items})

    def do_POST(self) -> None:
        reports = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["reports"]
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.reports.extend(reports)  # type: ignore[attr-defined]
        if self.server.reject:  # type: ignore[attr-defined]
            errors = [{"report_id": r["report_id"], "field": "payload", "reason": "test"} for r in reports]
            self._answer({"accepted": 0, "duplicate": 0, "rejected": len(reports), "errors": errors})
        else:
            self._answer({"accepted": len(reports), "duplicate": 0, "rejected": 0, "errors": []})

    def _answer(self, data: dict) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    server.reports, server.reject, server.lock = [], False, threading.Lock()  # type: ignore[attr-defined]
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


POPULATION = {"theme": ["light", "dark"] * 6, "load_ms": [float(10 * i) for i in range(12)]}


@pytest.mark.parametrize("processes", [1, 2])
def test_every_user_reports_through_its_own_client_and_counts_once(collector, tmp_path, processes):
    server, url = collector
    counted: list[int] = []
    report_through_sdk(url, "key", POPULATION, tmp_path / "devices", counted.append, workers=4, processes=processes)
    assert sum(counted) == 12
    assert len(server.reports) == 24 and len({r["report_id"] for r in server.reports}) == 24
    assert sorted(p.name for p in (tmp_path / "devices").glob("device-*")) == sorted(f"device-{u}" for u in range(12))
    assert all((tmp_path / "devices" / f"device-{u}" / "ldp-telemetry.sqlite3").exists() for u in range(12))


@pytest.mark.parametrize("processes", [1, 2])
def test_a_failing_user_fails_the_run_with_its_message(collector, tmp_path, processes):
    server, url = collector
    server.reject = True
    with pytest.raises(RuntimeError, match=r"user \d+: the collector did not take every report"):
        report_through_sdk(url, "key", POPULATION, tmp_path / "devices", None, workers=2, processes=processes)


def test_a_worker_that_dies_fails_the_run(tmp_path, monkeypatch):
    "A worker that exits without a word (here: an interpreter that fails at once) fails the run with its status"
    monkeypatch.setattr(sys, "executable", shutil.which("false"))
    with pytest.raises(RuntimeError, match="a demo device process failed"):
        report_through_sdk("http://127.0.0.1:9/", "key", {"theme": ["light"] * 2}, tmp_path / "devices",
                           None, workers=2, processes=2)
