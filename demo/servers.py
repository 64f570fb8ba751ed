"""The demo's collectors (:func:`running_collector`, and a leader and a helper: :func:`running_aggregators`) in
child processes on loopback, their keys and campaigns, and the throwaway workspace their databases live in."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from client_sdk.clock import day_start, utc_day, utc_today
from collector.admin_client import AdminClient
from collector.config import DEFAULTS
from collector.storage import Storage

from .scenario import CAMPAIGNS, DemoCampaign

RAM_FOLDER = Path("/dev/shm")  # where the demo's throwaway workspace goes by default (RAM-backed on Linux)
RAM_FOLDER_MIN_FREE = 512 * 1024 * 1024  # bytes free needed there (the demo peaks at ~130 MB with 2,000 users)
PEER_TOKEN = "demo-peer-token"  # aggregator-to-aggregator key of the demo's two children


@contextmanager
def running_collector(database: Path, config: dict | None = None, *, workers: int = 1,
                      env: dict[str, str] | None = None) -> Iterator[str]:
    """The collector as ``ldp-telemetry serve`` runs it (gunicorn, ``workers`` worker processes of threads,
    kept-alive connections) on 127.0.0.1 (a free port) in a child process; yields its base URL.

    The devices and the collector do not share an interpreter (or its lock).  The child is a fresh interpreter
    (``python -c``, the parent's ``sys.path``), so a caller's script is never re-imported; it serves until its
    standard input closes.  Its log goes to ``collector.log`` beside the database.  Rate limiting is off: every
    simulated user shares one ingest key.  ``env`` adds environment variables to the child's."""
    code = ("import json, sys; sys.path[:0] = json.loads(sys.argv[3]); "
            "from demo.servers import serve_until_stdin_closes; "
            "serve_until_stdin_closes(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[4]))")
    log_path = database.parent / "collector.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", code, str(database), json.dumps(config or {}), json.dumps(sys.path), str(workers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            env={**os.environ, **env} if env else None)
    assert process.stdin is not None and process.stdout is not None
    try:
        port = process.stdout.readline().strip()
        if not port.isdigit():
            tail = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the demo collector did not start:\n{tail}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()



def serve_until_stdin_closes(database: str, config: dict, workers: int = 1) -> None:
    """The child of :func:`running_collector`: ``collector.server.serve`` (gunicorn) on a free port; prints the
    port once the collector answers, stops when standard input closes.

    It stops at once (gunicorn's quick shutdown, SIGQUIT): by then the demo has its answers and every report the
    collector acknowledged is committed, and the database is thrown away.  A graceful stop (SIGTERM) waited for
    the worker's idle kept-alive connections: 1 to 2.5 s at the end of every run, on its critical path."""
    # imported here: only the collector child serves (+285 ms, 280 modules)
    from collector.server import serve

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def announce_then_wait() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        print(port, flush=True)
        sys.stdin.read()  # returns when the parent closes the pipe (or exits)
        os.kill(os.getpid(), signal.SIGQUIT)

    threading.Thread(target=announce_then_wait, name="ldp-demo-stdin", daemon=True).start()
    serve(database, port=port, workers=workers, config={"RATE_LIMIT": 0, **config})



def default_workdir(ram_folder: Path = RAM_FOLDER, min_free: int = RAM_FOLDER_MIN_FREE) -> Path | None:
    """Where the demo's throwaway workspace goes unless ``--workdir`` says: ``ram_folder`` (``/dev/shm``) when it is
    a writable folder with at least ``min_free`` bytes free, else None (the system's temporary folder).

    The workspace holds the collectors' databases and the simulated devices' state folders, every one deleted at
    the end of the run; in RAM their per-commit fsyncs cost nothing (on disk they cost a few seconds of CPU)."""
    try:
        if not ram_folder.is_dir() or not os.access(ram_folder, os.W_OK | os.X_OK):
            return None
        if shutil.disk_usage(ram_folder).free < min_free:
            return None
    except OSError:
        return None
    return ram_folder



def demo_workspace(workdir: Path | None = None) -> tempfile.TemporaryDirectory:
    """The demo's own temporary folder (``ldp-demo-*``), removed with everything in it at the end of the run: inside
    ``workdir`` when given (created if missing, and left in place), else inside :func:`default_workdir`'s choice"""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    parent = workdir if workdir is not None else default_workdir()
    return tempfile.TemporaryDirectory(prefix="ldp-demo-", dir=parent)



def create_keys(database: Path) -> tuple[str, str]:
    "An admin and an ingest key, as ``ldp-telemetry keys create`` makes them"
    today = utc_today()
    with Storage(database) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", today, "demo analyst")
        ingest, _ = storage.create_key("ingest", today, "demo devices")
    return admin, ingest



def create_campaigns(url: str, admin_key: str, campaigns: Sequence[DemoCampaign] = CAMPAIGNS) -> dict[str, dict]:
    "POST every spec to /v1/campaigns; the stored campaigns by name (AdminApiError if the collector refuses one)"
    with AdminClient(url, admin_key) as client:
        return {campaign.name: client.post("/v1/campaigns", campaign.spec) for campaign in campaigns}



@dataclass
class DemoAggregators:
    "The running leader and helper of :func:`running_aggregators`"

    url: str  # the leader's
    admin: str
    ingest: str
    helper_url: str
    end_day: Callable[[], str]  # both aggregators again a day later; the day that ended (its batch can be collected)



@contextmanager
def running_aggregators(folder: Path) -> Iterator[DemoAggregators]:
    """A helper and a leader, each a collector child of :func:`running_collector` with its own database.  The
    leader runs no aggregation driver: collection runs the pending aggregation jobs itself.

    A batch (a UTC day) is collected once its day has ended and a grace period after it (``COLLECT_GRACE``), on
    each aggregator's clock; rather than wait, ``end_day()`` stops both and starts them again on the same databases
    with their clocks moved past that (``LDP_CLOCK_OFFSET``), as if the night had passed: the users' reports are
    then in yesterday's batch, which they release."""
    with ExitStack() as servers:
        leader_db = folder / "leader.db"
        admin_key, ingest_key = create_keys(leader_db)
        offset = [0.0]  # the aggregators' LDP_CLOCK_OFFSET, seconds

        def start_both() -> tuple[str, str]:
            "(leader URL, helper URL)"
            servers.close()
            env = {"LDP_CLOCK_OFFSET": repr(offset[0])}
            helper_url = servers.enter_context(running_collector(
                folder / "helper.db", {"ROLE": "helper", "PEER_TOKEN": PEER_TOKEN}, env=env))
            config = {"ROLE": "leader", "HELPER_URL": helper_url, "PEER_TOKEN": PEER_TOKEN, "AGGREGATE_INTERVAL": 0}
            return servers.enter_context(running_collector(leader_db, config, env=env)), helper_url

        def end_day() -> str:
            now = time.time()
            ended = utc_day(now + offset[0])
            # a minute past the ended day's collection grace (COLLECT_GRACE): its batch can be collected
            offset[0] = day_start(ended) + 86400 + DEFAULTS["COLLECT_GRACE"] + 60 - now
            running.url, running.helper_url = start_both()
            return ended

        leader_url, helper_url = start_both()
        running = DemoAggregators(leader_url, admin_key, ingest_key, helper_url, end_day)
        yield running
