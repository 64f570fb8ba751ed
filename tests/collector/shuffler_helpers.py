"""A real collector and a real shuffler (``ldp-telemetry serve --role shuffler``) on loopback, for its tests, and a
recording proxy to put in front of either (what it is sent, request by request)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from collector.shuffler import queue as _queue  # noqa: F401  (registers the queue's migrations)
from collector.storage import Storage

from .helpers import free_port, ldp_command, running_server, stop, wait_ready

SHUFFLED = {"name": "browser", "mechanism": "grr", "epsilon": 2.0, "domain": ["chrome", "firefox", "safari"],
            "trust": "shuffled", "shuffle_batch": 100}


def call(url: str, key: str, method: str = "GET", body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json", "User-Agent": "shuffle-test/1.0"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def keys_in(db_path: Path, *roles: str) -> list[str]:
    with Storage(db_path) as storage:
        storage.migrate()
        return [storage.create_key(role, "2024-01-01")[0] for role in roles]


@contextmanager
def shuffler_process(db_path: Path, log_path: Path, upstream: str, token: str, *, port: int | None = None,
                     env: dict | None = None, workers: int = 1) -> Iterator[tuple[str, subprocess.Popen]]:
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            ldp_command("serve", "--role", "shuffler", "--db", str(db_path), "--port", str(port), "--workers",
                        str(workers), "--upstream", upstream, "--upstream-token", token, "--rate-limit", "0"),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PYTHONWARNINGS": "", **(env or {})})
    try:
        wait_ready(url, process)
        yield url, process
    finally:
        stop(process)


@contextmanager
def collector_and_shuffler(directory: Path, spec: dict = SHUFFLED, **shuffler: Any) -> Iterator[dict]:
    "A collector with ``spec``, its shuffler, and the keys: admin (collector), device (shuffler)"
    collector_db, shuffler_db = directory / "collector.db", directory / "shuffler.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    (device,) = keys_in(shuffler_db, "ingest")
    with running_server(collector_db, directory / "collector.log", workers=1) as (collector_url, _):
        created = call(collector_url + "/v1/campaigns", admin, "POST", spec)
        with shuffler_process(shuffler_db, directory / "shuffler.log", collector_url, forwarding,
                              **shuffler) as (url, process):
            yield {"collector": collector_url, "shuffler": url, "process": process, "admin": admin,
                   "device": device, "forwarding": forwarding, "collector_db": collector_db,
                   "shuffler_db": shuffler_db, "spec": created["spec"], "dir": directory}


def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def stored_ids(db_path: Path) -> list[str]:
    "The collector's report ids in the order its table returns them"
    with Storage(db_path) as storage:
        return [row["report_id"] for row in storage.iter_reports()]


@contextmanager
def recording_proxy(upstream: str) -> Iterator[tuple[str, list[dict]]]:
    "A loopback proxy to ``upstream`` that keeps the JSON body of every POST it passes on"
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def _pass(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if body is not None:
                raw = body
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(body)
                seen.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)})
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            request = urllib.request.Request(upstream + self.path, data=body, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, data, kind = response.status, response.read(), response.headers["Content-Type"]
            except urllib.error.HTTPError as error:
                status, data, kind = error.code, error.read(), error.headers["Content-Type"]
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._pass("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._pass("POST")

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
