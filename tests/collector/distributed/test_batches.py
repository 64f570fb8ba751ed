"""One report per device per batch, against two real ``serve --role`` processes on loopback.

A release is (epsilon, delta)-DP for one report replaced, so one device must be one report in a batch.  Before,
the device's policy counted days on its own clock while the leader put each report in its own day of receipt: a
device one day behind put two reports into one batch (its ledger: epsilon 2.0, reports 2).  Now the report names
its batch (sealed into both shares' HPKE info), the leader puts it there, and the device's ledger allows one
report per batch and only later batches after it."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import client_sdk
from client_sdk.clock import utc_today
from client_sdk.distributed import seal_report
from client_sdk.vdaf.hpke import HpkeConfig

from ..helpers import on_both_backends
from .kit import query, spec_json
from .test_dishonest_leader import DishonestLeader
from .test_processes import Aggregators

pytestmark = on_both_backends  # each test on SQLite files and on PostgreSQL databases

DAY = 86_400


def batches_of(leader_db, spec: client_sdk.Spec) -> dict[str, int]:
    "Reports per batch on the leader"
    rows = query(leader_db, "SELECT batch, count(*) FROM dist_reports WHERE campaign = ? AND fingerprint = ? "
                 "GROUP BY batch", (spec.name, spec.fingerprint))
    return {batch: count for batch, count in rows}


class Clock:
    def __init__(self, offset: float) -> None:
        self.offset = offset

    def __call__(self) -> float:
        return time.time() + self.offset


def test_a_device_a_day_behind_puts_one_report_in_each_batch(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=60):
        spec, _ = servers.create(spec_json("histogram", name="skewed"))
        clock = Clock(-DAY)  # the device's clock is a day behind the leader's
        client = client_sdk.Client(servers.leader_url, servers.ingest, tmp_path / "device", background=False,
                                   campaigns=[spec.name], policy=client_sdk.ReportPolicy.unlimited(), clock=clock,
                                   aggregators={"helper": servers.helper_url})
        try:
            assert client.record(spec.name, "a")
            assert client.record(spec.name, "b").status is client_sdk.RecordStatus.REFUSED_BY_POLICY  # same batch
            clock.offset = 0  # its day turns while the leader's has not
            assert client.record(spec.name, "c")
            clock.offset = -2 * DAY  # set back: a batch it reported to already is never reached again
            assert client.record(spec.name, "d").status is client_sdk.RecordStatus.REFUSED_BY_POLICY
            clock.offset = 0
            result = client.flush(timeout=60)
            spent = client.spent(spec.name)
        finally:
            client.close(timeout=0)
        assert result.sent == 2 and not result.rejected, result
        today = dt.datetime.now(dt.timezone.utc).date()
        yesterday = (today - dt.timedelta(days=1)).isoformat()
        assert batches_of(servers.leader_db, spec) == {yesterday: 1, today.isoformat(): 1}
        assert (spent.reports, spent.epsilon, spent.delta, spent.last_batch) == (2, 2.0, 2e-6, today.isoformat())


def test_the_leader_refuses_a_batch_far_in_the_future_or_collected_and_cannot_move_a_report(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=60):
        spec, block = servers.create(spec_json("histogram", name="named", min_batch=2))
        leader = HpkeConfig.from_dict(block["leader"]["hpke_config"])
        helper = HpkeConfig.from_dict(block["helper"]["hpke_config"])
        today = dt.datetime.now(dt.timezone.utc).date()

        def report(batch: str) -> dict:
            report_id = str(uuid.uuid4())
            return {"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                    "payload": seal_report(spec, "a", leader, helper, report_id=report_id, batch=batch)}

        far = (today + dt.timedelta(days=2)).isoformat()
        answer = servers.upload([report(far), report((today + dt.timedelta(days=1)).isoformat())])
        assert answer["accepted"] == 1 and answer["errors"][0]["field"].endswith("payload.batch")
        assert "batch-in-future" in answer["errors"][0]["reason"]
        # a report whose batch was altered on the way no longer opens at the leader
        altered = report(today.isoformat())
        altered["payload"]["batch"] = (today - dt.timedelta(days=1)).isoformat()
        answer = servers.upload([altered])
        assert answer["accepted"] == 0 and answer["errors"][0]["field"].endswith("payload.leader_share.ciphertext")
        past = (today - dt.timedelta(days=2)).isoformat()  # ended more than the collection grace ago
        assert servers.upload([report(past), report(past)])["accepted"] == 2
        status, release = servers.collect_batch(spec.name, past)
        assert status == 200 and release["report_count"] == 2, release
        answer = servers.upload([report(past)])
        assert answer["accepted"] == 0 and "collected" in answer["errors"][0]["reason"]


def test_a_dishonest_leader_cannot_move_a_report_to_another_batch(tmp_path, monkeypatch):
    "The helper opens a share only under the batch the device sealed it for"
    spec = client_sdk.load_spec(spec_json("histogram", name="moved", min_batch=2))
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        leader = DishonestLeader(servers.helper_url, spec)
        moved, kept = (leader.honest_report("a", "2026-01-01") for _ in range(2))
        assert leader.job_outcome("2026-01-02", *moved) == "hpke-decrypt-error"
        assert leader.job_outcome("2026-01-01", *kept) == "continue"


def test_a_device_lagging_more_than_the_grace_counts_its_refused_report(tmp_path, monkeypatch):
    """A device whose clock lags the leader's by more than the collection grace names a batch collected already:
    the leader refuses it batch-collected by name (never moves it), and the device drops it and counts it"""
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=60):
            spec, block = servers.create(spec_json("histogram", name="late", min_batch=2))
            leader = HpkeConfig.from_dict(block["leader"]["hpke_config"])
            helper = HpkeConfig.from_dict(block["helper"]["hpke_config"])
            day = utc_today()
            reports = []
            for value in ("a", "b"):
                report_id = str(uuid.uuid4())
                reports.append({"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                                "payload": seal_report(spec, value, leader, helper, report_id=report_id, batch=day)})
            assert servers.upload(reports)["accepted"] == 2
        servers.end_day()  # the leader's clock: the next day, past the grace
        with servers.leader(monkeypatch, interval=60):
            status, release = servers.collect_batch(spec.name, day)
            assert status == 200 and release["report_count"] == 2, release
            client = client_sdk.Client(servers.leader_url, servers.ingest, tmp_path / "device", background=False,
                                       campaigns=[spec.name], aggregators={"helper": servers.helper_url})
            try:
                assert client.record(spec.name, "c")  # its clock: still the day just collected
                result = client.flush(timeout=60)
                status_after = client.status()
            finally:
                client.close(timeout=0)
    assert result.sent == 0 and result.rejected == 1, result
    assert status_after.dropped["rejected_batch_collected"] == 1 and status_after.pending == 0
    assert batches_of(servers.leader_db, spec) == {day: 2}
