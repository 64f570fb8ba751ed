"""``Client``: record values, perturb them on the device, queue them on disk and deliver them in batches.

Life of a value: ``record(campaign, value)`` fetches (or reuses) the campaign's spec, asks the privacy ledger
whether the campaign may report again, perturbs the value with the campaign's mechanism, and in one transaction
charges the ledger and queues the perturbed report with a fresh report_id.  The true value is never stored.

Delivery: a background thread (or ``flush()``) sends the oldest queued reports as ``POST /v1/reports`` batches.
A 2xx or 4xx answer ends the batch (reports rejected by the collector, or a 4xx for the whole batch, are dropped
with a logged reason); 408, 429, 5xx and network errors keep the batch for a retry after an exponential backoff
with full jitter, at least as long as the collector's Retry-After.  A retry resends the same queued JSON (same
report_id, same draw), so the collector's duplicate detection makes retries safe.  ``close()`` flushes for a
bounded time and leaves the rest on disk for the next start.
"""

from __future__ import annotations

import gzip
import json
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from .errors import LDPError
from .ledger import PrivacyLedger, ReportPolicy, Spending
from .mechanisms import Mechanism, mechanism_from_spec
from .queue import QueueLimits, ReportQueue
from .randomness import RandomSource
from .spec import Spec, load_spec
from .state_file import StateFile
from .transport import (
    CampaignUnavailable,
    Request,
    Response,
    Transport,
    TransportError,
    UnknownCampaign,
    UrllibTransport,
)

logger = logging.getLogger("client_sdk")
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
GZIP_MIN_BYTES = 2048


class Jitter(Protocol):
    "Where backoff delays come from: anything with ``uniform(a, b)`` (``random.Random`` in tests)"

    def uniform(self, a: float, b: float) -> float: ...


class SecureJitter:
    "Uniform delays from the OS CSPRNG (the device path imports no ``random``)"

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * secrets.randbits(53) / (1 << 53)


@dataclass
class FlushResult:
    "What one flush did"

    sent: int = 0  # reports acknowledged (accepted or duplicate)
    rejected: int = 0  # reports the collector refused (dropped)
    dropped: int = 0  # reports dropped with a 4xx for the whole batch
    remaining: int = 0  # still queued


class Client:
    "The SDK's entry point: ``record``, ``flush``, ``close``; safe to use from several threads"

    def __init__(self, url: str, api_key: str, state_dir: str | Path, *, transport: Transport | None = None,
                 rng: RandomSource | None = None, policy: ReportPolicy | None = None,
                 policies: dict[str, ReportPolicy] | None = None, batch_size: int = 500,
                 max_request_bytes: int = 1024 * 1024, flush_interval: float = 30.0,
                 queue_limits: QueueLimits | None = None, spec_ttl: float = 3600.0, timeout: float = 10.0,
                 backoff_base: float = 0.5, backoff_cap: float = 300.0, close_timeout: float = 5.0,
                 background: bool = True, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, jitter: Jitter | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if not 1 <= batch_size <= 5000:
            raise ValueError("batch_size must be in [1, 5000]")
        if not flush_interval > 0 or not timeout > 0 or not backoff_base > 0 or backoff_cap < backoff_base:
            raise ValueError("flush_interval, timeout and backoff_base must be positive, backoff_cap >= backoff_base")
        self.url = url.rstrip("/")
        self.state_dir = Path(state_dir)
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self.transport: Transport = transport or UrllibTransport()
        self.rng = rng
        self.policy = policy or ReportPolicy()
        self.policies = dict(policies or {})
        self.batch_size = batch_size
        self.max_request_bytes = max_request_bytes
        self.flush_interval = flush_interval
        self.spec_ttl = spec_ttl
        self.timeout = timeout
        self.backoff_base, self.backoff_cap = backoff_base, backoff_cap
        self.close_timeout = close_timeout
        self.clock, self.sleep = clock, sleep
        self._jitter: Jitter = jitter or SecureJitter()
        self.state = StateFile(self.state_dir)
        self.queue = ReportQueue(self.state, queue_limits)
        self.ledger = PrivacyLedger(self.state)
        self._mechanisms: dict[str, Mechanism] = {}
        self._specs: dict[str, tuple[Spec, float]] = {}
        self._send_lock = threading.Lock()
        self._failures = 0
        self._next_attempt = 0.0
        self._closed = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="ldp-telemetry-sender", daemon=True)
            self._thread.start()

    # -- recording --------------------------------------------------------------------------------------------
    def record(self, campaign: str, value: Any) -> str | None:
        """Perturb ``value`` for ``campaign`` and queue it; the report_id, or None if the policy refused it.

        Raises ValueNotInDomain / TypeError for a value the campaign cannot take, UnknownCampaign, or
        CampaignUnavailable when the spec was never fetched and the collector cannot be reached."""
        if self._closed:
            raise LDPError("the client is closed")
        spec = self.spec(campaign)
        policy = self.policies.get(campaign, self.policy)
        now = self.clock()
        if self.ledger.refusal(campaign, spec.epsilon, policy, now) is not None:
            logger.debug("campaign %s: report refused by the device policy", campaign)
            return None
        payload = self._mechanism(spec).perturb(value)  # raises before anything is charged or stored
        report = {"report_id": str(uuid.uuid4()), "campaign": campaign, "fingerprint": spec.fingerprint,
                  "payload": payload}
        with self.state.transaction():
            reason = self.ledger.refusal(campaign, spec.epsilon, policy, now)  # again, under the lock
            if reason is not None:
                return None
            self.ledger.charge(campaign, spec.epsilon, policy, now)
            self.queue.put(report, now)
        if len(self.queue) >= self.batch_size:
            self._wake.set()
        return report["report_id"]

    def spent(self, campaign: str) -> Spending:
        "The epsilon and report count ``campaign`` has spent on this device"
        return self.ledger.spent(campaign)

    def pending(self) -> int:
        "Reports queued on disk"
        return len(self.queue)

    # -- specs ------------------------------------------------------------------------------------------------
    def spec(self, campaign: str) -> Spec:
        "The campaign's spec: from memory, the state file, or the collector (refreshed after ``spec_ttl``)"
        now = self.clock()
        held = self._specs.get(campaign)
        if held is not None and now - held[1] < self.spec_ttl:
            return held[0]
        cached = self.state.cached_spec(campaign)
        if cached is not None and now - cached[1] < self.spec_ttl:
            spec = load_spec(cached[0])
            self._specs[campaign] = (spec, cached[1])
            return spec
        try:
            spec = self._fetch_spec(campaign, now)
        except TransportError:
            if cached is None:
                raise CampaignUnavailable(f"cannot fetch the spec of campaign {campaign!r}") from None
            logger.info("campaign %s: collector unreachable, using the cached spec", campaign)
            spec = load_spec(cached[0])
        self._specs[campaign] = (spec, now)
        return spec

    def _fetch_spec(self, campaign: str, now: float) -> Spec:
        response = self._send(Request("GET", f"{self.url}/v1/campaigns/{quote(campaign, safe='')}",
                                      dict(self._headers)))
        if response.status == 404:
            raise UnknownCampaign(f"the collector has no campaign {campaign!r}")
        if response.status in RETRYABLE_STATUSES or response.status >= 500:
            raise CampaignUnavailable(f"fetching campaign {campaign!r}: HTTP {response.status}")
        if response.status != 200:
            raise LDPError(f"fetching campaign {campaign!r}: HTTP {response.status} {_problem(response)}")
        body = response.json()
        spec = load_spec(body["spec"])
        if spec.fingerprint != body.get("fingerprint") or spec.name != campaign:
            raise LDPError(f"campaign {campaign!r}: the spec does not match its fingerprint")
        self.state.cache_spec(campaign, body["spec"], spec.fingerprint, now)
        return spec

    def _mechanism(self, spec: Spec) -> Mechanism:
        mechanism = self._mechanisms.get(spec.fingerprint)
        if mechanism is None:
            options = self._rappor_options(spec) if spec.mechanism == "rappor" else {}
            mechanism = self._mechanisms[spec.fingerprint] = mechanism_from_spec(spec, rng=self.rng, **options)
        return mechanism

    def _rappor_options(self, spec: Spec) -> dict[str, Any]:
        "The device secret (and its cohort) from client_sdk.device_state, kept in the state directory"
        from .device_state import load_or_create_device_state

        state = load_or_create_device_state(self.state_dir)
        assert spec.rappor is not None  # only RAPPOR specs come here
        return {"secret": state.secret, "cohort": state.cohort_for(spec.rappor.m)}

    # -- delivery ---------------------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> FlushResult:
        "Send queued reports until the queue is empty or ``timeout`` seconds pass (retrying with backoff)"
        deadline = time.monotonic() + (timeout if timeout is not None else max(self.close_timeout, 30.0))
        result = FlushResult()
        with self._send_lock:
            while len(self.queue):
                wait = self._next_attempt - self.clock()
                if wait > 0:
                    if time.monotonic() + wait > deadline:
                        break
                    self.sleep(wait)
                if time.monotonic() > deadline:
                    break
                self._send_one_batch(result)
        result.remaining = len(self.queue)
        return result

    def close(self, timeout: float | None = None) -> FlushResult:
        "Stop the sender, flush for at most ``timeout`` (default ``close_timeout``) seconds, keep the rest on disk"
        if self._closed:
            return FlushResult(remaining=0)
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)
        try:
            result = self.flush(self.close_timeout if timeout is None else timeout)
        finally:
            self.state.close()
        return result

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        "The background sender: wakes on a full batch or every flush_interval"
        while not self._closed:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            if self._closed:
                return
            try:
                with self._send_lock:
                    result = FlushResult()
                    while len(self.queue) and self.clock() >= self._next_attempt and not self._closed:
                        if not self._send_one_batch(result):
                            break
            except Exception:  # the sender must survive anything; reports stay queued
                logger.exception("background send failed")
            if self._next_attempt > self.clock() and not self._closed:
                self._wake.wait(self._next_attempt - self.clock())

    def _send_one_batch(self, result: FlushResult) -> bool:
        "Send the oldest batch; True if it ended (acknowledged or dropped), False if it must be retried"
        batch = self.queue.peek(self.batch_size, self.max_request_bytes)
        if not batch:
            return True
        body = ('{"reports":[' + ",".join(r.text for r in batch) + "]}").encode()
        headers = {**self._headers, "Content-Type": "application/json"}
        if len(body) >= GZIP_MIN_BYTES:
            body, headers["Content-Encoding"] = gzip.compress(body, 6), "gzip"
        ids = [r.report_id for r in batch]
        try:
            response = self._send(Request("POST", f"{self.url}/v1/reports", headers, body))
        except TransportError as exc:
            self._back_off(None, str(exc))
            return False
        if 200 <= response.status < 300:
            self._failures, self._next_attempt = 0, 0.0
            answer = _json_or_empty(response)
            for error in answer.get("errors", [])[:20]:
                logger.warning("collector rejected a report: %s %s", error.get("field"), error.get("reason"))
            result.rejected += int(answer.get("rejected", 0))
            result.sent += len(ids) - int(answer.get("rejected", 0))
            self.queue.remove(ids)
            return True
        if response.status == 413 and len(batch) > 1:
            self.batch_size = max(1, len(batch) // 2)  # too big for this collector: split, do not drop
            return False
        if response.status in RETRYABLE_STATUSES or response.status >= 500:
            self._back_off(_retry_after(response), f"HTTP {response.status}")
            return False
        logger.warning("collector refused a batch of %d reports (HTTP %d: %s); dropped", len(ids), response.status,
                       _problem(response))
        result.dropped += len(ids)
        self.queue.remove(ids)
        return True

    def _back_off(self, retry_after: float | None, reason: str) -> None:
        "Exponential backoff with full jitter (AWS architecture blog), never shorter than Retry-After"
        self._failures += 1
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** min(self._failures - 1, 32))
        delay = self._jitter.uniform(0, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_cap))
        self._next_attempt = self.clock() + delay
        logger.info("send failed (%s); retrying in %.2f s", reason, delay)

    def _send(self, request: Request) -> Response:
        return self.transport.send(request, self.timeout)


def _retry_after(response: Response) -> float | None:
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None  # HTTP-date form: fall back to the jittered backoff


def _json_or_empty(response: Response) -> dict:
    try:
        data = json.loads(response.body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _problem(response: Response) -> str:
    data = _json_or_empty(response)
    return f"{data.get('field', '')}: {data.get('detail', '')}".strip(": ") or "no details"
