"""The shuffler's forwarding loop: batches formed when due, sent, and deleted once the collector acknowledged them.

One forwarder per database runs at a time (an ``flock`` on ``<database>.forwarder-lock``; in every gunicorn worker
a thread waits for it, so a killed worker's role passes to another).  Each round it first sends again the batches
formed before and not acknowledged (after a crash or a failed request: the collector stores each report id once
and records each batch id once, so a resend adds nothing), then forms a batch for every campaign version that is
due (``ShuffleParams.due``: ``shuffle_batch`` reports, or its time limit with ``short_batch: "send"``), of
``shuffle_batch`` reports each (a short batch: those waiting); reports beyond a whole batch wait for the next.
Up to ``PIPELINE`` batches are in flight at once, one request each, so forming the next overlaps the collector
storing the last.
A batch is deleted only after the collector's 200, so every acknowledged report reaches the collector exactly once,
or after its 409 ``budget-exhausted`` (the campaign's budget is spent: the collector stored none of them; they are
discarded, never released).  The settled batches are deleted in the transaction that forms the next batch (or at
the round's end): a crash between the two resends them, which adds nothing at the collector.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from client_sdk.kinds.shuffle_params import shuffle_rule

from ..config import DEFAULTS
from ..storage import StorageBase, is_database_url, open_storage
from .queue import Batch, ShuffleQueue
from .upstream import BudgetSpent, Upstream, UpstreamError

logger = logging.getLogger("collector.shuffler")
SCRUB_INTERVAL = 5.0  # seconds between two truncations of the WAL while batches are forwarded
RETRY_CAP = 30.0
PIPELINE = 4  # batches in flight at once: forming and reading the next overlaps the collector storing one
FAILPOINT_ENV = "LDP_FAILPOINT"


def failpoint(name: str) -> None:
    "Crash tests: when ``LDP_FAILPOINT`` names this point, SIGKILL the shuffler's process group here"
    if os.environ.get(FAILPOINT_ENV) == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


def lock_path(database: str) -> str:
    "The forwarder's lock file: beside a SQLite database; in the temporary directory for a PostgreSQL URL"
    if is_database_url(database):
        digest = hashlib.sha256(database.encode()).hexdigest()[:16]
        return os.path.join(tempfile.gettempdir(), f"ldp-shuffler-{digest}.forwarder-lock")
    return f"{database}.forwarder-lock"


class Forwarder:
    "The loop of :func:`forward_round`, in a daemon thread that holds the forwarder lock while it runs"

    def __init__(self, database: str, upstream: Upstream, *, interval: float = DEFAULTS["FORWARD_INTERVAL"],
                 clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self.upstream = upstream
        self.interval = interval
        self.clock = clock
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ldp-shuffler-forwarder", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        fd = os.open(lock_path(self.database), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while not self.stopping.is_set():
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self.stopping.wait(1.0)
                    continue
                try:
                    self._forward_while_held()
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _forward_while_held(self) -> None:
        backoff = self.interval
        with open_storage(self.database) as storage:
            queue = ShuffleQueue(storage)
            scrubbed = self.clock()
            while not self.stopping.is_set():
                try:
                    sent = forward_round(queue, self.upstream, self.clock())
                    backoff = self.interval
                except UpstreamError as exc:
                    logger.warning("forwarding paused: %s", exc)
                    backoff = min(RETRY_CAP, backoff * 2)
                    sent = 0
                except Exception:  # noqa: BLE001 (a storage fault: the loop goes on, nothing is lost)
                    logger.exception("forwarding round failed")
                    backoff = min(RETRY_CAP, backoff * 2)
                    sent = 0
                if sent and self.clock() - scrubbed >= SCRUB_INTERVAL:
                    queue.scrub()
                    scrubbed = self.clock()
                if not sent:
                    if scrubbed < self.clock() - SCRUB_INTERVAL and queue.count() == 0:
                        queue.scrub()
                        scrubbed = self.clock()
                    self.stopping.wait(backoff)


def forward_round(queue: ShuffleQueue, upstream: Upstream, now: float, *, pipeline: int = PIPELINE) -> int:
    """Send the unacknowledged batches, then form and send the due ones; how many reports were acknowledged.

    Up to ``pipeline`` batches are in flight at once (each its own request, in a thread of a pool): while the
    collector stores one, this thread forms and reads the next.  A batch is deleted only once its own request was
    acknowledged, in this thread, so an interrupted round leaves every unacknowledged batch to be sent again."""
    in_flight: deque[tuple[Batch, Future]] = deque()
    done: list[str] = []  # settled batches, deleted with the next batch formed (one commit) or at the round's end
    sent = 0
    with ThreadPoolExecutor(max_workers=pipeline, thread_name_prefix="ldp-shuffler-send") as pool:
        try:
            for batch_id in _batches_to_send(queue, upstream, now, done):
                batch = queue.batch(batch_id)
                if not batch.size:
                    done.append(batch_id)
                    continue
                in_flight.append((batch, pool.submit(upstream.forward, batch_id, batch.reports_json)))
                if len(in_flight) >= pipeline:
                    sent += _settle(*in_flight.popleft(), done)
            while in_flight:
                sent += _settle(*in_flight.popleft(), done)
        finally:
            for _, future in in_flight:  # a failed round: the others' answers are awaited, their batches kept
                future.cancel()
            queue.delete_batches(done)
    return sent


def _batches_to_send(queue: ShuffleQueue, upstream: Upstream, now: float, done: list[str]) -> Iterator[str]:
    "The unacknowledged batches, then each due version's batches as they are formed (deleting those ``done``)"
    yield from queue.batches()
    for waiting in queue.waiting():
        spec = upstream.spec(waiting.campaign, waiting.fingerprint)
        rule = None if spec is None else shuffle_rule(spec)
        if rule is None:
            continue  # the collector refuses them; they wait (nothing is dropped unacknowledged)
        if not rule.due(waiting.queued, now - waiting.opened):
            continue
        most, left = rule.shuffle_batch, waiting.queued
        while True:
            formed = queue.form_batch(waiting.campaign, waiting.fingerprint, most, now, forget=done)
            done.clear()
            if formed is None:
                break
            failpoint("shuffler-after-form")  # a batch formed, not yet sent
            left -= most  # reports that came meanwhile wait for the next round
            yield formed
            if left < rule.shuffle_batch:
                break


def _settle(batch: Batch, answer: Future, done: list[str]) -> int:
    """Wait for one batch's request: once acknowledged (or refused past its budget) it is ``done``, to be deleted.
    Until then a crash leaves it to be sent again under its id, which the collector stores once."""
    try:
        counts = answer.result()
    except BudgetSpent as exc:  # the campaign's budget is spent: these reports are never to be released
        logger.warning("discarding a batch of %d reports of %s: %s", batch.size, batch.campaign, exc)
        done.append(batch.batch_id)
        return 0
    failpoint("shuffler-after-forward")  # acknowledged by the collector, not yet deleted here
    if counts.get("rejected"):
        logger.warning("the collector rejected %d reports of a forwarded batch of %d: %s",
                       counts["rejected"], batch.size, counts.get("errors", [])[:3])
    done.append(batch.batch_id)
    return batch.size


def run_once(database: str, upstream: Upstream, now: float | None = None) -> int:
    "One forwarding round over ``database`` (tests and tools)"
    storage: StorageBase
    with open_storage(database) as storage:
        return forward_round(ShuffleQueue(storage), upstream, time.time() if now is None else now)
