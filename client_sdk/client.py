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

import dataclasses
import json
import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from .answers import acknowledgement, campaign_list, condition_for, problem, retry_after
from .clock import utc_day
from .distributed_messages import ProtocolError
from .errors import (
    ClientClosed,
    InvalidValue,
    InvalidValueType,
    LDPError,
    RecordingError,
    SpecError,
    StateFileError,
    UnsupportedSpec,
)
from .held import HELD_DROP_COUNTERS, HeldValues, decode_value, encode_value, spec_times_and_held
from .ledger import PrivacyLedger, ReportPolicy, Spending
from .mechanisms import Mechanism, mechanism_from_spec
from .queue import DROP_COUNTERS, QueueLimits, ReportQueue
from .randomness import RandomSource
from .shipped import shipped_specs
from .spec import Spec, canonical_json, load_spec
from .state_file import StateFile
from .state_file import delete_local_data as _delete_state_dir
from .status import ClientStatus, FlushResult, Recorded, RecordStatus
from .transport import (
    CampaignUnavailable,
    HttpTransport,
    Request,
    Response,
    Transport,
    TransportError,
    UnknownCampaign,
)

__all__ = ["Client", "ClientStatus", "FlushResult", "Recorded", "RecordStatus", "delete_local_data"]

logger = logging.getLogger("client_sdk")
GZIP_MIN_BYTES = 2048
UPLOAD_SETTING = "upload_enabled"
HELPER_CONFIGS_SETTING = "helper_hpke_configs"
DELETED_COUNTER = "deleted_upload_disabled"
# Distributed reports the leader refused for their batch (each names one, sealed into its shares: never moved to
# another): collected already (the device's clock lagged by more than the leader's collection grace, or it stayed
# offline past it), or too far ahead of the leader's clock.  Counted by name (``status().dropped``)
BATCH_REJECTIONS = {ProtocolError.BATCH_COLLECTED: "rejected_batch_collected",
                    ProtocolError.BATCH_IN_FUTURE: "rejected_batch_in_future"}


class Jitter(Protocol):
    "Where backoff delays come from: anything with ``uniform(a, b)`` (``random.Random`` in tests)"

    def uniform(self, a: float, b: float) -> float: ...


class SecureJitter:
    "Uniform delays from the OS CSPRNG (the device path imports no ``random``)"

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * secrets.randbits(53) / (1 << 53)


class Client:
    "The SDK's entry point: ``record``, ``flush``, ``close``; safe to use from several threads"

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
        self._shipped = shipped_specs(specs)  # SpecError naming specs[i].field, before any file is touched
        self.url = url.rstrip("/")
        self.state_dir = Path(state_dir)
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        if transport is None:
            transport = HttpTransport()
        self.transport: Transport = transport
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
        self._on_condition = on_condition
        self.state = StateFile(self.state_dir)
        self.queue = ReportQueue(self.state, queue_limits)
        self.ledger = PrivacyLedger(self.state)
        self.held = HeldValues(self.state, max_held, max_held_age)
        # a file this open created holds no setting and no cached spec: two reads fewer per new device
        self._upload_enabled = self.state.fresh or self.state.setting(UPLOAD_SETTING, "1") == "1"
        self._mechanisms: dict[str, Mechanism] = {}
        self._specs: dict[str, tuple[Spec, float]] = {}
        # Distributed campaigns: the aggregators block listed with each spec (cached with it) is checked against
        # what the app knows out of band (``aggregators``: the helper's URL, whose HPKE configs are fetched from the
        # helper itself, and optional pins; ``helper_hpke_config`` is the older way to pin the helper's config).
        self._aggregators: dict[str, Any] = {}
        self._trusted: Any = None
        if aggregators is None and helper_hpke_config is not None:
            aggregators = {"helper": {"hpke_config": helper_hpke_config}}
        if aggregators is not None:
            from .distributed import configured_aggregators

            self._trusted = configured_aggregators(aggregators, self.url)  # ValueError naming the field
        self._helper_configs: list[Any] | None = None  # fetched from the helper (or read from the state file)
        self._helper_configs_loaded = False
        self._helper_configs_wanted = False
        self._sealers: dict[str, tuple[Any, Any]] = {}
        # The RAPPOR device secret: read from the state file on first use, or drawn and stored (pending) in the
        # transaction of the first report made with it
        self._secret: bytes | None = None
        self._secret_pending = False
        self._cached_at: dict[str, float] = {}
        self._held_campaigns: set[str] = set()  # campaigns with values held in the state file
        self._held_lock = threading.Lock()  # a hold and its campaign's entry here, against a release's re-read
        self.max_held = max_held
        if not self.state.fresh:
            self._cached_at, self._held_campaigns = spec_times_and_held(self.state)
        self._wanted: set[str] = {*campaigns, *self._shipped, *self._held_campaigns}
        self._unknown: set[str] = set()
        self._closed_campaigns: set[str] = set()
        self._spec_errors: dict[str, SpecError] = {}
        self._specs_checked = float("-inf")
        self._spec_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._batch_limit = batch_size
        self._failures = 0
        self._next_attempt = 0.0
        self._condition: str | None = None
        self._detail: str | None = None
        self._counts: dict[str, int] = {}
        self._count_lock = threading.Lock()
        self._sent = self._rejected = 0
        self._flushed_totals = (0, 0)  # sent and rejected when the last flush ended: flush() reports the rest
        self._final: ClientStatus | None = None  # the status when the state file was closed
        self._logged: set[tuple[str, str]] = set()
        self._closed = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._flush_at_exit = flush_at_exit
        if flush_at_exit is not None:
            import atexit

            atexit.register(self._exit_flush)
        if background:
            self._thread = threading.Thread(target=self._run, name="ldp-telemetry-sender", daemon=True)
            self._thread.start()
        elif self._wanted and self._upload_enabled:
            self.prepare()  # no background thread: the constructor is the caller's chosen moment for I/O

    # -- recording --------------------------------------------------------------------------------------------
    def record(self, campaign: str, value: Any) -> Recorded:
        """Perturb ``value`` for ``campaign`` and queue it; never does network I/O.

        Raises only :class:`RecordingError` subclasses (``InvalidValue`` is a ValueError, ``InvalidValueType`` a
        TypeError, ``UnsupportedSpec`` a ValueError); every operational condition is a returned status."""
        if not isinstance(campaign, str):
            raise InvalidValueType("campaign must be a string")
        if self._closed:
            return self._outcome(RecordStatus.CLIENT_CLOSED, campaign)
        spec = self._known_spec(campaign)
        if spec is RecordStatus.SPEC_UNAVAILABLE and self._upload_enabled:
            spec = self._hold(campaign, value)
        if isinstance(spec, RecordStatus):
            return self._outcome(spec if self._upload_enabled else RecordStatus.UPLOAD_DISABLED, campaign)
        recorded = self._queue_value(spec, campaign, value, self.clock())
        return self._outcome(recorded.status, campaign, report_id=recorded.report_id)

    def _queue_value(self, spec: Spec, campaign: str, value: Any, now: float) -> Recorded:
        "Validate and perturb ``value``, ask the ledger, then charge it and queue the report in one transaction"
        report_id = _uuid4()  # before the payload: a distributed report's id is its Prio3 nonce
        mechanism = None
        batch = None  # a distributed report names its batch: one per batch (ledger), sealed into its shares
        try:
            if spec.trust == "distributed":
                batch = utc_day(now)  # the UTC day of the clock (distributed.batch_of)
                payload = self._seal(spec, campaign, value, report_id, batch)
                if isinstance(payload, RecordStatus):  # nothing charged, nothing queued
                    return Recorded(payload)
            else:
                mechanism = self._checked_mechanism(spec)
                payload = self._perturb(spec, value, mechanism)  # validates the value before any quota/state check
        except RecordingError:
            raise
        except LDPError:  # the RAPPOR device secret could not be read
            return Recorded(RecordStatus.STATE_ERROR)
        if not self._upload_enabled:
            return Recorded(RecordStatus.UPLOAD_DISABLED)
        if spec.expired_on(utc_day(now)):  # the collector would reject it
            return Recorded(RecordStatus.CAMPAIGN_CLOSED)
        policy = self.policies.get(campaign, self.policy)
        report = {"report_id": report_id, "campaign": campaign, "fingerprint": spec.fingerprint, "payload": payload}
        try:
            with self.state.transaction():
                if self.ledger.refusal(campaign, spec.epsilon, policy, now, batch) is not None:
                    return Recorded(RecordStatus.REFUSED_BY_POLICY)
                if spec.mechanism == "rappor" and mechanism is not None:
                    report["payload"] = self._with_stored_secret(spec, value, mechanism, payload)
                delta = (spec.delta or 0.0) if spec.trust == "distributed" else 0.0  # local reports: pure epsilon
                self.ledger.charge(campaign, spec.epsilon, policy, now, delta=delta, batch=batch)
                self.queue.put(report, now)
                pending = self.queue.last_count
        except sqlite3.Error as exc:
            self._log_once(("state", type(exc).__name__), "the state file cannot be written: %s", exc)
            return Recorded(RecordStatus.STATE_ERROR)
        if pending >= self.batch_size:
            self._wake.set()
        return Recorded(RecordStatus.QUEUED, report_id)

    def _hold(self, campaign: str, value: Any) -> RecordStatus:
        "Keep a value whose spec has not reached the device in the state file (fsynced, like a record)"
        text = encode_value(value)  # InvalidValue(Type) for a value no campaign takes: a bug shows at once
        try:
            with self._held_lock:
                held = self.held.max_values > 0 and self.held.hold(campaign, text, self.clock())
                if held:
                    self._held_campaigns.add(campaign)
        except sqlite3.Error as exc:
            self._log_once(("state", type(exc).__name__), "the state file cannot be written: %s", exc)
            return RecordStatus.STATE_ERROR
        return RecordStatus.HELD if held else RecordStatus.SPEC_UNAVAILABLE

    def _release_held(self) -> None:
        """Queue the values held for campaigns whose spec is now known, each exactly as ``record`` would now (the
        ledger and policy asked at this moment), in the transaction that deletes it; drop, counted by reason, those
        of campaigns the collector does not have or closed and those the spec rejects"""
        try:
            self._release_each_held()
        except sqlite3.Error as exc:  # flush() and prepare() never raise for the state file: the values stay held
            self._log_once(("state", type(exc).__name__), "the state file cannot be written: %s", exc)

    def _release_each_held(self) -> None:
        released = False
        for campaign in sorted(self._held_campaigns):
            if not (campaign in self._specs or campaign in self._cached_at or campaign in self._unknown
                    or campaign in self._closed_campaigns or campaign in self._shipped):
                continue  # still no word from the collector
            try:
                spec = self._known_spec(campaign)
            except UnsupportedSpec as exc:
                spec = RecordStatus.SPEC_UNAVAILABLE
                self._log_once(("held_invalid", campaign), "campaign %s: held values dropped: %s", campaign, exc)
                self._count("held_dropped_invalid", self.held.drop([campaign], "held_dropped_invalid"))
            if isinstance(spec, RecordStatus):
                if spec is not RecordStatus.SPEC_UNAVAILABLE:  # unknown or closed: never reported
                    self._count(f"held_{spec.value}", self.held.drop([campaign], f"held_dropped_{spec.value}"))
            elif not self._release_campaign(spec, campaign):
                break  # the state file cannot be written: the rest waits for the next pass
            released = True
        if released:
            with self._held_lock:
                self._held_campaigns = self.held.campaigns()
                if not self._held_campaigns:
                    self.held.scrub()

    def _release_campaign(self, spec: Spec, campaign: str) -> bool:
        "Release one campaign's held values; False if the state file could not be written (the rest stays held)"
        self.held.expire(self.clock())
        outcomes, complete = self.held.release(campaign, lambda text: self._release_one(spec, campaign, text))
        for outcome in outcomes:
            self._count(f"held_{outcome}")
        return complete

    def _release_one(self, spec: Spec, campaign: str, text: str) -> str | None:
        "Queue one held value (inside the release's transaction); the outcome's name, None for a state error"
        try:
            status = self._queue_value(spec, campaign, decode_value(text), self.clock()).status
        except RecordingError as exc:  # the caller is gone: count and log instead of raising
            self._log_once(("held_invalid", campaign), "campaign %s: a held value was invalid: %s", campaign, exc)
            self.state.add_to_counter("held_dropped_invalid", 1)
            return "dropped_invalid"
        if status is RecordStatus.CAMPAIGN_CLOSED:  # the spec's last day passed while the value waited
            self.state.add_to_counter("held_dropped_campaign_closed", 1)
        return None if status is RecordStatus.STATE_ERROR else status.value

    def _checked_mechanism(self, spec: Spec) -> Mechanism:
        try:
            return self._mechanism(spec)
        except (SpecError, TypeError) as exc:
            raise UnsupportedSpec(f"campaign {spec.name!r}: {exc}") from None

    def _with_stored_secret(self, spec: Spec, value: Any, mechanism: Mechanism, payload: Any) -> Any:
        """The payload of a RAPPOR report, drawn with the secret the state file holds (call inside the record's
        transaction).  A secret drawn by this client is stored now, with the first report made with it; if another
        client on this directory stored one first, the mechanisms are rebuilt with that one and the value perturbed
        again, so a value never gets two permanent responses."""
        if self._secret_pending:
            assert self._secret is not None
            stored = self.state.store_device_secret(self._secret)
            self._secret_pending = False
            if stored != self._secret:
                self._secret = stored
                self._mechanisms = {k: m for k, m in self._mechanisms.items() if m.spec.mechanism != "rappor"}
        if getattr(mechanism, "secret", None) == self._secret:
            return payload
        return self._perturb(spec, value, self._checked_mechanism(spec))

    def _perturb(self, spec: Spec, value: Any, mechanism: Mechanism) -> Any:
        from .errors import ValueNotInDomain

        if isinstance(value, float) and value != value:
            raise InvalidValue(f"campaign {spec.name!r} cannot report NaN")
        try:
            return mechanism.perturb(value)
        except (ValueNotInDomain, SpecError) as exc:
            raise InvalidValue(str(exc)) from None
        except LDPError:
            raise
        except TypeError as exc:
            raise InvalidValueType(str(exc)) from None
        except (ValueError, ArithmeticError) as exc:
            raise InvalidValue(str(exc)) from None

    def _seal(self, spec: Spec, campaign: str, value: Any, report_id: str, batch: str) -> dict | RecordStatus:
        """A distributed report's payload for ``batch``: the value sharded and sealed to the leader and the helper,
        with HPKE configs the listing names and the app's configuration vouches for; or the status saying why not"""
        if isinstance(value, float) and value != value:
            raise InvalidValue(f"campaign {spec.name!r} cannot report NaN")
        try:
            from . import distributed
            from .errors import AggregatorMismatch

            if self._trusted is None:
                self._log_once(("aggregators", campaign), "campaign %s is distributed and this client has no "
                               "aggregators configured (Client(aggregators=...)): nothing is sealed", campaign)
                return RecordStatus.AGGREGATORS_NOT_CONFIGURED
            aggregators = self._aggregators.get(campaign)
            helper_configs = self._helper_configs or []
            key = canonical_json([campaign, aggregators, [c.to_dict() for c in helper_configs]])
            configs = self._sealers.get(key)
            if configs is None:
                configs = distributed.aggregator_configs(aggregators, self._trusted, helper_configs)
                self._sealers[key] = configs
        except AggregatorMismatch as exc:
            self._log_once(("aggregator_mismatch", campaign), "campaign %s: refused, the leader's listing does not "
                           "match the configured aggregators (%s)", campaign, exc)
            return RecordStatus.AGGREGATOR_MISMATCH
        except SpecError as exc:
            raise UnsupportedSpec(f"campaign {campaign!r}: {exc}") from None
        except ImportError as exc:  # client_sdk.vdaf.MissingDependency: no `distributed` extra on this device
            raise UnsupportedSpec(f"campaign {campaign!r} is distributed: {exc}") from None
        try:
            return distributed.seal_report(spec, value, *configs, report_id=report_id, batch=batch)
        except distributed.SealError as exc:  # a listed public key HPKE cannot use
            raise UnsupportedSpec(f"campaign {campaign!r}: {exc}") from None
        except TypeError as exc:
            raise InvalidValueType(str(exc)) from None
        except ValueError as exc:  # ValueNotInDomain too
            raise InvalidValue(str(exc)) from None

    # -- the helper's HPKE configs, from the helper ------------------------------------------------------------
    def _helper_configs_missing(self) -> bool:
        "True when the configured helper's HPKE configs are needed and neither fetched nor in the state file"
        trusted = self._trusted
        if trusted is None or trusted.helper_pin is not None:
            return False
        try:
            from .vdaf import hpke  # noqa: F401
        except ImportError:  # no `distributed` extra: record() names it (UnsupportedSpec) instead of holding
            return False
        if self._helper_configs is None and not self._helper_configs_loaded:
            self._helper_configs_loaded = True
            stored = self.state.setting(HELPER_CONFIGS_SETTING, "")
            try:
                cached = json.loads(stored) if stored else None
                if isinstance(cached, dict) and cached.get("url") == trusted.helper_url:
                    from .distributed import parse_hpke_configs

                    self._helper_configs = parse_hpke_configs(cached)
            except (ValueError, ImportError):
                pass  # fetched again
        return self._helper_configs is None

    def _fetch_helper_configs(self, timeout: float | None = None) -> None:
        "``GET <helper>/v1/hpke_config`` from the helper itself (no API key: it is not the leader's to see)"
        trusted = self._trusted
        if trusted is None or trusted.helper_pin is not None or trusted.helper_url is None:
            return
        try:
            from .distributed import parse_hpke_configs

            response = self._send(Request("GET", f"{trusted.helper_url}/v1/hpke_config",
                                          {"Accept": "application/json"}), timeout)
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            configs = parse_hpke_configs(response.json())
        except (TransportError, ValueError, ImportError) as exc:
            self._log_once(("helper", "hpke_config"), "the helper's HPKE config could not be fetched from %s: %s",
                           trusted.helper_url, exc)
            return
        self._helper_configs = configs
        self._helper_configs_wanted = False
        with self.state.without_fsync():  # a cache: fetched again if lost
            self.state.set_setting(HELPER_CONFIGS_SETTING, json.dumps(
                {"url": trusted.helper_url, "configs": [c.to_dict() for c in configs]}))

    def _count(self, name: str, amount: int = 1) -> None:
        if not amount:
            return
        with self._count_lock:
            self._counts[name] = self._counts.get(name, 0) + amount

    def _outcome(self, status: RecordStatus, campaign: str, detail: str = "", report_id: str | None = None
                 ) -> Recorded:
        self._count(status.value)
        if status not in (RecordStatus.QUEUED, RecordStatus.REFUSED_BY_POLICY, RecordStatus.HELD):
            self._log_once((status.value, campaign), "campaign %s: value not recorded (%s) %s", campaign,
                           status.value, detail)
        return Recorded(status, report_id)

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
        return ClientStatus(
            upload_enabled=self._upload_enabled, pending=count, pending_bytes=size, condition=self._condition,
            detail=self._detail, retry_in=max(0.0, self._next_attempt - self.clock()), recorded=dict(self._counts),
            sent=self._sent, rejected=self._rejected,
            dropped={name: stored.get(name, 0) for name in (*DROP_COUNTERS, DELETED_COUNTER, *HELD_DROP_COUNTERS,
                                                            *BATCH_REJECTIONS.values())},
            unknown_campaigns=sorted(self._unknown),
            held=self.held.count() if self._held_campaigns else 0)

    def _check_open(self, method: str) -> None:
        if self._final is not None:
            raise ClientClosed(f"{method}() needs the state file, which close() or delete_local_data() closed")

    def _close_state(self, deleted: bool = False, totals: tuple[int, int] | None = None) -> None:
        """Keep the last status for status() (a deleted directory left nothing queued or held), then close the file;
        ``totals``: the queue's, if the caller just read them (close's flush did)"""
        try:
            final = self._status(totals or self.queue.totals())
        except (sqlite3.Error, LDPError) as exc:  # the file failed under us: what memory knows, nothing on disk
            final = ClientStatus(self._upload_enabled, 0, 0, "state_error", str(exc), 0.0, dict(self._counts),
                                 self._sent, self._rejected, {}, sorted(self._unknown))
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
                if self._held_campaigns:
                    self.held.drop(None, "held_dropped_upload_disabled")
        if not enabled and self._held_campaigns:
            with self._held_lock:
                self._held_campaigns = set()
                self.held.scrub()
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
        self._wanted.update(campaigns)
        if self._thread is not None and not wait:
            self._wake.set()
            return all(self._has_spec(c) for c in self._wanted)
        if self._specs_needed() and self._upload_enabled:
            self._refresh_specs()
        if self._held_campaigns:
            self._release_held()
        return all(self._has_spec(c) for c in self._wanted)

    def _has_spec(self, campaign: str) -> bool:
        "A spec fetched, cached or shipped (one the collector has not listed as unknown)"
        return (campaign in self._specs or campaign in self._cached_at
                or (campaign in self._shipped and campaign not in self._unknown))

    def spec(self, campaign: str) -> Spec:
        """The campaign's spec from memory, the state file, the app's shipped specs or the collector (an explicit,
        blocking fetch: raises UnknownCampaign or CampaignUnavailable; ``record()`` never calls it)"""
        self._wanted.add(campaign)
        known = self._known_spec(campaign)
        if isinstance(known, Spec):
            return known
        return self._fetch_spec(campaign, self.clock())

    def _known_spec(self, campaign: str) -> Spec | RecordStatus:
        "The spec held in memory or in the state file, or why there is none; asks the sender to fetch what is due"
        if campaign in self._spec_errors:
            raise UnsupportedSpec(f"campaign {campaign!r}: {self._spec_errors[campaign]}")
        if campaign in self._closed_campaigns:
            return RecordStatus.CAMPAIGN_CLOSED
        held = self._specs.get(campaign)
        if held is None and campaign in self._cached_at:
            cached = self.state.cached_spec(campaign)
            if cached is not None:
                try:
                    spec, self._aggregators[campaign] = _split_cached(cached[0])
                    held = self._specs[campaign] = (spec, cached[1])
                except SpecError as exc:
                    self._spec_errors[campaign] = exc
                    raise UnsupportedSpec(f"campaign {campaign!r}: {exc}") from None
        if campaign not in self._wanted:
            self._wanted.add(campaign)
        if held is None:
            if campaign in self._unknown:
                return RecordStatus.UNKNOWN_CAMPAIGN
            self._wake.set()
            shipped = self._shipped.get(campaign)
            if shipped is None:
                return RecordStatus.SPEC_UNAVAILABLE
            self._aggregators.setdefault(campaign, shipped[1])
            return shipped[0]  # until the collector's spec arrives (fetched, it replaces this one)
        if self.clock() - held[1] >= self.spec_ttl:
            self._wake.set()  # stale: keep using it, refresh in the background
        if held[0].trust == "distributed" and self._helper_configs_missing():
            self._helper_configs_wanted = True
            self._wake.set()
            return RecordStatus.SPEC_UNAVAILABLE
        return held[0]

    def _specs_needed(self) -> bool:
        if self._helper_configs_wanted:
            return True
        now = self.clock()
        for campaign in list(self._wanted):
            if campaign in self._unknown or campaign in self._closed_campaigns:
                if now - self._specs_checked >= self.spec_ttl:
                    return True
                continue
            fetched = self._specs[campaign][1] if campaign in self._specs else self._cached_at.get(campaign)
            if fetched is None or now - fetched >= self.spec_ttl:
                return True
        return False

    def _refresh_specs(self, timeout: float | None = None) -> bool:
        "One ``GET /v1/campaigns`` for every wanted spec; False (and a backoff) if the collector did not answer"
        with self._spec_lock:
            now = self.clock()
            try:
                response = self._send(Request("GET", f"{self.url}/v1/campaigns", dict(self._headers)), timeout)
            except TransportError as exc:
                self._fail("unreachable", str(exc), None)
                return False
            if response.status != 200:
                self._fail(condition_for(response.status), f"HTTP {response.status}: {problem(response)}",
                           retry_after(response, now))
                return False
            listing = _parsed_listing(response.body)
            if listing is None:
                self._fail("unexpected_answer", "GET /v1/campaigns did not answer a list of campaigns", None)
                return False
            fresh: dict[str, tuple[Spec, dict, str]] = {}
            for campaign in list(self._wanted):
                item = listing.items.get(campaign)
                if item is None:
                    if campaign not in self._unknown:
                        self._log_once(("unknown", campaign), "campaign %s: the collector has no such campaign",
                                       campaign)
                    self._unknown.add(campaign)
                    continue
                self._unknown.discard(campaign)
                if item.get("closed") is True:
                    self._closed_campaigns.add(campaign)
                    continue
                self._closed_campaigns.discard(campaign)
                parsed = listing.parsed(campaign)
                if isinstance(parsed, SpecError):
                    self._spec_errors[campaign] = parsed
                    continue
                if parsed is None:
                    self._log_once(("fingerprint", campaign), "campaign %s: the spec does not match its fingerprint",
                                   campaign)
                    continue
                self._spec_errors.pop(campaign, None)
                fresh[campaign] = parsed
            with self.state.without_fsync():  # a cache: lost in a power cut, fetched again
                self.state.cache_spec_texts([(campaign, text, spec.fingerprint, now)
                                             for campaign, (spec, _, text) in fresh.items()])
            for campaign, (spec, body, _) in fresh.items():
                shipped = self._shipped.get(campaign)
                if shipped is not None and shipped[0].fingerprint != spec.fingerprint:
                    self._log_once(("superseded", campaign), "campaign %s: the collector's spec (fingerprint %s) "
                                   "replaces the one shipped with the app (%s)", campaign, spec.fingerprint,
                                   shipped[0].fingerprint)
                self._aggregators[campaign] = body.get("aggregators")
                self._specs[campaign] = (spec, now)
                self._cached_at[campaign] = now
            if any(spec.trust == "distributed" for spec, _, _ in fresh.values()):
                self._fetch_helper_configs(timeout)  # with every listing: the helper may have rotated its key
            self._specs_checked = now
            self._succeeded()
            return True

    def _fetch_spec(self, campaign: str, now: float) -> Spec:
        from urllib.parse import quote

        try:
            response = self._send(Request("GET", f"{self.url}/v1/campaigns/{quote(campaign, safe='')}",
                                          dict(self._headers)))
        except TransportError:
            raise CampaignUnavailable(f"cannot fetch the spec of campaign {campaign!r}") from None
        if response.status == 404:
            raise UnknownCampaign(f"the collector has no campaign {campaign!r}")
        if response.status != 200:
            raise CampaignUnavailable(f"fetching campaign {campaign!r}: HTTP {response.status} {problem(response)}")
        body = response.json()
        spec = load_spec(body["spec"])
        if spec.fingerprint != body.get("fingerprint") or spec.name != campaign:
            raise LDPError(f"campaign {campaign!r}: the spec does not match its fingerprint")
        cached = _with_aggregators(spec, body["spec"], body.get("aggregators"))
        self.state.cache_spec(campaign, cached, spec.fingerprint, now)
        self._aggregators[campaign] = cached.get("aggregators")
        self._specs[campaign] = (spec, now)
        self._cached_at[campaign] = now
        if spec.trust == "distributed":
            self._fetch_helper_configs()
        return spec

    def _mechanism(self, spec: Spec) -> Mechanism:
        mechanism = self._mechanisms.get(spec.fingerprint)
        if mechanism is None:
            if spec.mechanism == "rappor":  # its memoized responses belong to this device's secret
                mechanism = mechanism_from_spec(spec, rng=self.rng, **self._rappor_options(spec))
            elif self.rng is None:
                mechanism = _shared_mechanism(spec)
            else:
                mechanism = mechanism_from_spec(spec, rng=self.rng)
            self._mechanisms[spec.fingerprint] = mechanism
        return mechanism

    def _rappor_options(self, spec: Spec) -> dict[str, Any]:
        "The device secret and its cohort (see :meth:`_device_secret`)"
        from .rappor import cohort_from_secret

        secret = self._device_secret()
        assert spec.rappor is not None  # only RAPPOR specs come here
        return {"secret": secret, "cohort": cohort_from_secret(secret, spec.rappor.m)}

    def _device_secret(self) -> bytes:
        """The RAPPOR device secret: the state file's; else an older SDK's secret file, imported (committed, then the
        file removed); else a fresh one from the OS CSPRNG, stored with the first report made with it"""
        with self.state.lock:
            if self._secret is None:
                from . import device_state

                try:
                    stored = None if self.state.fresh else self.state.device_secret()
                    if stored is not None:
                        device_state.remove_legacy_file(self.state_dir)  # if a crash left it after its import
                    else:
                        stored = device_state.import_legacy_secret(self.state_dir, self.state.store_device_secret)
                except (sqlite3.Error, OSError) as exc:  # a STATE_ERROR for record(), like a damaged secret file
                    raise StateFileError(f"the RAPPOR device secret cannot be read or stored: {exc}") from None
                if stored is None:
                    self._secret, self._secret_pending = secrets.token_bytes(device_state.SECRET_BYTES), True
                else:
                    self._secret = stored
            return self._secret

    # -- delivery ---------------------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None, *, retry: bool = True) -> FlushResult:
        """Send queued reports until the queue is empty or ``timeout`` seconds pass, retrying with backoff (or,
        with ``retry=False``, trying at once and stopping at the first failure)"""
        if self._final is not None:  # after close(): nothing can be sent, the status close() left says the rest
            return FlushResult(remaining=self._final.pending, condition=self._final.condition)
        deadline = time.monotonic() + (timeout if timeout is not None else max(self.close_timeout, 30.0))
        result = FlushResult()
        remaining = None
        if self._upload_enabled and self._send_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            try:
                if self._held_campaigns:  # values recorded before their spec: fetch it (flush is the caller's I/O)
                    if self._specs_needed() and self.clock() >= self._next_attempt:
                        self._refresh_specs(max(0.001, min(self.timeout, deadline - time.monotonic())))
                    self._release_held()
                remaining = len(self.queue)
                if remaining:  # an empty queue (close after a flush): nothing to expire or send
                    result.dropped = self.queue.drop_expired(self.clock())
                    self._deliver(result, deadline, retry)
                    remaining = None
                self._account_background(result)
            finally:
                self._send_lock.release()
        result.remaining = len(self.queue) if remaining is None else remaining
        result.condition = self._condition
        return result

    def _account_background(self, result: FlushResult) -> None:
        """What the background sender got acknowledged since the last flush ended (call holding the send lock,
        under which every send counts)"""
        sent, rejected = self._flushed_totals
        result.background_sent = self._sent - sent - result.sent
        result.background_rejected = self._rejected - rejected - result.rejected
        self._flushed_totals = (self._sent, self._rejected)

    def _deliver(self, result: FlushResult, deadline: float, retry: bool) -> None:
        """One campaign per request, campaigns in a random order, until the queue is empty or the deadline; the
        reports acknowledged in a round leave the queue together at its end (or before a backoff wait)"""
        while self._upload_enabled:
            campaigns = _shuffled(self.queue.campaigns())
            if not campaigns:
                return
            acknowledged: list[str] = []
            try:
                for campaign in campaigns:
                    wait = self._next_attempt - self.clock()
                    if wait > 0 and retry:
                        if time.monotonic() + wait > deadline:
                            return
                        self._remove(acknowledged)
                        self.sleep(wait)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or not self._upload_enabled:
                        return
                    if not self._send_batch(campaign, result, min(self.timeout, remaining), acknowledged) \
                            and not retry:
                        return
            finally:
                self._remove(acknowledged)

    def _remove(self, acknowledged: list[str]) -> None:
        "Take acknowledged reports off the queue (one statement, no fsync: see ReportQueue.remove)"
        if acknowledged:
            self.queue.remove(acknowledged)
            acknowledged.clear()

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
            import atexit

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
            wait = self._next_attempt - self.clock()
            self._wake.wait(min(self.flush_interval, wait) if wait > 0 else self.flush_interval)
            self._wake.clear()

    def _background_pass(self) -> None:
        if not self._upload_enabled or self._closed or self.clock() < self._next_attempt:
            return
        if self._specs_needed() and not self._refresh_specs():
            return
        if self._held_campaigns:
            self._release_held()
        result = FlushResult()
        with self._send_lock:
            while not self._closed and self._upload_enabled:
                campaigns = _shuffled(self.queue.campaigns())
                if not campaigns:
                    return
                acknowledged: list[str] = []
                try:
                    for campaign in campaigns:
                        if self._closed or not self._upload_enabled or self.clock() < self._next_attempt:
                            return
                        if not self._send_batch(campaign, result, self.timeout, acknowledged):
                            return
                finally:
                    self._remove(acknowledged)

    def _send_batch(self, campaign: str, result: FlushResult, timeout: float,
                    acknowledged: list[str] | None = None) -> bool:
        """Send the oldest batch of ``campaign``; False if the attempt failed (the batch stays, a backoff is set).
        The reports the answer acknowledges leave the queue now, or are added to ``acknowledged`` for the caller
        to remove (they are then sent again only if the device dies first: the collector counts them as
        duplicates)"""
        batch = self.queue.peek(self._batch_limit, self.max_request_bytes, campaign)
        if not batch:
            return True
        body = ('{"reports":[' + ",".join(r.text for r in batch) + "]}").encode()
        headers = {**self._headers, "Content-Type": "application/json"}
        if len(body) >= GZIP_MIN_BYTES:
            import gzip

            body, headers["Content-Encoding"] = gzip.compress(body, 6), "gzip"
        ids = [r.report_id for r in batch]
        try:
            response = self._send(Request("POST", f"{self.url}/v1/reports", headers, body), timeout)
        except TransportError as exc:
            self._fail("unreachable", str(exc), None)
            return False
        if 200 <= response.status < 300:
            verdict = acknowledgement(response, ids)
            if isinstance(verdict, str):
                self._fail("unexpected_answer", f"HTTP {response.status}: {verdict}", None)
                return False
            for report_id, reason in list(verdict.items())[:20]:
                logger.warning("collector rejected report %s: %s", report_id, reason)
            for slug, counter in BATCH_REJECTIONS.items():
                if late := sum(slug in reason for reason in verdict.values()):
                    self.state.add_to_counter(counter, late)
            if acknowledged is None:
                self.queue.remove(ids)
            else:
                acknowledged.extend(ids)
            result.sent += len(ids) - len(verdict)
            result.rejected += len(verdict)
            self._sent += len(ids) - len(verdict)
            self._rejected += len(verdict)
            self._succeeded()
            return True
        if response.status == 413 and len(batch) > 1:
            self._batch_limit = max(1, len(batch) // 2)  # too big for this collector: split, never drop
            return True
        self._fail(condition_for(response.status), f"HTTP {response.status}: {problem(response)}",
                   retry_after(response, self.clock()))
        return False

    def _succeeded(self) -> None:
        self._failures, self._next_attempt = 0, 0.0
        self._batch_limit = min(self.batch_size, self._batch_limit * 2)
        if self._condition is not None:
            logger.info("delivery recovered (was %s)", self._condition)
            self._set_condition(None, None)

    def _fail(self, condition: str, detail: str, retry_after: float | None) -> None:
        "Exponential backoff with full jitter (AWS architecture blog), never shorter than Retry-After"
        self._failures += 1
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** min(self._failures - 1, 32))
        delay = self._jitter.uniform(0, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_cap))
        self._next_attempt = self.clock() + delay
        if condition != self._condition:
            logger.warning("delivery stalled: %s (%s); reports stay queued, retrying with backoff", condition,
                           detail)
        else:
            logger.debug("send failed (%s); retrying in %.2f s", detail, delay)
        self._set_condition(condition, detail)

    def _set_condition(self, condition: str | None, detail: str | None) -> None:
        changed = condition != self._condition
        self._condition, self._detail = condition, detail
        if changed and self._on_condition is not None:
            try:
                self._on_condition(condition, detail)
            except Exception:  # noqa: BLE001 (the app's callback must not break delivery)
                logger.exception("on_condition callback failed")

    def _log_once(self, key: tuple[str, str], message: str, *args: object) -> None:
        if key in self._logged:
            logger.debug(message, *args)
        else:
            self._logged.add(key)
            logger.warning(message, *args)

    def _send(self, request: Request, timeout: float | None = None) -> Response:
        return self.transport.send(request, self.timeout if timeout is None else timeout)


class _Listing:
    """A ``GET /v1/campaigns`` answer, parsed: its items by name, and each item's spec parsed and checked against its
    fingerprint on first use (the Spec, the body the state file caches and that body's JSON; a SpecError; or None
    when the fingerprint does not match)"""

    def __init__(self, body: bytes, items: dict[str, dict]) -> None:
        self.body, self.items = body, items
        self._parsed: dict[str, tuple[Spec, dict, str] | SpecError | None] = {}

    def parsed(self, campaign: str) -> tuple[Spec, dict, str] | SpecError | None:
        if campaign in self._parsed:
            return self._parsed[campaign]
        item = self.items[campaign]
        result: tuple[Spec, dict, str] | SpecError | None
        try:
            spec = load_spec(item["spec"])
        except SpecError as exc:
            result = exc
        else:
            if spec.fingerprint != item.get("fingerprint") or spec.name != campaign:
                result = None
            else:
                body = _with_aggregators(spec, item["spec"], item.get("aggregators"))
                result = (spec, body, json.dumps(body))
        self._parsed[campaign] = result
        return result


_LAST_LISTING: list[_Listing] = []


def _parsed_listing(body: bytes) -> _Listing | None:
    """The parsed listing, from the process's last one when the collector answered the same bytes (every device of
    a process, as in the demo, gets the same listing: Specs are immutable, so they can share its parse)"""
    last = _LAST_LISTING[:1]
    if last and last[0].body == body:
        return last[0]
    items = campaign_list(Response(200, {}, body))
    if items is None:
        return None
    listing = _Listing(body, items)
    _LAST_LISTING[:] = [listing]
    return listing


_SHARED_MECHANISMS: dict[str, Mechanism] = {}


def _shared_mechanism(spec: Spec) -> Mechanism:
    """The process's randomizer for ``spec`` drawing from the OS CSPRNG (built once per spec: it keeps no state
    between reports); never a RAPPOR one, whose memoized responses belong to one device"""
    mechanism = _SHARED_MECHANISMS.get(spec.fingerprint)
    if mechanism is None:
        if len(_SHARED_MECHANISMS) >= 256:
            _SHARED_MECHANISMS.clear()
        mechanism = _SHARED_MECHANISMS[spec.fingerprint] = mechanism_from_spec(spec)
    return mechanism


def _with_aggregators(spec: Spec, body: dict, aggregators: Any) -> dict:
    "What the state file caches: the spec as listed, with a distributed campaign's aggregators block"
    return {**body, "aggregators": aggregators} if spec.trust == "distributed" else body


def _split_cached(body: dict) -> tuple[Spec, Any]:
    "The spec and the aggregators block (None for a local campaign) of a cached body"
    if isinstance(body, dict) and "aggregators" in body:
        spec_body = dict(body)
        aggregators = spec_body.pop("aggregators")
        return load_spec(spec_body), aggregators
    return load_spec(body), None


def _shuffled(items: list[str]) -> list[str]:
    "Fisher-Yates with the OS CSPRNG: the order of a device's requests says nothing about its campaigns"
    for i in range(len(items) - 1, 0, -1):
        j = secrets.randbelow(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def _uuid4() -> str:
    "A random (version 4) UUID from the OS CSPRNG, without importing ``uuid``"
    raw = bytearray(secrets.token_bytes(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def delete_local_data(state_dir: str | Path) -> None:
    "Remove an SDK state directory without opening it (for example after a StateFileError)"
    _delete_state_dir(state_dir)
