"""``Client``: record values, perturb them on the device, queue them on disk and deliver them in batches.

Recording contract: ``record(campaign, value)`` never does network I/O and raises only for programming errors
(:class:`~client_sdk.errors.RecordingError`: a value of the wrong type or outside the domain, a spec this SDK
cannot use).  Everything operational (spec not fetched yet, unknown or closed campaign, upload switched off, a
damaged state file, the collector down or refusing the key) is returned as a :class:`Recorded` status, counted
in :meth:`Client.status` and logged once.  The value is validated (perturbed) first, then the privacy ledger is
asked, then the ledger charge and the queue insert happen in one transaction.  The true value is stored only while
it is held for its spec (below), and never leaves the device.

Specs come from the state file or from the collector, fetched in the background (``campaigns=[...]`` or
``prepare()``; one ``GET /v1/campaigns`` for all of them), or shipped with the app (``specs=[...]``, see
``shipped.py``: used until the collector's spec arrives, which then wins).  A value recorded before its campaign's
spec reached the device is held, raw, in the state file (``held.py``: at most ``max_held`` per campaign and
``max_held_age`` seconds, status ``held``), survives ``close()`` and restarts, and is perturbed, charged and queued
when the spec arrives, in the transaction that deletes it.

Delivery (background thread or ``flush()``): each request carries the reports of one campaign, campaigns in a
random order.  A report leaves the queue only when the collector's 2xx answer acknowledges it (the counts add
up to the batch; rejected reports are named with a reason) or a queue limit drops it.  Any other answer (401,
403, 404, 3xx, other 4xx, 5xx, a 2xx that is not the expected JSON, such as a captive portal's page) keeps the
batch, backs off (exponential with full jitter, at least Retry-After) and sets ``status().condition``.  413
halves the batch, which grows back after successes.  A retry resends the same queued JSON (same report_id, same
draw), so the collector's duplicate detection makes retries safe.

Distributed campaigns seal each value to two aggregators; the app names the helper out of band
(``aggregators={"helper": URL}``, optionally with pinned HPKE configs), the helper's key is fetched from the
helper itself, and a listing that names another helper is refused (``aggregator_mismatch``; none configured:
``aggregators_not_configured``), with nothing charged or queued (docs/sdk.md).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..errors import ClientClosed, InvalidValueType, LDPError
from ..randomness import RandomSource
from ..spec import Spec
from .held import HELD_DROP_COUNTERS, HeldValues, spec_times_and_held
from .ledger import PrivacyLedger, ReportPolicy, Spending
from .queue import DROP_COUNTERS, QueueLimits, ReportQueue
from .recorder import Recorder
from .shipped import shipped_specs
from .spec_cache import OnceLog, SpecCache
from .state_file import StateFile
from .state_file import delete_local_data as _delete_state_dir
from .status import ClientStatus, FlushResult, Recorded, RecordStatus
from .transport import HttpTransport, Request, Response, Transport
from .uploader import BATCH_REJECTIONS, Jitter, Uploader

__all__ = ["Client", "ClientStatus", "FlushResult", "Recorded", "RecordStatus", "delete_local_data"]

logger = logging.getLogger("client_sdk")
UPLOAD_SETTING = "upload_enabled"
DELETED_COUNTER = "deleted_upload_disabled"


T = TypeVar("T")


class _Setting(Generic[T]):
    """A setting of ``Client`` that its parts keep: reading it reads the first part's, assigning it assigns every
    part's (``client.timeout = 5`` takes effect as before the split)"""

    def __init__(self, *places: str) -> None:
        self.places = [tuple(place.split(".")) for place in places]

    def __get__(self, client: Any, owner: type | None = None) -> T:
        part, name = self.places[0]
        return getattr(getattr(client, part), name)

    def __set__(self, client: Any, value: T) -> None:
        for part, name in self.places:
            setattr(getattr(client, part), name, value)


class Client:
    """The SDK's entry point: ``record``, ``flush``, ``close``; safe to use from several threads.

    A facade over three parts: the spec cache (``spec_cache.py``: which spec each campaign has), the recorder
    (``recorder.py``: value to queued report) and the uploader (``uploader.py``: queued reports to the collector).
    The background sender thread and the consent switch live here."""

    url: _Setting[str] = _Setting("_uploader.url", "_specs.url")
    rng: _Setting[RandomSource | None] = _Setting("_recorder.rng")
    policy: _Setting[ReportPolicy] = _Setting("_recorder.policy")
    policies: _Setting[dict[str, ReportPolicy]] = _Setting("_recorder.policies")
    batch_size: _Setting[int] = _Setting("_uploader.batch_size", "_recorder.batch_size")
    max_request_bytes: _Setting[int] = _Setting("_uploader.max_request_bytes")
    timeout: _Setting[float] = _Setting("_uploader.timeout")
    backoff_base: _Setting[float] = _Setting("_uploader.backoff_base")
    backoff_cap: _Setting[float] = _Setting("_uploader.backoff_cap")
    spec_ttl: _Setting[float] = _Setting("_specs.spec_ttl")
    clock: _Setting[Callable[[], float]] = _Setting("_uploader.clock", "_specs.clock", "_recorder.clock")
    sleep: _Setting[Callable[[float], None]] = _Setting("_uploader.sleep")

    def __init__(self, url: str, api_key: str, state_dir: str | Path, *, campaigns: Iterable[str] = (),
                 transport: Transport | None = None, rng: RandomSource | None = None,
                 policy: ReportPolicy | None = None, policies: dict[str, ReportPolicy] | None = None,
                 batch_size: int = 500, max_request_bytes: int = 1024 * 1024, flush_interval: float = 30.0,
                 queue_limits: QueueLimits | None = None, spec_ttl: float = 3600.0, timeout: float = 10.0,
                 backoff_base: float = 0.5, backoff_cap: float = 300.0, close_timeout: float = 5.0,
                 max_held: int = 1000, max_held_age: float = 7 * 24 * 3600.0, specs: Any = None,
                 flush_at_exit: float | None = None,
                 on_condition: Callable[[str | None, str | None], None] | None = None, background: bool = True,
                 helper_hpke_config: Any = None, aggregators: Any = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, jitter: Jitter | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if not 1 <= batch_size <= 5000:
            raise ValueError("batch_size must be in [1, 5000]")
        if not flush_interval > 0 or not timeout > 0 or not backoff_base > 0 or backoff_cap < backoff_base:
            raise ValueError("flush_interval, timeout and backoff_base must be positive, backoff_cap >= backoff_base")
        if flush_at_exit is not None and not flush_at_exit >= 0:
            raise ValueError("flush_at_exit must be a number of seconds >= 0, or None")
        shipped = shipped_specs(specs)  # SpecError naming specs[i].field, before any file is touched
        url = url.rstrip("/")
        self.state_dir = Path(state_dir)
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        if transport is None:
            transport = HttpTransport()
        self.transport: Transport = transport
        self.flush_interval = flush_interval
        self.close_timeout = close_timeout
        self.max_held = max_held
        # Distributed campaigns: what the app knows out of band (``aggregators``: the helper's URL, whose HPKE
        # configs are fetched from the helper itself, and optional pins; ``helper_hpke_config`` is the older way to
        # pin the helper's config), checked against the aggregators block listed with each spec
        trusted = None
        if aggregators is None and helper_hpke_config is not None:
            aggregators = {"helper": {"hpke_config": helper_hpke_config}}
        if aggregators is not None:
            # imported here: the distributed module (+10 ms) only for an app with distributed campaigns
            from ..distributed import configured_aggregators

            trusted = configured_aggregators(aggregators, url)  # ValueError naming the field
        self.state = StateFile(self.state_dir)
        self.queue = ReportQueue(self.state, queue_limits)
        self.ledger = PrivacyLedger(self.state)
        self.held = HeldValues(self.state, max_held, max_held_age)
        # a file this open created holds no setting and no cached spec: two reads fewer per new device
        self._upload_enabled = self.state.fresh or self.state.setting(UPLOAD_SETTING, "1") == "1"
        cached_at: dict[str, float] = {}
        held_campaigns: set[str] = set()
        closed_campaigns: set[str] = set()
        if not self.state.fresh:
            cached_at, held_campaigns, closed_campaigns = spec_times_and_held(self.state)
        self._closed = False
        self._final: ClientStatus | None = None  # the status when the state file was closed
        self._wake = threading.Event()
        log_once = OnceLog()
        self._uploader = Uploader(
            url, headers, self.queue, self.state, self._send, batch_size=batch_size,
            max_request_bytes=max_request_bytes, timeout=timeout, backoff_base=backoff_base, backoff_cap=backoff_cap,
            clock=clock, sleep=sleep, jitter=jitter, on_condition=on_condition,
            upload_enabled=lambda: self._upload_enabled, closed=lambda: self._closed)
        self._specs = SpecCache(
            url, headers, self.state, self._send, self._uploader, shipped=shipped, trusted=trusted,
            cached_at=cached_at, closed=closed_campaigns, wanted=(*campaigns, *shipped, *held_campaigns),
            spec_ttl=spec_ttl, clock=clock, wake=self._wake, log_once=log_once)
        self._uploader.on_stale_keys = self._specs.expire  # a refusal naming a retired key: fetch the listing again
        self._recorder = Recorder(
            self.state_dir, self.state, self.queue, self.ledger, self.held, self._specs, rng=rng,
            policy=policy or ReportPolicy(), policies=dict(policies or {}), batch_size=batch_size,
            held_campaigns=held_campaigns, clock=clock, upload_enabled=lambda: self._upload_enabled, wake=self._wake,
            log_once=log_once)
        self._thread: threading.Thread | None = None
        self._flush_at_exit = flush_at_exit
        if flush_at_exit is not None:
            atexit.register(self._exit_flush)
        if background:
            self._thread = threading.Thread(target=self._run, name="ldp-telemetry-sender", daemon=True)
            self._thread.start()
        elif self._specs.wanted and self._upload_enabled:
            self.prepare()  # no background thread: the constructor is the caller's chosen moment for I/O

    # -- recording --------------------------------------------------------------------------------------------
    def record(self, campaign: str, value: Any) -> Recorded:
        """Perturb ``value`` for ``campaign`` and queue it; never does network I/O.

        Raises only :class:`RecordingError` subclasses (``InvalidValue`` is a ValueError, ``InvalidValueType`` a
        TypeError, ``UnsupportedSpec`` a ValueError); every operational condition is a returned status."""
        if not isinstance(campaign, str):
            raise InvalidValueType("campaign must be a string")
        recorder = self._recorder
        if self._closed:
            return recorder.outcome(RecordStatus.CLIENT_CLOSED, campaign)
        spec = self._specs.known(campaign)
        if spec is RecordStatus.SPEC_UNAVAILABLE and self._upload_enabled:
            spec = recorder.hold(campaign, value)
        if isinstance(spec, RecordStatus):
            return recorder.outcome(spec if self._upload_enabled else RecordStatus.UPLOAD_DISABLED, campaign)
        recorded = recorder.queue_value(spec, campaign, value, self.clock())
        return recorder.outcome(recorded.status, campaign, report_id=recorded.report_id)

    def spent(self, campaign: str) -> Spending:
        "The epsilon and report count ``campaign`` has spent on this device (ClientClosed after ``close()``)"
        self._check_open("spent")
        return self.ledger.spent(campaign)

    def pending(self) -> int:
        "Reports queued on disk (after ``close()``: as ``close()`` left them)"
        return self._final.pending if self._final is not None else len(self.queue)

    def status(self) -> ClientStatus:
        """Queue, delivery condition and counters (see :class:`ClientStatus`); after ``close()`` or
        ``delete_local_data()``, the status they left (the state file is closed)"""
        if self._final is not None:
            return self._final
        return self._status(self.queue.totals())

    def _status(self, totals: tuple[int, int]) -> ClientStatus:
        count, size = totals
        stored = self.state.counters()
        uploader = self._uploader
        return ClientStatus(
            upload_enabled=self._upload_enabled, pending=count, pending_bytes=size, condition=uploader.condition,
            detail=uploader.detail, retry_in=max(0.0, uploader.next_attempt - self.clock()),
            recorded=dict(self._recorder.counts), sent=uploader.sent, rejected=uploader.rejected,
            dropped={name: stored.get(name, 0) for name in (*DROP_COUNTERS, DELETED_COUNTER, *HELD_DROP_COUNTERS,
                                                            *BATCH_REJECTIONS.values())},
            unknown_campaigns=sorted(self._specs.unknown),
            held=self.held.count() if self._recorder.held_campaigns else 0)

    def _check_open(self, method: str) -> None:
        if self._final is not None:
            raise ClientClosed(f"{method}() needs the state file, which close() or delete_local_data() closed")

    def _close_state(self, deleted: bool = False, totals: tuple[int, int] | None = None) -> None:
        """Keep the last status for status() (a deleted directory left nothing queued or held), then close the file;
        ``totals``: the queue's, if the caller just read them (close's flush did)"""
        try:
            final = self._status(totals or self.queue.totals())
        except (sqlite3.Error, LDPError) as exc:  # the file failed under us: what memory knows, nothing on disk
            uploader = self._uploader
            final = ClientStatus(self._upload_enabled, 0, 0, "state_error", str(exc), 0.0,
                                 dict(self._recorder.counts), uploader.sent, uploader.rejected, {},
                                 sorted(self._specs.unknown))
        if deleted:
            final = dataclasses.replace(final, pending=0, pending_bytes=0, held=0)
        self._final = final
        self.state.close()

    # -- consent ----------------------------------------------------------------------------------------------
    def set_upload_enabled(self, enabled: bool) -> None:
        """The consent switch: off stops recording and uploading and deletes queued reports (the privacy ledger
        stays, so switching on again does not reset the budget); persists across restarts.  Off also deletes the
        values held for their spec (counted as ``held_dropped_upload_disabled``)."""
        self._check_open("set_upload_enabled")
        self._upload_enabled = bool(enabled)
        with self.state.transaction():
            self.state.set_setting(UPLOAD_SETTING, "1" if enabled else "0")
            if not enabled:
                deleted = self.queue.clear()
                if deleted:
                    self.state.add_to_counter(DELETED_COUNTER, deleted)
                if self._recorder.held_campaigns:
                    self.held.drop(None, "held_dropped_upload_disabled")
        if not enabled and self._recorder.held_campaigns:
            self._recorder.drop_all_held()
        if enabled:
            self._wake.set()

    def delete_local_data(self) -> None:
        "Close the client and remove its state directory: queue, ledger, cached specs, RAPPOR device secret"
        self._upload_enabled = False
        self._closed = True
        self._wake.set()
        self._unregister_exit_flush()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)
        if self._final is None:
            self._close_state(deleted=True)
        self._close_transport()
        _delete_state_dir(self.state_dir)

    def _close_transport(self) -> None:
        "Close the kept-alive connections of an SDK transport (only idle ones: safe even if clients share it)"
        if isinstance(self.transport, HttpTransport):
            self.transport.close()

    # -- specs ------------------------------------------------------------------------------------------------
    def prepare(self, campaigns: Iterable[str] = (), *, wait: bool = False) -> bool:
        """Fetch the specs of ``campaigns`` (and of every campaign recorded so far) with one request.

        In the background unless ``wait`` (or the client has no background thread): then on this thread, and the
        answer says whether every wanted campaign now has a spec."""
        specs = self._specs
        specs.wanted.update(campaigns)
        if self._thread is not None and not wait:
            self._wake.set()
            return all(specs.has_spec(c) for c in specs.wanted)
        if specs.needed() and self._upload_enabled:
            specs.refresh()
        if self._recorder.held_campaigns:
            self._recorder.release_held()
        return all(specs.has_spec(c) for c in specs.wanted)

    def spec(self, campaign: str) -> Spec:
        """The campaign's spec from memory, the state file, the app's shipped specs or the collector (an explicit,
        blocking fetch: raises UnknownCampaign or CampaignUnavailable; ``record()`` never calls it)"""
        self._specs.wanted.add(campaign)
        known = self._specs.known(campaign)
        if isinstance(known, Spec):
            return known
        return self._specs.fetch(campaign, self.clock())

    # -- delivery ---------------------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None, *, retry: bool = True) -> FlushResult:
        """Send queued reports until the queue is empty or ``timeout`` seconds pass, retrying with backoff (or,
        with ``retry=False``, trying at once and stopping at the first failure)"""
        if self._final is not None:  # after close(): nothing can be sent, the status close() left says the rest
            return FlushResult(remaining=self._final.pending, condition=self._final.condition)
        deadline = time.monotonic() + (timeout if timeout is not None else max(self.close_timeout, 30.0))
        result = FlushResult()
        remaining = None
        uploader, recorder = self._uploader, self._recorder
        if self._upload_enabled and uploader.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            try:
                if recorder.held_campaigns:  # values recorded before their spec: fetch it (flush is the caller's I/O)
                    self._refresh_for_held(deadline, retry)
                    recorder.release_held()
                remaining = len(self.queue)
                if remaining:  # an empty queue (close after a flush): nothing to expire or send
                    result.dropped = self.queue.drop_expired(self.clock())
                    uploader.deliver(result, deadline, retry)
                    remaining = None
                if self._specs.keys_refused:  # sealed to a key an aggregator retired: the next report uses the new
                    self._specs.refresh(max(0.001, min(self.timeout, deadline - time.monotonic())))
                uploader.account_background(result)
            finally:
                uploader.lock.release()
        result.remaining = len(self.queue) if remaining is None else remaining
        result.condition = uploader.condition
        return result

    def _refresh_for_held(self, deadline: float, retry: bool) -> None:
        """The specs held values wait for, fetched as delivery sends: waiting out a backoff (a 429's Retry-After,
        an unreachable collector) and trying again until the deadline if ``retry``, else one try if none is due.
        Call holding the uploader's lock."""
        uploader = self._uploader
        while self._specs.needed():
            wait = uploader.next_attempt - self.clock()
            if wait > 0:
                if not retry or time.monotonic() + wait > deadline:
                    return
                uploader.sleep(wait)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._upload_enabled:
                return
            if self._specs.refresh(max(0.001, min(self.timeout, remaining))) or not retry:
                return

    def close(self, timeout: float | None = None) -> FlushResult:
        """Stop the sender and deliver for at most ``timeout`` (default ``close_timeout``) seconds, trying at once
        and stopping at the first failure (offline, close returns after one attempt); the rest stays on disk"""
        if self._closed:
            return FlushResult()
        deadline = time.monotonic() + (self.close_timeout if timeout is None else max(0.0, timeout))
        self._closed = True
        self._wake.set()
        self._unregister_exit_flush()
        result = None
        try:
            if self._thread is not None:
                self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
            result = self.flush(max(0.0, deadline - time.monotonic()), retry=False)
        finally:  # the flush ended by reading the queue's totals: status() after close() needs them
            self._close_state(totals=self.queue.last_totals if result is not None else None)
            self._close_transport()
        return result

    def _exit_flush(self) -> None:
        "The opt-in atexit hook: deliver what the deadline allows, keep the rest for the next start"
        try:
            self.close(timeout=self._flush_at_exit)
        except Exception:  # noqa: BLE001 (an exit hook must not turn a clean exit into a traceback)
            logger.exception("flush at exit failed")

    def _unregister_exit_flush(self) -> None:
        if self._flush_at_exit is not None:
            atexit.unregister(self._exit_flush)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        "The background sender: fetches due specs, then sends; wakes on a full batch or every flush_interval"
        while not self._closed:
            try:
                self._background_pass()
            except Exception:  # the sender must survive anything; reports stay queued
                logger.exception("background send failed")
            if self._closed:
                return
            wait = self._uploader.next_attempt - self.clock()
            self._wake.wait(min(self.flush_interval, wait) if wait > 0 else self.flush_interval)
            self._wake.clear()

    def _background_pass(self) -> None:
        if not self._upload_enabled or self._closed or self.clock() < self._uploader.next_attempt:
            return
        if self._specs.needed() and not self._specs.refresh():
            return
        if self._recorder.held_campaigns:
            self._recorder.release_held()
        self._uploader.background_pass()

    def _send(self, request: Request, timeout: float | None = None) -> Response:
        return self.transport.send(request, self.timeout if timeout is None else timeout)


def delete_local_data(state_dir: str | Path) -> None:
    "Remove an SDK state directory without opening it (for example after a StateFileError)"
    _delete_state_dir(state_dir)
