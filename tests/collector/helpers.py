"""Helpers of the collector tests: specs, reports, table counts, and the real server on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import client_sdk
from collector.storage import open_storage

from .ports import free_port

BACKENDS = ("sqlite", "postgresql")
# Runs a test once per storage backend (the ``backend`` fixture of conftest.py chooses ``db_path``)
on_both_backends = pytest.mark.parametrize("backend", BACKENDS, indirect=True)

CATEGORICAL = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "edge"]}
NUMERIC = {"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 1000]}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def make_reports(spec: client_sdk.Spec, values: list[Any], seed: int = 1) -> list[dict]:
    mechanism = client_sdk.mechanism_from_spec(spec, rng=client_sdk.DeterministicRandom(seed))
    return [{"report_id": str(uuid.uuid4()), "campaign": spec.name, "fingerprint": spec.fingerprint,
             "payload": mechanism.perturb(value)} for value in values]


def table_counts(db_path: Path | str) -> dict[str, int]:
    with open_storage(db_path) as storage:
        return {table: storage.row_count(table) for table in ("campaigns", "reports", "aggregates")}


# -- the real server ------------------------------------------------------------------------------------------
def ldp_command(*args: str, prelude: str = "") -> list[str]:
    "The ldp-telemetry CLI as a subprocess; ``prelude``: Python run before it (an attacker test's patch)"
    return [sys.executable, "-c", f"{prelude}\nfrom ldp_telemetry.cli import main; main()", *args]


def create_key(db_path: Path, role: str) -> str:
    out = subprocess.run(ldp_command("keys", "create", "--role", role, "--db", str(db_path)), check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def wait_ready(url: str, process: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not become ready")


@contextmanager
def running_server(db_path: Path, log_path: Path, port: int | None = None, workers: int = 2,
                   extra: tuple[str, ...] = ("--rate-limit", "0"),
                   prelude: str = "") -> Iterator[tuple[str, subprocess.Popen]]:
    "``ldp-telemetry serve`` as a subprocess in its own process group (``prelude``: see ldp_command); stopped after"
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            ldp_command("serve", "--db", str(db_path), "--host", "127.0.0.1", "--port", str(port), "--workers",
                        str(workers), *extra, prelude=prelude),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "PYTHONWARNINGS": ""})
    try:
        wait_ready(url, process)
        yield url, process
    finally:
        stop(process)


STOP_GRACE = 10.0  # seconds a script's servers have to exit on SIGTERM


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def stop_group(process: subprocess.Popen) -> None:
    """Stop the script's own process group, its serve processes too: SIGTERM, so that each removes what it made
    (its metrics directory), then SIGKILL what is left after STOP_GRACE seconds (the group's leader, a script, may
    have exited already: :func:`stop` waits for the leader only)"""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if process.poll() is None:
                time.sleep(0.05)
                continue
            try:
                os.killpg(process.pid, 0)  # a member of the group still runs
            except ProcessLookupError:
                return
            time.sleep(0.05)
    process.wait()


@contextmanager
def loopback_http_server(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    "A threaded HTTP server on 127.0.0.1 (a free port) with ``handler``; yields its base URL, shut down afterwards"
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
