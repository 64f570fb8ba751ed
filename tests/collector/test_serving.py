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
PARTIAL_HEADS = 50


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


def open_slow_clients(host: str, port: int, stack: ExitStack, wrap=lambda sock: sock) -> None:
    """``IDLE_CONNECTIONS`` connections that answered one request and stay open (kept alive), then
    ``PARTIAL_HEADS`` connections that send the start of a request head and nothing more; ``wrap`` (TLS, for
    nginx) is applied to each socket"""
    for _ in range(IDLE_CONNECTIONS):
        sock = stack.enter_context(wrap(socket.create_connection((host, port), timeout=30)))
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while not answer.endswith(b'{"status":"ok"}\n'):
            chunk = sock.recv(4096)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" not in answer.lower()
    for _ in range(PARTIAL_HEADS):
        sock = stack.enter_context(wrap(socket.create_connection((host, port), timeout=30)))
        sock.sendall(b"POST /v1/reports HTTP/1.1\r\nHost: x\r\n")


def test_slow_and_idle_clients_do_not_starve_the_default_server(tmp_path):
    """50 partial request heads and 50 idle kept-alive connections against ``ldp-telemetry serve`` as documented
    (default workers and threads): /livez and an ingest are still answered within a 1 s client timeout"""
    db_path, ingest, spec = _world(tmp_path)
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _), ExitStack() as stack:
        open_slow_clients("127.0.0.1", int(url.rsplit(":", 1)[1]), stack)
        for _ in range(4):  # several requests, so both workers are asked
            assert _get(url + "/livez", timeout=1.0) == (200, '{"status":"ok"}\n')
        reports = make_reports(spec, ["chrome", "safari", "edge"])
        assert _post_reports(url, ingest, reports, timeout=1.0)["accepted"] == 3
    assert table_counts(db_path)["reports"] == 3


def _exchange(port: int, *pieces: bytes, pause: float = 0.0) -> bytes:
    "Send ``pieces`` on one connection (``pause`` seconds apart), then read until the server closes it"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(pause)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _ingest_request(key: str, reports: list[dict], *headers: str, chunked: bool = False) -> tuple[bytes, bytes]:
    "The head and body of a POST /v1/reports"
    body = json.dumps({"reports": reports}).encode()
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}"
    head = "\r\n".join(["POST /v1/reports HTTP/1.1", "Host: x", f"Authorization: Bearer {key}",
                         "Content-Type: application/json", framing, *headers, "", ""]).encode()
    if chunked:
        body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:])) + b"0\r\n\r\n"
    return head, body


def test_the_event_loop_frames_requests_that_arrive_in_pieces(tmp_path):
    """A request dripped in pieces, a chunked body, two pipelined requests and ``Expect: 100-continue`` are each
    answered once and in order; a head above the limit is answered 431 without reaching the application"""
    from collector.server import MAX_HEAD_BYTES

    db_path, ingest, spec = _world(tmp_path)
    with running_server(db_path, tmp_path / "server.log", workers=1, extra=("--rate-limit", "0", "--threads", "1")
                        ) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        head, body = _ingest_request(ingest, make_reports(spec, ["edge"]), "Connection: close")
        request = head + body
        dripped = _exchange(port, *(request[at:at + 40] for at in range(0, len(request), 40)), pause=0.01)
        assert dripped.startswith(b"HTTP/1.1 200") and b'"accepted":1' in dripped

        head, body = _ingest_request(ingest, make_reports(spec, ["chrome"]), "Connection: close", chunked=True)
        chunked = _exchange(port, head, body[:7], body[7:])
        assert chunked.startswith(b"HTTP/1.1 200") and b'"accepted":1' in chunked

        livez = b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"
        pipelined = _exchange(port, livez + livez.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        assert pipelined.count(b"HTTP/1.1 200") == 2 and pipelined.count(b'{"status":"ok"}') == 2

        head, body = _ingest_request(ingest, make_reports(spec, ["safari"]), "Connection: close",
                                     "Expect: 100-continue")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head)
            assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(body)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and b"100 Continue" not in answer and b'"accepted":1' in answer

        too_long = _exchange(port, b"GET /livez HTTP/1.1\r\nX-Long: " + b"a" * MAX_HEAD_BYTES)
        assert too_long.startswith(b"HTTP/1.1 431 ")
        problem = json.loads(too_long.split(b"\r\n\r\n", 1)[1])
        assert problem["status"] == 431 and problem["type"].startswith("urn:ldp-telemetry:problem:")
    assert table_counts(db_path)["reports"] == 3


def test_a_request_that_does_not_arrive_in_time_is_answered_408_and_frees_its_connection(tmp_path):
    """``--request-timeout``: a stalled head and a stalled body are each answered 408 (problem+json) and closed by
    the event loop; the single thread never waited for them"""
    with running_server(tmp_path / "c.db", tmp_path / "log", workers=1,
                        extra=("--rate-limit", "0", "--threads", "1", "--request-timeout", "1")) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        for stalled in (b"POST /v1/reports HTTP/1.1\r\nHost: x\r\n",
                        b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"rep"):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(stalled)
                assert _get(url + "/livez", timeout=5)[0] == 200  # meanwhile the only thread is free
                answer = b""
                while chunk := sock.recv(65536):  # until the server closes the connection
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 408 ")
            problem = json.loads(answer.split(b"\r\n\r\n", 1)[1])
            assert problem["status"] == 408 and problem["type"] == "urn:ldp-telemetry:problem:request-timeout"


def test_stalled_and_oversized_bodies_cost_no_thread(tmp_path):
    """50 requests whose body stalls after 10 bytes, and 50 that declare a body over the limit (each answered 413
    by the event loop at once, with its problem+json): /livez and an ingest still answer within a 1 s timeout"""
    db_path, ingest, spec = _world(tmp_path)
    head = "POST /v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n" \
           "Content-Length: {}\r\n\r\n"
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _), ExitStack() as stack:
        port = int(url.rsplit(":", 1)[1])
        for _ in range(PARTIAL_HEADS):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=30))
            sock.sendall(head.format(ingest, 1000).encode() + b'{"reports"')
        for _ in range(PARTIAL_HEADS):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=30))
            sock.sendall(head.format(ingest, 100 * 1024 * 1024).encode())
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 413 ")
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["field"] == "body"
        for _ in range(4):
            assert _get(url + "/livez", timeout=1.0) == (200, '{"status":"ok"}\n')
        assert _post_reports(url, ingest, make_reports(spec, ["edge"]), timeout=1.0)["accepted"] == 1


def test_bodies_beyond_the_buffer_budget_are_answered_503_not_given_a_thread(tmp_path):
    """Partial bodies of 6 MiB on connection after connection: once the loop holds 64 MiB, it answers 503, with the
    CORS headers of /v1/reports for an allowed origin (so a page reads the status and Retry-After)"""
    import select

    from collector.server import BUFFER_BUDGET

    piece, page = 6 * 1024 * 1024, "https://app.example.org"
    head = b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example.org\r\nContent-Type: " \
           b"application/json\r\nContent-Length: %d\r\n\r\n"
    with running_server(tmp_path / "c.db", tmp_path / "log", workers=1, extra=("--rate-limit", "0", "--cors-origin",
                                                                               page)) as (url, _), \
            ExitStack() as stack:
        port = int(url.rsplit(":", 1)[1])
        waiting: list[socket.socket] = []
        answered: list[socket.socket] = []
        while not answered and len(waiting) < BUFFER_BUDGET // piece + 3:
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=30))
            sock.sendall(head % (piece + 1) + b"x" * piece)  # one byte short of the body
            waiting.append(sock)
            answered = select.select(waiting, [], [], 0.2)[0]
        answered = answered or select.select(waiting, [], [], 20)[0]
        assert len(waiting) * piece > BUFFER_BUDGET  # nothing was refused below the budget
        answers = [sock.recv(65536) for sock in answered]
        assert answers and all(answer.startswith(b"HTTP/1.1 503 ") for answer in answers)
        assert all(f"\r\nAccess-Control-Allow-Origin: {page}\r\n".encode() in answer for answer in answers)
        assert _get(url + "/livez", timeout=5)[0] == 200


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


def test_served_responses_carry_the_current_date(tmp_path):
    import email.utils

    db_path, _, _ = _world(tmp_path)
    with running_server(db_path, tmp_path / "server.log") as (url, _):
        for _ in range(3):
            before = time.time()
            with urllib.request.urlopen(url + "/livez", timeout=10) as response:
                date = email.utils.parsedate_to_datetime(response.headers["Date"]).timestamp()
            assert int(before) <= date <= time.time()


def test_the_log_shows_the_bound_address_and_port_and_no_client_address(tmp_path):
    "``--port 0``: the log names the port the kernel chose; a client's address in a gunicorn warning is removed"
    import subprocess

    from .helpers import ldp_command

    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(ldp_command("serve", "--db", str(tmp_path / "c.db"), "--host", "127.0.0.1",
                                               "--port", "0", "--workers", "1"),
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(lambda: "Booting worker" in log_path.read_text())
        listening = re.search(r"Listening at: http://127\.0\.0\.1:(\d+) \(\d+\)", log_path.read_text())
        assert listening, log_path.read_text()
        url = f"http://127.0.0.1:{listening.group(1)}"
        _wait_for(lambda: _answers(url + "/livez"))
        with socket.create_connection(("127.0.0.1", int(listening.group(1))), timeout=10) as sock:
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")  # gunicorn logs the peer
            assert sock.recv(100).startswith(b"HTTP/1.1 400")
        _wait_for(lambda: "Invalid" in log_path.read_text())
    finally:
        stop(process)
    lines = log_path.read_text().splitlines()
    assert not [line for line in lines if "127.0.0.1" in line and "Listening at:" not in line], lines


def _answers(url: str) -> bool:
    try:
        return _get(url, timeout=1)[0] == 200
    except OSError:
        return False
