"""Leader and helper as two real server processes on loopback with real database files: upload -> aggregate ->
collect for every Prio3 type, and SIGKILL of the leader or of the helper in the middle of an aggregation job.

The kills happen at named points of the protocol (``LDP_FAILPOINT``, collector.distributed.store.failpoint): the
server SIGKILLs its own process group there, as a power cut would, and is then restarted without the failpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import client_sdk
from client_sdk.clock import utc_day

from ..helpers import create_key, free_port, ldp_command, loopback_http_server, on_both_backends, running_server
from .kit import (
    PEER_TOKEN,
    checked_block,
    databases,
    exact_sum,
    honest_reports,
    past_grace,
    query,
    spec_json,
    truth,
    values_for,
)

WAIT_SECONDS = 60.0  # an upper bound for a condition to come true, polled every 0.1 s
# seconds (--job-lease) a killed leader's job stays leased before the restarted leader takes it over: far below
# WAIT_SECONDS (the default, 60 s, would leave the wait no margin), far above a job's run time here
JOB_LEASE = 3.0


def today() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def call(method: str, url: str, key: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


class Aggregators:
    "Database files, ports and keys of a leader and a helper; each server can be (re)started on its own"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.leader_db, self.helper_db = databases(tmp)
        self.leader_port, self.helper_port = free_port(), free_port()
        self.helper_url = f"http://127.0.0.1:{self.helper_port}"
        self.leader_url = f"http://127.0.0.1:{self.leader_port}"
        self.admin = create_key(self.leader_db, "admin")
        self.ingest = create_key(self.leader_db, "ingest")
        self.clock_offset = 0  # seconds: LDP_CLOCK_OFFSET of the servers started from now on
        self.running_helper: tuple[ExitStack, pytest.MonkeyPatch] | None = None

    def end_day(self) -> None:
        """Servers started from now on live in the next day, past the collection grace of the day so far: its batch
        has ended and can be collected.  A running helper is restarted with that clock (it checks the batch's end on
        its own clock)"""
        now = time.time()
        self.clock_offset = past_grace(utc_day(now + self.clock_offset)) - now
        if self.running_helper is not None:
            stack, monkeypatch = self.running_helper
            stack.close()
            stack.enter_context(self._server(monkeypatch, None, self.helper_db, self.helper_port, "helper"))

    @contextmanager
    def helper(self, monkeypatch: pytest.MonkeyPatch, failpoint: str | None = None) -> Iterator[subprocess.Popen]:
        with ExitStack() as stack:
            process = stack.enter_context(self._server(monkeypatch, failpoint, self.helper_db, self.helper_port,
                                                       "helper"))
            self.running_helper = (stack, monkeypatch)
            try:
                yield process
            finally:
                self.running_helper = None

    @contextmanager
    def leader(self, monkeypatch: pytest.MonkeyPatch, failpoint: str | None = None, interval: float = 0.2,
               workers: int = 1, options: tuple[str, ...] = ()) -> Iterator[subprocess.Popen]:
        extra = ("--helper-url", self.helper_url, "--aggregate-interval", str(interval), "--job-lease", str(JOB_LEASE),
                 *options)
        with self._server(monkeypatch, failpoint, self.leader_db, self.leader_port, "leader", extra,
                          workers) as process:
            yield process

    @contextmanager
    def _server(self, monkeypatch: pytest.MonkeyPatch, failpoint: str | None, db: Path, port: int, role: str,
                extra: tuple[str, ...] = (), workers: int = 1) -> Iterator[subprocess.Popen]:
        with monkeypatch.context() as env:  # the server copies the environment when it starts
            if failpoint:
                env.setenv("LDP_FAILPOINT", failpoint)
            else:
                env.delenv("LDP_FAILPOINT", raising=False)
            env.setenv("LDP_CLOCK_OFFSET", str(self.clock_offset))
            args = ("--rate-limit", "0", "--role", role, "--peer-token", PEER_TOKEN, *extra)
            server = running_server(db, self.tmp / f"{role}.log", port=port, workers=workers, extra=args)
            _, process = server.__enter__()
        try:
            yield process
        finally:
            server.__exit__(None, None, None)

    def create(self, spec: dict) -> tuple[client_sdk.Spec, dict]:
        status, body = call("POST", self.leader_url + "/v1/campaigns", self.admin, spec)
        assert status in (200, 201), body  # 200: the same spec was created before
        status, listed = call("GET", f"{self.leader_url}/v1/campaigns/{spec['name']}", self.ingest)
        _, own = call("GET", f"{self.helper_url}/v1/hpke_config", "")  # as a device: from the helper itself
        return client_sdk.load_spec(body["spec"]), checked_block(listed["aggregators"], self.helper_url, own)

    def upload(self, reports: list[dict]) -> dict:
        status, body = call("POST", self.leader_url + "/v1/reports", self.ingest, {"reports": reports})
        assert status == 200, body
        return body

    def collect(self, name: str) -> tuple[int, Any]:
        "Collect the batch of the first day (this test's real today; the leader must have been started after it ended)"
        return self.collect_batch(name, today())

    def collect_batch(self, name: str, batch: str) -> tuple[int, Any]:
        return call("POST", f"{self.leader_url}/v1/campaigns/{name}/collect", self.admin, {"batch": batch})

    def aggregated(self, spec: client_sdk.Spec) -> int:
        return exact_sum(self.leader_db, self.helper_db, spec, today())[0]


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("kind", ["count", "sum", "histogram", "sumvec", "multihot"])
def test_two_processes_upload_aggregate_collect(tmp_path, monkeypatch, kind):
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0):
            spec, block = servers.create(spec_json(kind))
            values = values_for(kind, 20)
            assert servers.upload(honest_reports(spec, block, values))["accepted"] == 20
            ran = subprocess.run(ldp_command("run-jobs", "--db", str(servers.leader_db), "--helper-url",
                                             servers.helper_url, "--peer-token", PEER_TOKEN),
                                 capture_output=True, text=True, timeout=120)
            assert ran.returncode == 0, ran.stderr
            assert json.loads(ran.stdout)["aggregated"] == 20
            status, problem = servers.collect(spec.name)
            assert status == 409 and problem["type"].endswith("batch-open")  # the day has not ended
        servers.end_day()
        with servers.leader(monkeypatch, interval=0):
            status, release = servers.collect(spec.name)
        assert status == 200, release
        assert release["report_count"] == 20
        assert exact_sum(servers.leader_db, servers.helper_db, spec, today())[2] == truth(kind, values)


@on_both_backends
def test_helper_down_then_back_the_driver_retries(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0.2):
            spec, block = servers.create(spec_json("histogram"))
    values = values_for("histogram", 20)
    # two workers, so two drivers: the aggregator lock lets one work at a time, and nothing is counted twice
    with servers.leader(monkeypatch, interval=0.2, workers=2):  # the helper is down: uploads still acknowledged
        assert servers.upload(honest_reports(spec, block, values))["accepted"] == 20
    servers.end_day()
    with servers.leader(monkeypatch, interval=0.2, workers=2):
        status, problem = servers.collect(spec.name)
        assert status == 503 and problem["type"].endswith("helper-unavailable")
        with servers.helper(monkeypatch):
            wait_for(lambda: servers.aggregated(spec) == 20, "the driver to finish the job")
            status, release = servers.collect(spec.name)
    assert status == 200 and release["report_count"] == 20
    assert exact_sum(servers.leader_db, servers.helper_db, spec, today())[1:] == (20, truth("histogram", values))


@on_both_backends
@pytest.mark.parametrize("point", ["helper-job-before-commit", "helper-job-committed"])
def test_sigkill_of_the_helper_during_a_job(tmp_path, monkeypatch, point):
    servers = Aggregators(tmp_path)
    values = values_for("histogram", 30)
    with servers.leader(monkeypatch, interval=0.2):
        with servers.helper(monkeypatch, failpoint=point) as helper:
            spec, block = servers.create(spec_json("histogram"))
            assert servers.upload(honest_reports(spec, block, values))["accepted"] == 30
            helper.wait(timeout=WAIT_SECONDS)  # killed by its failpoint in the middle of the job
            assert helper.returncode != 0
        assert servers.aggregated(spec) == 0
        more = values_for("histogram", 5)
        assert servers.upload(honest_reports(spec, block, more))["accepted"] == 5  # acknowledged while it is down
        with servers.helper(monkeypatch):
            wait_for(lambda: servers.aggregated(spec) == 35, "the driver to resend the job")
    servers.end_day()
    with servers.helper(monkeypatch), servers.leader(monkeypatch):
        status, release = servers.collect(spec.name)
    assert status == 200 and release["report_count"] == 35
    leader_count, helper_count, exact = exact_sum(servers.leader_db, servers.helper_db, spec, today())
    assert leader_count == helper_count == 35 and exact == truth("histogram", values + more)


@on_both_backends
def test_sigkill_of_the_leader_after_the_helper_committed(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    values = values_for("histogram", 30)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, failpoint="leader-job-answered") as leader:
            spec, block = servers.create(spec_json("histogram"))
            assert servers.upload(honest_reports(spec, block, values))["accepted"] == 30
            leader.wait(timeout=WAIT_SECONDS)  # killed between the helper's answer and its own commit
        assert exact_sum(servers.leader_db, servers.helper_db, spec, today())[:2] == (0, 30)
        with servers.leader(monkeypatch):
            wait_for(lambda: servers.aggregated(spec) == 30, "the restarted leader to finish the job")
        servers.end_day()
        with servers.leader(monkeypatch):
            status, release = servers.collect(spec.name)
    assert status == 200 and release["report_count"] == 30
    leader_count, helper_count, exact = exact_sum(servers.leader_db, servers.helper_db, spec, today())
    assert leader_count == helper_count == 30 and exact == truth("histogram", values)


@on_both_backends
def test_a_leader_stopped_gracefully_mid_job_gives_its_lease_back(tmp_path, monkeypatch):
    """SIGTERM to a leader whose driver waits for the helper's answer to a job: the worker's driver stops and hands
    the job's lease back, so the next leader (or a collection) runs the job at once instead of waiting for the lease
    to expire (``--job-lease``, 60 s).  The helper here reads the job and never answers."""
    servers = Aggregators(tmp_path)
    job_sent, unblock = threading.Event(), threading.Event()
    helper_url = servers.helper_url

    class StallingHelper(BaseHTTPRequestHandler):
        "The helper's GET routes forwarded to it; an aggregation job read and never answered"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with urllib.request.urlopen(helper_url + self.path, timeout=WAIT_SECONDS) as answer:
                body = answer.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            job_sent.set()
            unblock.wait(WAIT_SECONDS)

        def log_message(self, *args: Any) -> None:
            pass

    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0):
            spec, block = servers.create(spec_json("histogram"))
            assert servers.upload(honest_reports(spec, block, values_for("histogram", 12)))["accepted"] == 12
        with loopback_http_server(StallingHelper) as stalling_url:
            servers.helper_url = stalling_url
            try:
                with servers.leader(monkeypatch, interval=0.2) as leader:
                    assert job_sent.wait(WAIT_SECONDS), "the driver sent no job"
                    leased = "SELECT count(*) FROM dist_jobs WHERE state = 'pending' AND lease_owner IS NOT NULL"
                    assert query(servers.leader_db, leased) == [(1,)]  # the driver is in the middle of the job
                    os.killpg(leader.pid, signal.SIGTERM)
                    leader.wait(timeout=WAIT_SECONDS)
            finally:
                unblock.set()
    assert query(servers.leader_db, "SELECT state, lease_owner, lease_expires FROM dist_jobs") == [
        ("pending", None, None)]
