"""Two leader processes and two helper processes, each role on one PostgreSQL database, under concurrent uploads;
one leader and one helper are SIGKILLed mid-load (the leader in the middle of an aggregation job), then restarted.
After collection the release counts every acknowledged report exactly once and its noise-free sum equals the sum
of the uploaded measurements.

Devices behave as the SDK's queue does: a batch is sent to one leader (alternating, no proxy) and, until a leader
acknowledges it (200), sent again to the other; report ids make a repeat harmless."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from ..helpers import create_key, free_port, running_server
from .kit import PEER_TOKEN, checked_block, exact_sum, honest_reports, past_grace, query, spec_json, truth, values_for
from .test_processes import call, today, wait_for

pytestmark = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
REPORTS, PER_UPLOAD = 600, 20
LEASE = 3  # seconds (--job-lease): how long the killed leader's job waits before another driver takes it over
UPLOAD_SECONDS = 120.0  # an upper bound for the devices to get every upload acknowledged


class Servers:
    "Two leaders (leader i uses helper i) and two helpers on the session's leader and helper databases"

    def __init__(self, tmp: Path, databases: tuple[str, str]) -> None:
        self.tmp, (self.leader_db, self.helper_db) = tmp, databases
        self.helper_ports, self.leader_ports = [free_port(), free_port()], [free_port(), free_port()]
        self.helper_urls = [f"http://127.0.0.1:{port}" for port in self.helper_ports]
        self.leader_urls = [f"http://127.0.0.1:{port}" for port in self.leader_ports]
        self.admin, self.ingest = create_key(self.leader_db, "admin"), create_key(self.leader_db, "ingest")
        self.stacks: dict[str, ExitStack] = {}
        self.processes: dict[str, subprocess.Popen] = {}
        self.clock_offset = 0.0

    def start(self, name: str, failpoint: str | None = None) -> None:
        "Start ``leader0``, ``leader1``, ``helper0`` or ``helper1`` (again: the old process must have exited)"
        role, index = name[:-1], int(name[-1])
        self.stop(name)
        extra: tuple[str, ...] = ("--rate-limit", "0", "--role", role, "--peer-token", PEER_TOKEN)
        if role == "leader":
            extra += ("--helper-url", self.helper_urls[index], "--aggregate-interval", "0.2", "--job-lease",
                      str(LEASE))
        port = (self.leader_ports if role == "leader" else self.helper_ports)[index]
        stack = ExitStack()
        with pytest.MonkeyPatch.context() as env:  # the server copies the environment as it starts
            env.setenv("LDP_CLOCK_OFFSET", repr(self.clock_offset))
            if failpoint:
                env.setenv("LDP_FAILPOINT", failpoint)
            else:
                env.delenv("LDP_FAILPOINT", raising=False)
            _, process = stack.enter_context(running_server(
                self.leader_db if role == "leader" else self.helper_db, self.tmp / f"{name}.log", port, 1, extra))
        self.stacks[name], self.processes[name] = stack, process

    def kill(self, name: str) -> None:
        "SIGKILL the server's whole process group (gunicorn master and worker), as a power cut would"
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(timeout=30)

    def stop(self, name: str) -> None:
        if name in self.stacks:
            self.stacks.pop(name).close()

    def close(self) -> None:
        for name in list(self.stacks):
            self.stop(name)

    def upload(self, index: int, reports: list[dict]) -> bool:
        "True once a leader acknowledged the upload (every report accepted or a duplicate of one accepted)"
        try:
            status, body = call("POST", self.leader_urls[index % 2] + "/v1/reports", self.ingest,
                                {"reports": reports})
        except (OSError, http.client.HTTPException):  # refused, reset, or cut mid-answer: that leader went down
            return False
        if status != 200:
            return False
        assert body["rejected"] == 0 and body["accepted"] + body["duplicate"] == len(reports), body
        return True

    def aggregated(self, spec) -> tuple[int, int]:
        "(reports aggregated by the leaders, by the helpers) in the batch of today"
        leader, helper, _ = exact_sum(self.leader_db, self.helper_db, spec, today())
        return leader, helper


@contextmanager
def servers_of(tmp: Path, databases: tuple[str, str]) -> Iterator[Servers]:
    servers = Servers(tmp, databases)
    try:
        yield servers
    finally:
        servers.close()


def test_two_leaders_and_two_helpers_survive_a_sigkill_of_one_of_each(tmp_path, aggregator_databases):
    with servers_of(tmp_path, aggregator_databases) as servers:
        for name in ("helper0", "helper1", "leader1"):
            servers.start(name)
        # leader0 kills itself in its first aggregation job, after the helper committed it and before its own commit
        servers.start("leader0", failpoint="leader-job-answered")
        status, created = call("POST", servers.leader_urls[1] + "/v1/campaigns", servers.admin,
                               spec_json("histogram", min_batch=REPORTS // 2))
        assert status == 201, created
        _, listed = call("GET", servers.leader_urls[0] + "/v1/campaigns/apps", servers.ingest)
        _, own = call("GET", servers.helper_urls[1] + "/v1/hpke_config", "")  # both helpers publish the same key
        import client_sdk

        spec = client_sdk.load_spec(created["spec"])
        block = checked_block(listed["aggregators"], servers.helper_urls[1], own)
        values = values_for("histogram", REPORTS)
        reports = honest_reports(spec, block, values)
        uploads = [reports[i:i + PER_UPLOAD] for i in range(0, REPORTS, PER_UPLOAD)]
        acknowledged = [False] * len(uploads)
        killed_helper = False

        def device(index: int) -> None:
            "Send upload ``index`` to a leader, alternating, until one acknowledges it"
            deadline, attempt = time.monotonic() + UPLOAD_SECONDS, index
            while not servers.upload(attempt, uploads[index]):
                assert time.monotonic() < deadline, f"upload {index} never acknowledged"
                attempt += 1
                time.sleep(0.1)
            acknowledged[index] = True

        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(device, index) for index in range(len(uploads))]
            for done, future in enumerate(futures):
                future.result()
                if not killed_helper and done >= len(uploads) // 3:
                    servers.kill("helper1")  # mid-load: leader1's driver loses its helper
                    killed_helper = True
        assert all(acknowledged)
        wait_for(lambda: servers.processes["leader0"].poll() is not None, "leader0 to die at its failpoint")
        assert servers.aggregated(spec)[0] < REPORTS
        servers.start("helper1")
        servers.start("leader0")  # without the failpoint
        # its job, leased by the dead leader0, is taken over once the lease expires; the helper answers it again
        wait_for(lambda: servers.aggregated(spec) == (REPORTS, REPORTS), "both sides to aggregate every report")
        assert query(servers.leader_db, "SELECT count(*) FROM dist_jobs WHERE state = 'pending'") == [(0,)]
        assert query(servers.helper_db, "SELECT count(*) FROM dist_helper_seen WHERE valid = 1") == [(REPORTS,)]

        now = time.time()  # the day ends: the aggregators restart past its collection grace (each checks its clock)
        servers.clock_offset = past_grace(today()) - now
        for name in ("helper0", "helper1", "leader0", "leader1"):
            servers.start(name)
        status, release = call("POST", f"{servers.leader_urls[0]}/v1/campaigns/apps/collect", servers.admin,
                               {"batch": today()})
        assert status == 200, release
        status, again = call("POST", f"{servers.leader_urls[1]}/v1/campaigns/apps/collect", servers.admin,
                             {"batch": today()})
        assert status == 409 and again["release"] == release
    assert release["report_count"] == REPORTS and release["rejected"] == {}
    assert exact_sum(servers.leader_db, servers.helper_db, spec, today()) == (REPORTS, REPORTS,
                                                                             truth("histogram", values))
