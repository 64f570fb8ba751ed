"""The distributed store: its tables come from the storage's versioned migrations (an older SQLite file is upgraded),
and aggregation jobs are leased to one driver at a time, on both backends."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
import time
import uuid

import pytest

from collector.distributed.leader import create_jobs, run_job
from collector.distributed.peer import PeerClient
from collector.distributed.store import DistStore
from collector.storage import LATEST_SCHEMA_VERSION, Storage, open_storage

from ..helpers import on_both_backends
from .kit import (
    PEER_TOKEN,
    Pair,
    encoded_report,
    exact_sum,
    honest_reports,
    opened,
    query,
    spec_json,
    truth,
    values_for,
)
from .test_processes import today

KEY = ("apps", "f" * 16, "2026-03-01")
HOLD_SECONDS = 0.5
# The distributed tables as the code before the shared migrations created them (their own version in dist_meta)
OLD_DDL = """
CREATE TABLE dist_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE dist_hpke_keys (config_id INTEGER PRIMARY KEY, private_key BLOB NOT NULL, created_day TEXT NOT NULL);
CREATE TABLE dist_campaigns (name TEXT NOT NULL, fingerprint TEXT NOT NULL, role TEXT NOT NULL,
    verify_key BLOB NOT NULL, helper_url TEXT, helper_hpke_config TEXT, state TEXT NOT NULL,
    PRIMARY KEY (name, fingerprint));
CREATE TABLE dist_agg_shares (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, batch TEXT NOT NULL,
    report_count INTEGER NOT NULL, share BLOB NOT NULL, PRIMARY KEY (campaign, fingerprint, batch));
CREATE TABLE dist_batches (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, batch TEXT NOT NULL,
    state TEXT NOT NULL, seed_own BLOB, seed_commitment BLOB, answer TEXT, PRIMARY KEY (campaign, fingerprint, batch));
CREATE TABLE dist_reports (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, public_share BLOB NOT NULL, leader_share BLOB NOT NULL, helper_share TEXT NOT NULL,
    job_id TEXT, state TEXT NOT NULL, error TEXT) WITHOUT ROWID;
CREATE INDEX idx_dist_reports_batch ON dist_reports (campaign, fingerprint, batch, state);
CREATE INDEX idx_dist_reports_job ON dist_reports (job_id);
CREATE INDEX idx_dist_reports_pending ON dist_reports (state, job_id);
CREATE TABLE dist_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT);
CREATE TABLE dist_rejections (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, batch TEXT NOT NULL,
    reason TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (campaign, fingerprint, batch, reason));
CREATE TABLE dist_releases (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, version INTEGER NOT NULL,
    batch TEXT NOT NULL, release TEXT NOT NULL, PRIMARY KEY (campaign, fingerprint, batch));
CREATE TABLE dist_helper_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, request_digest TEXT NOT NULL, response TEXT NOT NULL);
CREATE TABLE dist_helper_seen (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, job_id TEXT NOT NULL, valid INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO dist_meta VALUES ('schema_version', '1');
"""


def test_a_database_made_before_the_shared_migrations_opens_and_is_upgraded(tmp_path):
    path = tmp_path / "leader.db"
    with Storage(path) as storage:
        storage.migrate()
    with sqlite3.connect(path) as conn:  # back to what the older code left: collector schema 5 + its own tables
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'dist_%'")\
                .fetchall():
            conn.execute(f"DROP TABLE {table}")
        conn.executescript(OLD_DDL + "PRAGMA user_version = 5;")
        conn.execute("INSERT INTO dist_hpke_keys VALUES (7, x'01', '2026-03-01')")
        conn.execute("INSERT INTO dist_reports VALUES (x'00', 'apps', ?, '2026-03-01', x'aa', x'bb', '{}', 'job-1', "
                     "'pending', NULL)", (KEY[1],))
        conn.execute("INSERT INTO dist_jobs (job_id, campaign, fingerprint, batch, state) VALUES "
                     "('job-1', 'apps', ?, '2026-03-01', 'pending')", (KEY[1],))
    with open_storage(path) as storage:
        store = DistStore(storage)
        store.migrate()
        assert storage.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_SCHEMA_VERSION  # type: ignore
        tables = {r[0] for r in storage.conn.execute("SELECT name FROM sqlite_master")}  # type: ignore
        assert "dist_meta" not in tables
        assert [(k.config_id, k.private_key, k.seq) for k in store.hpke_keys()] == [(7, b"\x01", 0)]
        claimed = store.claim_job("driver-a", 30)  # the job of the old file, leased with the new columns
        assert claimed is not None and claimed.job_id == "job-1" and claimed.key == KEY
        assert [r.report_id for r in store.job_reports("job-1")] == [b"\x00"]
        store.migrate()  # idempotent


def pending_reports(store: DistStore, count: int) -> list[bytes]:
    ids = sorted(uuid.uuid4().bytes for _ in range(count))
    with store.transaction():
        assert store.insert_reports(KEY, [(rid, b"p", b"l", "{}") for rid in ids]) == count
    return ids


@on_both_backends
def test_a_claimed_job_is_claimed_by_no_other_driver_until_its_lease_expires(storage):
    store = DistStore(storage)
    pending_reports(store, 5)
    assert store.create_jobs(KEY, 3, lambda: str(uuid.uuid4())) == 2
    first = store.claim_job("driver-a", 10, now=1000.0)
    second = store.claim_job("driver-b", 10, now=1001.0)
    assert first is not None and second is not None and first.job_id != second.job_id
    assert store.claim_job("driver-c", 10, now=1009.0) is None  # both leased
    assert store.leased_jobs(KEY, now=1009.0) == 2
    taken_over = store.claim_job("driver-c", 10, now=1010.5)  # driver-a's lease has expired: it crashed, or is slow
    assert taken_over is not None and taken_over.job_id == first.job_id
    store.release_job(second.job_id, "driver-b", "helper unavailable")  # a failure in-process gives the lease back
    again = store.claim_job("driver-c", 10, now=1002.0)
    assert again is not None and again.job_id == second.job_id
    assert store.job_attempts(second.job_id) == (1, "helper unavailable")


@on_both_backends
def test_a_stopping_driver_gives_back_its_own_leases_only(storage):
    "release_leases frees the pending jobs of one owner at once; another driver's lease and a done job stay as they are"
    store = DistStore(storage)
    pending_reports(store, 9)
    store.create_jobs(KEY, 3, lambda: str(uuid.uuid4()))
    mine = [store.claim_job("driver-a", 60, now=1000.0) for _ in range(2)]
    other = store.claim_job("driver-b", 60, now=1000.0)
    assert all(mine) and other is not None
    assert store.finish_job(mine[1].job_id, KEY, None, [], {}, {})  # type: ignore[union-attr]
    assert store.release_leases("driver-a") == 1
    assert store.claim_job("driver-c", 60, now=1001.0) == mine[0]  # free at once, not after the lease
    assert store.claim_job("driver-c", 60, now=1001.0) is None  # driver-b's lease holds
    assert store.release_leases("driver-a") == 0


@on_both_backends
def test_a_collection_meeting_a_job_another_driver_is_claiming_is_not_refused(storage):
    """Another driver is claiming the batch's job (on PostgreSQL its row is locked, so the collection's claim skips
    it, and not yet leased), then finishes it: the collection looks again and the batch is done (before: 502
    job-refused naming a job nobody refused; test_robustness's concurrent collections met it)"""
    from collector.distributed.leader.collect import _finish_jobs

    class Unused:
        def request(self, method, path, body, headers):
            raise AssertionError("the job is another driver's: nothing is sent")

    class ClaimedElsewhere(DistStore):
        claims = 0

        def claim_job(self, *args, **kwargs):
            self.claims += 1
            if self.claims > 1:  # the other driver has finished it meanwhile
                assert self.finish_job(job_id, KEY, None, [], {}, {})
            return None

    store = ClaimedElsewhere(storage)
    pending_reports(store, 3)
    store.create_jobs(KEY, 10, lambda: str(uuid.uuid4()))
    ((job_id, _),) = store.pending_jobs(KEY)
    _finish_jobs(storage, store, PeerClient(Unused(), PEER_TOKEN, retries=0), KEY, timeout=30, lease_seconds=60)
    assert store.pending_jobs(KEY) == []


@on_both_backends
def test_a_collection_meeting_reports_another_process_is_putting_into_a_job_waits_for_them(storage):
    """Another process is putting the batch's reports into a job (on PostgreSQL they are skipped, SKIP LOCKED, and
    its job is not visible yet), then runs it: the collection waits for it (before: it found no pending job, went on
    with no aggregated report, answered batch-too-small and opened the batch again while the other one ran)"""
    from collector.distributed.leader.collect import _finish_jobs

    class Unused:
        def request(self, method, path, body, headers):
            raise AssertionError("the job is another process's: nothing is sent")

    class CreatedElsewhere(DistStore):
        rounds = 0

        def create_jobs(self, key, job_size, new_id):
            self.rounds += 1
            if self.rounds > 1:  # the other process has created and finished its job meanwhile
                assert super().create_jobs(key, job_size, new_id) == 1
                ((job_id, _),) = self.pending_jobs(key)
                assert self.finish_job(job_id, KEY, None, ids, {}, {})
            return 0

    store = CreatedElsewhere(storage)
    ids = pending_reports(store, 3)
    _finish_jobs(storage, store, PeerClient(Unused(), PEER_TOKEN, retries=0), KEY, timeout=30, lease_seconds=60)
    assert store.report_states(KEY) == {"aggregated": 3}


@on_both_backends
def test_a_collection_whose_job_the_helper_refuses_answers_502_naming_the_job(tmp_path):
    from collector.distributed.api import collect_status
    from collector.distributed.leader.collect import CollectError, _finish_jobs

    class Refusing:
        def request(self, method, path, body, headers):
            return 400, {"type": "urn:ldp-telemetry:problem:invalid-field", "detail": "not this job"}

    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram"))
    pair.upload(honest_reports(spec, block, values_for("histogram", 3)))
    key = (spec.name, spec.fingerprint, today())
    with open_storage(pair.leader_db) as storage:
        store = DistStore(storage)
        with pytest.raises(CollectError) as refused:
            _finish_jobs(storage, store, PeerClient(Refusing(), PEER_TOKEN, retries=0), key, timeout=30,
                         lease_seconds=60)
        ((job_id, _),) = store.pending_jobs(key)
    assert collect_status(refused.value) == 502 and refused.value.slug == "job-refused"
    assert f"job {job_id}: helper refused (400 invalid-field): not this job" in refused.value.detail


@on_both_backends
def test_a_job_run_by_two_drivers_is_counted_once(storage):
    "The driver whose lease expired finishes after the one that took over: its results are not added a second time"
    store = DistStore(storage)
    ids = pending_reports(store, 4)
    store.create_jobs(KEY, 10, lambda: "job-1")

    def merge(count: int, share: bytes | None) -> tuple[int, bytes]:
        return count + 4, (share or b"") + b"+4"

    results = [store.finish_job("job-1", KEY, merge, ids, {}, {}) for _ in range(2)]
    assert results == [True, False]
    assert store.agg_share(KEY) == (4, b"+4")
    assert store.report_states(KEY) == {"aggregated": 4}
    assert store.pending_jobs() == []


@on_both_backends
def test_reports_go_into_exactly_one_job_when_drivers_create_jobs_at_once(storage):
    "Several drivers create jobs for one batch concurrently: every report ends up in one job, none in two"
    store = DistStore(storage)
    ids = pending_reports(store, 200)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def create() -> None:
        try:
            with open_storage(storage.location) as own:
                barrier.wait()
                DistStore(own).create_jobs(KEY, 7, lambda: str(uuid.uuid4()))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    jobs = [[r.report_id for r in store.job_reports(job_id)] for job_id, _ in store.pending_jobs()]
    assert sorted(rid for job in jobs for rid in job) == ids  # each report once, in a job that exists
    assert all(jobs) and len(jobs) == -(-200 // 7)  # no job lost its reports to another (a job sent holds them)


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_postgres_claims_skip_a_job_another_driver_is_claiming(storage):
    "A claim does not wait for a job row another transaction holds (FOR UPDATE SKIP LOCKED): it takes the next job"
    store = DistStore(storage)
    pending_reports(store, 4)
    store.create_jobs(KEY, 2, lambda: str(uuid.uuid4()))
    first_job = store.pending_jobs()[0][0]
    with open_storage(storage.location) as other, other.transaction():
        other._one("SELECT job_id FROM dist_jobs WHERE job_id = ? FOR UPDATE", (first_job,))
        claimed = store.claim_job("driver-b", 10)
        assert claimed is not None and claimed.job_id != first_job


def overlap_helper_jobs(monkeypatch) -> None:
    """Hold the first helper job's transaction open (before its commit) until a second job request is in and has
    had time to run up to the lock or row it waits for: the two transactions overlap (PostgreSQL; on SQLite the
    held write lock would block the second request's rate-limit write, a test deadlock)"""
    from collector.distributed import helper

    arrived, both_in = [], threading.Event()
    parse = helper.parse_job_request

    def arriving(body):
        arrived.append(1)
        if len(arrived) == 2:
            both_in.set()
        return parse(body)

    def hold(name: str) -> None:
        if name == "helper-job-before-commit" and not getattr(hold, "held", False):
            hold.held = True  # type: ignore[attr-defined]
            both_in.wait(30)
            time.sleep(HOLD_SECONDS)  # the second request runs up to the lock it waits for

    monkeypatch.setattr(helper, "parse_job_request", arriving)
    monkeypatch.setattr(helper, "failpoint", hold)


@on_both_backends
def test_one_job_run_by_two_leader_processes_at_once_counts_each_report_once(tmp_path, monkeypatch, backend):
    """Two leader drivers send the same job to the helper at the same moment (one's lease expired while it was still
    running): the helper counts its reports once and answers both alike, and the leader adds them once.  On
    PostgreSQL the first helper transaction is held open until the second request is in, so that the two overlap
    (on SQLite the write lock serializes them: the second request's rate-limit write waits for the first commit)."""
    if backend == "postgresql":
        overlap_helper_jobs(monkeypatch)
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram"))
    values = values_for("histogram", 24)
    pair.upload(honest_reports(spec, block, values))
    key = (spec.name, spec.fingerprint, today())
    with opened(pair.leader_db) as store:
        create_jobs(store, key)
        ((job_id, _),) = store.pending_jobs()
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def driver() -> None:
        with open_storage(pair.leader_db) as storage:
            barrier.wait()
            try:
                outcomes.append(run_job(storage, DistStore(storage), PeerClient(pair.transport, PEER_TOKEN, retries=0),
                                        job_id, key))
            except BaseException as exc:  # noqa: BLE001 (reported below)
                outcomes.append(exc)

    threads = [threading.Thread(target=driver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(sum(counts.values()) for counts in outcomes) == [0, 24], outcomes  # type: ignore[attr-defined]
    assert exact_sum(pair.leader_db, pair.helper_db, spec, today()) == (24, 24, truth("histogram", values))
    assert query(pair.helper_db, "SELECT count(*) FROM dist_helper_jobs") == [(1,)]


def jobs_of_two_batches_at_once(tmp_path, monkeypatch, backend: str, job_ids: list[str]) -> tuple[Pair, list, list]:
    """A malicious leader puts 12 reports (sealed without a batch, as devices of earlier versions do: they open in any
    batch) into two jobs (ids ``job_ids``), one of today's batch and one of yesterday's, and sends both at once (on
    PostgreSQL the two helper transactions, each locking its own batch, overlap).  The pair, the two answers (status,
    body) or exceptions, and the helper's report count of each batch."""
    from collector.distributed.peer import PeerUnavailable

    if backend == "postgresql":
        overlap_helper_jobs(monkeypatch)
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram"))
    pair.upload([encoded_report(spec, block, [1, 0, 0, 0]) for _ in range(12)])
    key = (spec.name, spec.fingerprint, today())
    sent: list[dict] = []

    class Recording:
        "The leader's job request, kept and not delivered"

        def request(self, method, path, body, headers):
            sent.append(body)
            return 503, None

    with open_storage(pair.leader_db) as storage:
        store = DistStore(storage)
        create_jobs(store, key)
        ((job_id, _),) = store.pending_jobs()
        with pytest.raises(PeerUnavailable):
            run_job(storage, store, PeerClient(Recording(), PEER_TOKEN, retries=0), job_id, key)
    other_day = (dt.date.fromisoformat(today()) - dt.timedelta(days=1)).isoformat()
    bodies = [sent[0], {**sent[0], "batch": other_day}]
    peer = {"Authorization": f"Bearer {PEER_TOKEN}"}
    barrier = threading.Barrier(2)
    answers: list[object] = []

    def malicious_leader(job: str, body: dict) -> None:
        client = pair.helper_app.test_client()
        barrier.wait()
        try:
            response = client.put(f"/v1/peer/aggregation_jobs/{job}", json=body, headers=peer)
            answers.append((response.status_code, response.get_json()))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            answers.append(exc)

    threads = [threading.Thread(target=malicious_leader, args=pair_) for pair_ in zip(job_ids, bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with opened(pair.helper_db) as helper_store:
        counts = [helper_store.agg_share((*key[:2], day))[0] for day in (today(), other_day)]
    return pair, answers, counts


@on_both_backends
def test_one_report_id_in_jobs_of_two_batches_at_once_is_a_replay_never_a_5xx(tmp_path, monkeypatch, backend):
    """The second job is a replay (``report-replayed``), never a 500 (the second's insert of the report ids met the
    first's), and the helper counts each report once."""
    pair, answers, counts = jobs_of_two_batches_at_once(tmp_path, monkeypatch, backend,
                                                        [str(uuid.uuid4()), str(uuid.uuid4())])
    assert all(isinstance(a, tuple) and a[0] == 200 for a in answers), answers
    results = [[r.get("error", "continue") for r in a[1]["reports"]] for a in answers]  # type: ignore[index]
    assert sorted(results) == [["continue"] * 12, ["report-replayed"] * 12], results
    assert query(pair.helper_db, "SELECT count(*) FROM dist_helper_seen") == [(12,)]
    assert sorted(counts) == [0, 12]


@on_both_backends
def test_one_job_id_for_two_batches_at_once_is_refused_never_a_5xx(tmp_path, monkeypatch, backend):
    """The same job id with two bodies (two batches) at once: one is answered, the other refused 409 ``job-mismatch``
    naming the job id, never a 500 (the second's insert of the job id met the first's), and nothing of it is kept"""
    job_id = str(uuid.uuid4())
    pair, answers, counts = jobs_of_two_batches_at_once(tmp_path, monkeypatch, backend, [job_id, job_id])
    assert all(isinstance(a, tuple) for a in answers), answers
    statuses = sorted(a[0] for a in answers)  # type: ignore[index]
    assert statuses == [200, 409], answers
    refused = next(a[1] for a in answers if a[0] == 409)  # type: ignore[index]
    assert refused["type"].endswith("job-mismatch") and refused["field"] == "job_id"
    assert query(pair.helper_db, "SELECT count(*) FROM dist_helper_jobs") == [(1,)]
    assert sorted(counts) == [0, 12]
