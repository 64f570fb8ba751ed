"""The leader's aggregation jobs: creating them, running them with the helper, and the lock that serialises it.

Aggregation job, as the leader runs it (crash-safe at every step):

1. ``create_jobs`` (one transaction): pending reports of a batch that are in no job get a new job id (a UUID),
   ``JOB_SIZE`` at a time, and the job row is written, before anything is sent;
2. ``run_job``: the leader opens nothing (its share was opened and decoded at upload), runs verify_init on the
   whole job (``collector.vdaf_batch``), sends the job to the helper (``PUT /v1/peer/aggregation_jobs/<id>``) and
   reads the verifier messages;
3. in one transaction: its own output shares of the reports both accept are added to the batch's aggregate share,
   each report is marked ``aggregated`` or ``rejected`` (with the reason), the job ``done``.

A leader killed between 1 and 3 sends the same job again on restart; the helper answers a job id it has committed
with its stored answer, so every report is counted once on each side.  A helper that does not answer leaves the
job pending (``attempts`` and ``last_error`` say why); the driver retries it with exponential backoff.

The driver (``driver.Driver``) runs in every gunicorn worker of ``serve --role leader``; a file lock
(``<database>.aggregator-lock``) lets one of them work at a time, and ``ldp-telemetry aggregate`` and collection take
the same lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from client_sdk.distributed_messages import JobEntry, ProtocolError, check_job_answer, from_b64url, job_request

from ...storage import StorageBase
from ..aggregation import CampaignVdaf, Verified
from ..peer import PeerClient, PeerRefused, PeerUnavailable
from ..store import BatchKey, DistStore, failpoint
from .campaigns import campaign_vdaf

logger = logging.getLogger("collector")
JOB_SIZE = 1000  # reports per aggregation job


def create_jobs(store: DistStore, key: BatchKey, job_size: int = JOB_SIZE) -> int:
    "Put the batch's pending reports that are in no job into new jobs; how many jobs"
    jobs = 0
    with store.transaction() as conn:
        ids = [bytes(r[0]) for r in conn.execute(
            "SELECT report_id FROM dist_reports WHERE campaign = ? AND fingerprint = ? AND batch = ? AND "
            "state = 'pending' AND job_id IS NULL ORDER BY report_id", key)]
        for start in range(0, len(ids), job_size):
            job_id = str(uuid.uuid4())
            conn.execute("INSERT INTO dist_jobs (job_id, campaign, fingerprint, batch, state) VALUES (?, ?, ?, ?, "
                         "'pending')", (job_id, *key))
            conn.executemany("UPDATE dist_reports SET job_id = ? WHERE report_id = ?",
                             [(job_id, rid) for rid in ids[start:start + job_size]])
            jobs += 1
    return jobs


def run_job(storage: StorageBase, store: DistStore, peer: PeerClient, job_id: str, key: BatchKey) -> Counter:
    "Run one job to the end (see the module doc); the outcome counts.  PeerUnavailable leaves it pending."
    campaign = storage.find_version(key[0], key[1])
    assert campaign is not None
    found = campaign_vdaf(store, campaign.spec)
    assert found is not None
    _, vdaf = found
    reports = store.job_reports(job_id)
    verified = vdaf.verify_init(0, [(r.report_id, r.public_share, r.leader_share) for r in reports])
    sent = [(r, v) for r, v in zip(reports, verified) if v.error is None]
    outcome: dict[bytes, str] = {r.report_id: ProtocolError.INVALID_MESSAGE
                                 for r, v in zip(reports, verified) if v.error}
    body = job_request(*key, [JobEntry(str(uuid.UUID(bytes=r.report_id)), r.public_share, r.helper_share,
                                       vdaf.vdaf.encode_verifier_share(v.verifier_share)) for r, v in sent])
    answers: list[dict] = []
    if sent:
        try:
            answers = _check_answer(peer.aggregation_job(job_id, body), body)
        except (PeerUnavailable, PeerRefused) as exc:
            with store.transaction() as conn:
                conn.execute("UPDATE dist_jobs SET attempts = attempts + 1, last_error = ? WHERE job_id = ?",
                             (str(exc)[:500], job_id))
            raise
    outputs = _finish(vdaf, sent, answers, outcome)
    failpoint("leader-job-answered")
    with store.transaction() as conn:
        if conn.execute("SELECT state FROM dist_jobs WHERE job_id = ?", (job_id,)).fetchone()[0] == "done":
            return Counter()  # another process finished it meanwhile
        count, share = store.agg_share(key, conn)
        if outputs:
            total = vdaf.add(vdaf.decode(share), list(outputs.values()))
            DistStore.put_agg_share(conn, key, count + len(outputs), vdaf.encode(total))
        done = "public_share = x'', leader_share = x'', helper_share = ''"  # kept no longer than needed
        conn.executemany(f"UPDATE dist_reports SET state = 'aggregated', {done} WHERE report_id = ?",
                         [(rid,) for rid in outputs])
        conn.executemany(f"UPDATE dist_reports SET state = 'rejected', error = ?, {done} WHERE report_id = ?",
                         [(error, rid) for rid, error in outcome.items()])
        DistStore.count_rejections(conn, key, dict(Counter(outcome.values())))
        conn.execute("UPDATE dist_jobs SET state = 'done', attempts = attempts + 1, last_error = NULL "
                     "WHERE job_id = ?", (job_id,))
    return Counter({"aggregated": len(outputs), "rejected": len(outcome)})


def _check_answer(answer: Any, body: dict) -> list[dict]:
    try:
        return check_job_answer(answer, body)
    except ValueError as exc:
        raise PeerUnavailable(str(exc)) from None


def _finish(vdaf: CampaignVdaf, sent: list[tuple[Any, Verified]], answers: list[dict],
            outcome: dict[bytes, str]) -> dict[bytes, list[int]]:
    "The leader's output shares of the reports the helper accepted; the others' reasons go to ``outcome``"
    outputs = {}
    for (report, mine), answer in zip(sent, answers):
        if answer.get("result") != "continue":
            outcome[report.report_id] = str(answer.get("error", ProtocolError.REJECTED_BY_HELPER))[:100]
            continue
        try:
            message = vdaf.vdaf.decode_verifier_message(from_b64url(answer.get("verifier_message"), "verifier_message"))
            out_share = vdaf.vdaf.verify_next(vdaf.ctx, mine.state, message)
        except ValueError:
            # The helper counted it (its joint randomness check passed, ours did not): as in DAP the two views now
            # differ, and collection of this batch will refuse with batch-mismatch.  Needs a malicious device that
            # also beats the proof's soundness.
            logger.warning("report %s: verifier message rejected by the leader after the helper accepted it",
                           uuid.UUID(bytes=report.report_id))
            outcome[report.report_id] = ProtocolError.JOINT_RANDOMNESS_MISMATCH
            continue
        outputs[report.report_id] = vdaf.contribution(out_share)
    return outputs


@dataclass
class RunSummary:
    jobs_done: int = 0
    aggregated: int = 0
    rejected: int = 0
    pending_jobs: int = 0
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"jobs_done": self.jobs_done, "aggregated": self.aggregated, "rejected": self.rejected,
                "pending_jobs": self.pending_jobs, "errors": self.errors}


def run_pending(storage: StorageBase, store: DistStore, peer: PeerClient, key: BatchKey | None = None, *,
                job_size: int = JOB_SIZE) -> RunSummary:
    """Put pending reports into jobs and run every pending job once.  The first PeerUnavailable stops the round
    (the helper is down: the driver backs off); a refused job stays pending with its error and the round goes on."""
    summary = RunSummary()
    for batch in ([key] if key is not None else store.pending_batches()):
        create_jobs(store, batch, job_size)
    try:
        for job_id, batch in store.pending_jobs(key):
            try:
                counts = run_job(storage, store, peer, job_id, batch)
            except PeerRefused as exc:
                summary.errors.append(f"job {job_id}: {exc}")
                continue
            summary.jobs_done += 1
            summary.aggregated += counts["aggregated"]
            summary.rejected += counts["rejected"]
    except PeerUnavailable as exc:
        summary.errors.append(str(exc))
        summary.pending_jobs = len(store.pending_jobs(key))
        raise PendingWork(summary) from exc
    summary.pending_jobs = len(store.pending_jobs(key))
    return summary


class PendingWork(PeerUnavailable):
    "The helper did not answer; jobs remain pending (``summary``)"

    def __init__(self, summary: RunSummary) -> None:
        super().__init__("; ".join(summary.errors) or "helper unavailable")
        self.summary = summary


@contextmanager
def aggregator_lock(database: str, timeout: float | None = None) -> Iterator[bool]:
    "The file lock that lets one process at a time run jobs; yields False if not taken within ``timeout``"
    fd = os.open(f"{database}.aggregator-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.01)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

