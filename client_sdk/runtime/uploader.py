"""The uploader: deliver queued reports in batches, one campaign per request, with backoff.

A report leaves the queue only when the collector's 2xx answer acknowledges it (the counts add up to the batch;
rejected reports are named with a reason) or a queue limit drops it.  Any other answer (401, 403, 404, 3xx, other
4xx, 5xx, a 2xx that is not the expected JSON, such as a captive portal's page) keeps the batch, backs off
(exponential with full jitter, at least Retry-After) and sets the delivery condition.  413 halves the batch, which
grows back after successes, never above the ``max_reports`` a 413 states (a public key's smaller limit).  A retry
resends the same queued JSON (same report_id, same draw), so the collector's duplicate detection makes retries safe.
The spec cache's fetches share this backoff and condition.
"""

from __future__ import annotations

import gzip
import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ..distributed_messages import ProtocolError
from .answers import acknowledgement, condition_for, max_reports, problem, retry_after
from .queue import ReportQueue
from .state_file import StateFile
from .status import FlushResult
from .transport import Request, Response, TransportError

logger = logging.getLogger("client_sdk")
GZIP_MIN_BYTES = 2048
# Distributed reports the leader refused for their batch (each names one, sealed into its shares: never moved to
# another): collected already (the device's clock lagged by more than the leader's collection grace, or it stayed
# offline past it), or too far ahead of the leader's clock.  Counted by name (``status().dropped``)
# Distributed reports the leader refused for their batch (each names one, sealed into its shares: never moved to
# another): collected already (the device's clock lagged by more than the leader's collection grace, or it stayed
# offline past it), or too far ahead of the leader's clock.  Counted by name (``status().dropped``)
BATCH_REJECTIONS = {ProtocolError.BATCH_COLLECTED: "rejected_batch_collected",
                    ProtocolError.BATCH_IN_FUTURE: "rejected_batch_in_future"}

Send = Callable[[Request, "float | None"], Response]


class Jitter(Protocol):
    "Where backoff delays come from: anything with ``uniform(a, b)`` (``random.Random`` in tests)"

    def uniform(self, a: float, b: float) -> float: ...


class SecureJitter:
    "Uniform delays from the OS CSPRNG (the device path imports no ``random``)"

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * secrets.randbits(53) / (1 << 53)


class Uploader:
    """Sends the queue's batches and keeps the delivery state: backoff, condition, acknowledged totals.

    ``lock`` serialises sending (the background sender and ``flush()``); every send counts under it."""

    def __init__(self, url: str, headers: dict[str, str], queue: ReportQueue, state: StateFile, send: Send, *,
                 batch_size: int, max_request_bytes: int, timeout: float, backoff_base: float, backoff_cap: float,
                 clock: Callable[[], float], sleep: Callable[[float], None], jitter: Jitter | None,
                 on_condition: Callable[[str | None, str | None], None] | None,
                 upload_enabled: Callable[[], bool], closed: Callable[[], bool]) -> None:
        self.url, self.headers, self.queue, self.state, self.send = url, headers, queue, state, send
        self.batch_size, self.max_request_bytes, self.timeout = batch_size, max_request_bytes, timeout
        self.backoff_base, self.backoff_cap = backoff_base, backoff_cap
        self.clock, self.sleep = clock, sleep
        self.jitter: Jitter = jitter or SecureJitter()
        self.on_condition = on_condition
        self.upload_enabled, self.closed = upload_enabled, closed
        self.lock = threading.Lock()
        self.batch_limit = batch_size
        self.batch_cap: int | None = None  # the key's max_reports, once a 413 states it
        self.failures = 0
        self.next_attempt = 0.0
        self.condition: str | None = None
        self.detail: str | None = None
        self.sent = self.rejected = 0
        self.pending_counters: dict[str, int] = {}  # rejections of the acknowledged reports not yet removed
        self.flushed_totals = (0, 0)  # sent and rejected when the last flush ended: flush() reports the rest

    def account_background(self, result: FlushResult) -> None:
        """What the background sender got acknowledged since the last flush ended (call holding ``lock``, under
        which every send counts)"""
        sent, rejected = self.flushed_totals
        result.background_sent = self.sent - sent - result.sent
        result.background_rejected = self.rejected - rejected - result.rejected
        self.flushed_totals = (self.sent, self.rejected)

    def deliver(self, result: FlushResult, deadline: float, retry: bool) -> None:
        """Send until the queue is empty or the deadline (a ``time.monotonic()`` value), waiting out backoffs if
        ``retry``, else stopping at the first failure.  Call holding ``lock``."""

        def step(campaign: str, acknowledged: list[str]) -> bool:
            wait = self.next_attempt - self.clock()
            if wait > 0 and retry:
                if time.monotonic() + wait > deadline:
                    return False
                self.remove(acknowledged)
                self.sleep(wait)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.upload_enabled():
                return False
            return self.send_batch(campaign, result, min(self.timeout, remaining), acknowledged) or retry

        self._rounds(self.upload_enabled, step)

    def background_pass(self) -> None:
        "The background sender's delivery: until the queue is empty, a failure, or the client closes"
        result = FlushResult()

        def step(campaign: str, acknowledged: list[str]) -> bool:
            if self.closed() or not self.upload_enabled() or self.clock() < self.next_attempt:
                return False
            return self.send_batch(campaign, result, self.timeout, acknowledged)

        with self.lock:
            self._rounds(lambda: not self.closed() and self.upload_enabled(), step)

    def _rounds(self, go_on: Callable[[], bool], step: Callable[[str, list[str]], bool]) -> None:
        """One campaign per request, campaigns in a random order, round after round while ``go_on()`` and until the
        queue is empty or ``step`` (which sends one campaign's batch) says stop; the reports acknowledged in a round
        leave the queue together at its end (or before a backoff wait)"""
        while go_on():
            campaigns = shuffled(self.queue.campaigns())
            if not campaigns:
                return
            acknowledged: list[str] = []
            try:
                for campaign in campaigns:
                    if not step(campaign, acknowledged):
                        return
            finally:
                self.remove(acknowledged)

    def remove(self, acknowledged: list[str]) -> None:
        """Take acknowledged reports off the queue (one statement, no fsync: see ReportQueue.remove), counting their
        rejections in the same transaction (if it fails, the reports stay queued and are counted when resent)"""
        try:
            if acknowledged:
                self.queue.remove(acknowledged, self.pending_counters)
        finally:
            acknowledged.clear()
            self.pending_counters.clear()

    def send_batch(self, campaign: str, result: FlushResult, timeout: float,
                   acknowledged: list[str] | None = None) -> bool:
        """Send the oldest batch of ``campaign``; False if the attempt failed (the batch stays, a backoff is set).
        The reports the answer acknowledges leave the queue now, or are added to ``acknowledged`` for the caller
        to remove (they are then sent again only if the device dies first: the collector counts them as
        duplicates)"""
        batch = self.queue.peek(self.batch_limit, self.max_request_bytes, campaign)
        if not batch:
            return True
        body = ('{"reports":[' + ",".join(r.text for r in batch) + "]}").encode()
        headers = {**self.headers, "Content-Type": "application/json"}
        if len(body) >= GZIP_MIN_BYTES:
            body, headers["Content-Encoding"] = gzip.compress(body, 6), "gzip"
        ids = [r.report_id for r in batch]
        try:
            response = self.send(Request("POST", f"{self.url}/v1/reports", headers, body), timeout)
        except TransportError as exc:
            self.fail("unreachable", str(exc), None)
            return False
        if 200 <= response.status < 300:
            verdict = acknowledgement(response, ids)
            if isinstance(verdict, str):
                self.fail("unexpected_answer", f"HTTP {response.status}: {verdict}", None)
                return False
            for report_id, reason in list(verdict.items())[:20]:
                logger.warning("collector rejected report %s: %s", report_id, reason)
            rejections = {counter: sum(slug in reason for reason in verdict.values())
                          for slug, counter in BATCH_REJECTIONS.items()}
            if acknowledged is None:
                self.queue.remove(ids, rejections)
            else:
                acknowledged.extend(ids)
                for counter, amount in rejections.items():
                    self.pending_counters[counter] = self.pending_counters.get(counter, 0) + amount
            result.sent += len(ids) - len(verdict)
            result.rejected += len(verdict)
            self.sent += len(ids) - len(verdict)
            self.rejected += len(verdict)
            self.succeeded()
            return True
        if response.status == 413 and len(batch) > 1:
            # too big for this collector: split, never drop; a key's stated limit (public keys) caps the batch from
            # now on, as in sdk-js
            if (most := max_reports(response)) is not None:
                self.batch_cap = most
            self.batch_limit = max(1, min(len(batch) // 2, self.batch_cap or len(batch)))
            return True
        self.fail(condition_for(response.status), f"HTTP {response.status}: {problem(response)}",
                  retry_after(response, self.clock()))
        return False

    def succeeded(self) -> None:
        self.failures, self.next_attempt = 0, 0.0
        self.batch_limit = min(self.batch_size, self.batch_cap or self.batch_size, self.batch_limit * 2)
        if self.condition is not None:
            logger.info("delivery recovered (was %s)", self.condition)
            self.set_condition(None, None)

    def fail(self, condition: str, detail: str, retry_after: float | None) -> None:
        "Exponential backoff with full jitter (AWS architecture blog), never shorter than Retry-After"
        self.failures += 1
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** min(self.failures - 1, 32))
        delay = self.jitter.uniform(0, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_cap))
        self.next_attempt = self.clock() + delay
        if condition != self.condition:
            logger.warning("delivery stalled: %s (%s); reports stay queued, retrying with backoff", condition,
                           detail)
        else:
            logger.debug("send failed (%s); retrying in %.2f s", detail, delay)
        self.set_condition(condition, detail)

    def set_condition(self, condition: str | None, detail: str | None) -> None:
        changed = condition != self.condition
        self.condition, self.detail = condition, detail
        if changed and self.on_condition is not None:
            try:
                self.on_condition(condition, detail)
            except Exception:  # noqa: BLE001 (the app's callback must not break delivery)
                logger.exception("on_condition callback failed")


def shuffled(items: list[str]) -> list[str]:
    "Fisher-Yates with the OS CSPRNG: the order of a device's requests says nothing about its campaigns"
    for i in range(len(items) - 1, 0, -1):
        j = secrets.randbelow(i + 1)
        items[i], items[j] = items[j], items[i]
    return items
