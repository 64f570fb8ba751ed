"""No loss: SIGKILL the whole server while several SDK clients send, restart it, and account for every report.

Every report acknowledged with 200 must be in the database exactly once, the clients' queues must deliver the
rest after the restart, and the aggregates (updated incrementally across the crash) must equal a rebuild.
"""

from __future__ import annotations

import signal
import threading
import time

from client_sdk import Client, ReportPolicy
from client_sdk.runtime.transport import HttpTransport, Request, Response
from collector.storage import open_storage

from .helpers import CATEGORICAL, free_port, on_both_backends, running_server, stop

CLIENTS = 3
REPORTS_PER_CLIENT = 250


class AckRecorder(HttpTransport):
    "The HTTP transport, remembering the report ids of every batch the collector answered with 200"

    def __init__(self) -> None:
        super().__init__()
        self.acknowledged: set[str] = set()

    def send(self, request: Request, timeout: float) -> Response:
        response = super().send(request, timeout)
        if request.method == "POST" and response.status == 200:
            rejected = {e["report_id"] for e in response.json()["errors"]}
            sent = request.json()["reports"]
            self.acknowledged.update(r["report_id"] for r in sent if r["report_id"] not in rejected)
        return response


@on_both_backends
def test_sigkill_loses_nothing_that_was_acknowledged(tmp_path, db_path):
    port = free_port()
    with open_storage(db_path) as storage:
        storage.migrate()
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        campaign, _ = storage.create_campaign(CATEGORICAL, "2024-01-01")
    transports = [AckRecorder() for _ in range(CLIENTS)]
    recorded: list[list[str]] = [[] for _ in range(CLIENTS)]
    clients: list[Client] = []
    log = tmp_path / "server.log"

    with running_server(db_path, log, port=port) as (url, process):
        for i in range(CLIENTS):
            clients.append(Client(url, ingest, tmp_path / f"device-{i}", transport=transports[i],
                                  policy=ReportPolicy.unlimited(), batch_size=20, flush_interval=0.02,
                                  backoff_base=0.05, backoff_cap=0.3, timeout=5))
            clients[-1].spec("browser")  # fetch the spec while the server is up

        def produce(index: int) -> None:
            for n in range(REPORTS_PER_CLIENT):
                recorded[index].append(clients[index].record("browser", "chrome" if n % 3 else "safari").report_id)
                time.sleep(0.003)

        threads = [threading.Thread(target=produce, args=(i,)) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        time.sleep(0.6)
        acknowledged_before_kill = sum(len(t.acknowledged) for t in transports)
        stop(process, signal.SIGKILL)  # master and workers, mid-traffic
        assert process.returncode == -signal.SIGKILL
        time.sleep(0.5)

    with running_server(db_path, log, port=port):
        for thread in threads:
            thread.join()
        results = [client.close(timeout=60) for client in clients]

    assert 0 < acknowledged_before_kill < CLIENTS * REPORTS_PER_CLIENT  # killed mid-traffic
    assert all(r.remaining == 0 for r in results)
    all_recorded = {report_id for ids in recorded for report_id in ids}
    acknowledged = set().union(*(t.acknowledged for t in transports))
    assert len(all_recorded) == CLIENTS * REPORTS_PER_CLIENT
    with open_storage(db_path) as storage:
        stored = [r["report_id"] for r in storage.iter_reports("browser")]
        assert len(stored) == len(set(stored))  # exactly once
        assert acknowledged <= set(stored)
        assert set(stored) == all_recorded  # the queues delivered the rest
        incremental = storage.aggregates_by_day(campaign)
        assert sum(a.n for _, a in incremental) == len(stored)
        storage.rebuild_aggregates("browser")
        assert storage.aggregates_by_day(campaign) == incremental
