"""The leader's aggregation jobs: creating them, leasing them to one driver at a time, running them with the helper.

Aggregation job, as the leader runs it (crash-safe at every step):

1. ``create_jobs`` (one transaction): pending reports of a batch that are in no job get a new job id (a UUID),
   ``JOB_SIZE`` at a time, and the job row is written, before anything is sent;
2. a driver claims the job: it writes its lease (owner, expiry ``lease_seconds`` ahead) on the job row, and no
   other driver claims the job until the lease expires;
3. ``run_job``: the leader opens nothing (its share was opened and decoded at upload), runs verify_init on the
   whole job (``collector.vdaf_batch``), sends the job to the helper (``PUT /v1/peer/aggregation_jobs/<id>``) and
   reads the verifier messages;
4. in one transaction (``DistStore.finish_job``): unless the job is done already, its own output shares of the
   reports both accept are added to the batch's aggregate share, each report is marked ``aggregated`` or
   ``rejected`` (with the reason), the job ``done``.

A driver that stops (its leader stopped gracefully, ``Driver.stop``) gives its leases back: the job is free at once.
A driver killed between 2 and 4 (or one slower than its lease) leaves the job pending: once its lease expires another
driver, in this process or another one on the same database, claims it and sends the same job again; the helper
answers a job id it has committed with its stored answer, and step 4 writes nothing for a job already done, so every
report is counted once on each side.  A helper that does not answer leaves the job pending with its lease given back
(``attempts`` and ``last_error`` say why); the driver retries it with exponential backoff.

The driver (``driver.Driver``) runs in every gunicorn worker of every ``serve --role leader`` process; ``ldp-telemetry
run-jobs`` and collection claim jobs the same way.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from client_sdk.distributed_messages import JobEntry, ProtocolError, check_job_answer, from_b64url, job_request

from ...config import DEFAULTS
from ...storage import StorageBase
from ..aggregation import CampaignVdaf, Verified
from ..peer import PeerClient, PeerRefused, PeerUnavailable
from ..store import BatchKey, DistStore, failpoint
from .campaigns import campaign_vdaf

logger = logging.getLogger("collector")
JOB_SIZE = 1000  # reports per aggregation job
# Seconds a claimed job stays with its driver: after a crash, the wait before another driver takes it over.  Longer
# than a job takes (1,000 Histogram(1024) reports: a few seconds); a slower driver costs a second run, not a count.
LEASE_SECONDS: float = DEFAULTS["JOB_LEASE"]  # serve --job-lease (collector.config)


def lease_owner() -> str:
    "A name for a driver's leases: host and process (for operators), and a random part (unique per call)"
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def create_jobs(store: DistStore, key: BatchKey, job_size: int = JOB_SIZE) -> int:
    "Put the batch's pending reports that are in no job into new jobs; how many jobs"
    return store.create_jobs(key, job_size, lambda: str(uuid.uuid4()))


def run_job(storage: StorageBase, store: DistStore, peer: PeerClient, job_id: str, key: BatchKey) -> Counter:
    """Run one claimed job to the end (see the module doc); the outcome counts.  PeerUnavailable (retryable) and
    PeerRefused (permanent) leave it pending."""
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
        answers = _check_answer(peer.aggregation_job(job_id, body), body)
    outputs = _finish(vdaf, sent, answers, outcome)
    failpoint("leader-job-answered")

    def merge(count: int, share: bytes | None) -> tuple[int, bytes]:
        return count + len(outputs), vdaf.encode(vdaf.add(vdaf.decode(share), list(outputs.values())))

    if not store.finish_job(job_id, key, merge if outputs else None, list(outputs), outcome,
                            dict(Counter(outcome.values()))):
        return Counter()  # another driver finished it meanwhile
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
                job_size: int = JOB_SIZE, lease_seconds: float = LEASE_SECONDS, owner: str | None = None,
                stopping: threading.Event | None = None) -> RunSummary:
    """Put pending reports into jobs, then claim and run every pending job that no other driver holds, each at most
    once in this round.  The first PeerUnavailable stops the round (the helper is down: the driver backs off); a
    refused job stays pending with its error and the round goes on.

    :param owner: the name the leases are taken under (a driver's own, so that it can give them back when it
        stops: ``DistStore.release_leases``); default a new one
    :param stopping: once set, no further job is claimed"""
    summary = RunSummary()
    owner = owner or lease_owner()
    for batch in ([key] if key is not None else store.pending_batches()):
        create_jobs(store, batch, job_size)
    tried: list[str] = []
    try:
        while not (stopping and stopping.is_set()) and (
                claimed := store.claim_job(owner, lease_seconds, key, tried)) is not None:
            tried.append(claimed.job_id)
            try:
                counts = run_job(storage, store, peer, claimed.job_id, claimed.key)
            except Exception as exc:
                # in this process, not a crash: the lease goes back at once (a crash leaves it to expire)
                store.release_job(claimed.job_id, owner, str(exc))
                if not isinstance(exc, PeerRefused):
                    raise
                summary.errors.append(f"job {claimed.job_id}: {exc}")
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
