"""The real ``ldp-telemetry serve`` on loopback: slow clients, worker and master lifetimes, threads and SQLite.

Bounds here are request timeouts (a request must be answered within them), not benchmarks.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import client_sdk
from collector.storage import Storage

from .helpers import CATEGORICAL, free_port, make_reports, running_server, stop, table_counts

IDLE_CONNECTIONS = 50
HALF_HEADERS = 5


def _world(tmp_path: Path) -> tuple[Path, str, client_sdk.Spec]:
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        campaign, _ = storage.create_campaign(CATEGORICAL, "2024-01-01")
    return db_path, ingest, campaign.spec


def _post_reports(url: str, key: str, reports: list[dict], timeout: float) -> dict:
    request = urllib.request.Request(url + "/v1/reports", data=json.dumps({"reports": reports}).encode(),
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        assert response.status == 200
        return json.loads(response.read())


def _get(url: str, timeout: float) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode()


def _children(pid: int) -> set[int]:
    "Live child processes of ``pid``"
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            children.add(int(stat.parent.name))
    return children


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _health_count(url: str) -> float:
    text = _get(url + "/metrics", timeout=5)[1]
    match = re.search(r'^ldp_http_requests_total\{endpoint="health",status="2xx"\} (\S+)$', text, re.M)
    assert match, text
    return float(match.group(1))


def test_idle_and_half_open_connections_do_not_starve_the_server(tmp_path):
    db_path, ingest, spec = _world(tmp_path)
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _), ExitStack() as stack:
        port = int(url.rsplit(":", 1)[1])
        for _ in range(IDLE_CONNECTIONS):
            stack.enter_context(socket.create_connection(("127.0.0.1", port)))
        for _ in range(HALF_HEADERS):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port)))
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        for _ in range(4):  # several requests, so both workers are asked
            assert _get(url + "/livez", timeout=1.0) == (200, '{"status":"ok"}\n')
        reports = make_reports(spec, ["chrome", "safari", "edge"])
        assert _post_reports(url, ingest, reports, timeout=1.0)["accepted"] == 3
    assert table_counts(db_path)["reports"] == 3


def test_threads_each_use_their_own_connection(tmp_path):
    "Concurrent ingestion from many clients into threaded workers: every report stored exactly once"
    db_path, ingest, spec = _world(tmp_path)
    batches = [make_reports(spec, ["chrome", "firefox"] * 10, seed=i) for i in range(24)]
    errors: list[BaseException] = []

    def send(batch: list[dict]) -> None:
        try:
            assert _post_reports(url, ingest, batch, timeout=30)["accepted"] == len(batch)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _):
        threads = [threading.Thread(target=send, args=(batch,)) for batch in batches]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    with Storage(db_path) as storage:
        stored = [r["report_id"] for r in storage.iter_reports("browser")]
        assert sorted(stored) == sorted(r["report_id"] for batch in batches for r in batch)
        assert sum(a.n for _, a in storage.aggregates_by_day(storage.get_campaign("browser"))) == len(stored)


def test_worker_exit_keeps_the_shared_metrics(tmp_path):
    db_path, _, _ = _world(tmp_path)
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, process):
        for _ in range(10):
            _get(url + "/livez", timeout=5)
        before = _health_count(url)
        _wait_for(lambda: len(_children(process.pid)) == 2)  # ready means one worker answers; wait for both
        workers = _children(process.pid)
        leaving = min(workers)
        os.kill(leaving, signal.SIGTERM)  # a graceful worker exit, as after max_requests or a reload
        _wait_for(lambda: not _alive(leaving) and len(_children(process.pid)) == 2)
        for _ in range(4):  # whichever worker answers counts every worker, the one that left included
            count = _health_count(url)
            assert count > before
            before = count


def test_workers_die_with_a_killed_master_and_the_port_is_free(tmp_path):
    db_path, ingest, spec = _world(tmp_path)
    port, log = free_port(), tmp_path / "server.log"
    with running_server(db_path, log, port=port, workers=2) as (url, process):
        _wait_for(lambda: len(_children(process.pid)) == 2)  # ready means one worker answers; wait for both
        workers = _children(process.pid)
        killed_metrics = _serve_metrics_dir(process.pid)
        assert killed_metrics.is_dir()
        os.kill(process.pid, signal.SIGKILL)  # the master alone
        process.wait(timeout=10)
        with running_server(db_path, log, port=port, workers=2) as (url, restarted):  # the same port, at once
            assert _post_reports(url, ingest, make_reports(spec, ["edge"]), timeout=5)["accepted"] == 1
            assert not killed_metrics.exists()  # the killed master's metrics were removed by the next start
        assert not any(_alive(pid) for pid in workers)
        assert not _serve_metrics_dir(restarted.pid).exists()  # a master that stops cleans up itself
    stop(process)


def _serve_metrics_dir(master: int) -> Path:
    return Path(tempfile.gettempdir()) / f"ldp-metrics-{os.getuid()}-serve-{master}"


def test_the_idna_codec_is_loaded_before_any_request_thread():
    """werkzeug encodes the Host header with the "idna" codec on every request; found lazily by several threads
    at once it failed with LookupError (a 500 from the demo leader's first requests), so the app loads it first"""
    import subprocess
    import sys

    code = "import sys, collector.app; print('encodings.idna' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_a_connection_sending_request_after_request_does_not_keep_the_only_thread(tmp_path):
    """A thread answers a kept-alive connection's next request itself only while no other connection waits: with
    one thread, a client that never pauses does not hold back another client's request until it stops"""
    import http.client

    with running_server(tmp_path / "c.db", tmp_path / "log", workers=1,
                        extra=("--rate-limit", "0", "--threads", "1")) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        busy = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        answered: list[int] = []  # how many requests the busy client had sent when the other one was answered
        sent = [0]
        stop_busy = threading.Event()

        def keep_asking() -> None:
            while not stop_busy.is_set() and sent[0] < 2000:
                busy.request("GET", "/livez")
                busy.getresponse().read()
                sent[0] += 1

        runner = threading.Thread(target=keep_asking)
        runner.start()
        while sent[0] < 20:  # the busy client is under way
            time.sleep(0.01)
        with urllib.request.urlopen(url + "/livez", timeout=30) as response:
            assert response.status == 200
            answered.append(sent[0])
        stop_busy.set()
        runner.join(timeout=60)
        busy.close()
        assert answered[0] < 2000, "the other client was answered only once the busy one had stopped"


def test_the_date_header_is_formatted_once_a_second_and_is_always_the_current_second(monkeypatch):
    "collector.server.http_date (installed in each worker) equals gunicorn's formatting at every moment"
    import email.utils

    from collector import server

    clock = [1_700_000_000.2]
    monkeypatch.setattr(server.time, "time", lambda: clock[0])
    monkeypatch.setattr(server, "_date", (-1, ""))
    for moment in (1_700_000_000.2, 1_700_000_000.9, 1_700_000_001.0, 1_700_000_001.99, 1_700_000_002.5,
                   1_700_086_399.999, 1_700_086_400.0):
        clock[0] = moment
        assert server.http_date() == email.utils.formatdate(moment, usegmt=True)
    assert server.http_date(86_400.5) == "Fri, 02 Jan 1970 00:00:00 GMT"


def test_served_responses_carry_the_current_date(tmp_path):
    import email.utils

    db_path, _, _ = _world(tmp_path)
    with running_server(db_path, tmp_path / "server.log") as (url, _):
        for _ in range(3):
            before = time.time()
            with urllib.request.urlopen(url + "/livez", timeout=10) as response:
                date = email.utils.parsedate_to_datetime(response.headers["Date"]).timestamp()
            assert int(before) <= date <= time.time()
