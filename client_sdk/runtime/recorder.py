"""The recorder: validate a value, ask the policy and the ledger, perturb or seal it, and queue the report.

The value is validated (perturbed, or sharded and sealed for a distributed campaign) first, then the privacy ledger
is asked, then the ledger charge and the queue insert happen in one transaction.  A value recorded before its
campaign's spec reached the device is held, raw, in the state file (``held.py``) and released here when the spec
arrives, in the transaction that deletes it.  The randomizers are built once per spec; a RAPPOR one holds this
device's secret (read from the state file, imported from an older SDK's file, or drawn and stored with the first
report made with it).
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..clock import utc_day
from ..errors import (
    AggregatorMismatch,
    LDPError,
    RecordingError,
    StateFileError,
    UnsupportedSpec,
)
from ..kinds import CampaignKind, DeviceContext, kind_of
from ..mechanisms import Mechanism
from ..randomness import RandomSource
from ..spec import Spec
from . import device_state
from .held import HeldValues, decode_value, encode_value
from .ledger import PrivacyLedger, ReportPolicy
from .queue import ReportQueue
from .spec_cache import OnceLog, SpecCache
from .state_file import StateFile
from .status import Recorded, RecordStatus

logger = logging.getLogger("client_sdk")


class Recorder:
    """Turns values into queued reports, and keeps what ``status().recorded`` counts.

    ``upload_enabled`` is the consent switch's current state; ``wake`` asks the sender to send a full batch."""

    def __init__(self, state_dir: Path, state: StateFile, queue: ReportQueue, ledger: PrivacyLedger, held: HeldValues,
                 specs: SpecCache, *, rng: RandomSource | None, policy: ReportPolicy,
                 policies: dict[str, ReportPolicy], batch_size: int, held_campaigns: set[str],
                 clock: Callable[[], float], upload_enabled: Callable[[], bool], wake: threading.Event,
                 log_once: OnceLog) -> None:
        self.state_dir, self.state, self.queue, self.ledger = state_dir, state, queue, ledger
        self.held, self.specs = held, specs
        self.rng, self.policy, self.policies, self.batch_size = rng, policy, policies, batch_size
        self.clock, self.upload_enabled, self.wake, self.log_once = clock, upload_enabled, wake, log_once
        self.memos: dict[str, dict] = {}  # each kind's in-memory memo on this device (its randomizers)
        self.device_secret = DeviceSecret(state_dir, state)
        self.held_campaigns = held_campaigns  # campaigns with values held in the state file
        self.held_lock = threading.Lock()  # a hold and its campaign's entry here, against a release's re-read
        self.counts: dict[str, int] = {}
        self.count_lock = threading.Lock()

    def count(self, name: str, amount: int = 1) -> None:
        if not amount:
            return
        with self.count_lock:
            self.counts[name] = self.counts.get(name, 0) + amount

    def outcome(self, status: RecordStatus, campaign: str, detail: str = "", report_id: str | None = None
                ) -> Recorded:
        "Count ``status`` (and log it once if the value was not recorded)"
        self.count(status.value)
        if status not in (RecordStatus.QUEUED, RecordStatus.REFUSED_BY_POLICY, RecordStatus.HELD):
            self.log_once((status.value, campaign), "campaign %s: value not recorded (%s) %s", campaign,
                          status.value, detail)
        return Recorded(status, report_id)

    def queue_value(self, spec: Spec, campaign: str, value: Any, now: float) -> Recorded:
        "Have the kind make ``value``'s report, ask the ledger, then charge it and queue the report in one transaction"
        report_id = _uuid4()  # before the payload: a distributed report's id is its Prio3 nonce
        kind = kind_of(spec)
        batch = kind.batch_of(spec, now)  # a report that names its batch is charged once per batch, sealed into it
        ctx = self.context(kind, campaign, report_id, batch)
        try:
            payload = kind.make_report(ctx, spec, value)  # validates the value first
            if isinstance(payload, RecordStatus):  # nothing charged, nothing queued
                return Recorded(payload)
        except RecordingError:
            raise
        except LDPError:  # the device secret could not be read
            return Recorded(RecordStatus.STATE_ERROR)
        if not self.upload_enabled():
            return Recorded(RecordStatus.UPLOAD_DISABLED)
        if spec.expired_on(utc_day(now)):  # the collector would reject it
            return Recorded(RecordStatus.CAMPAIGN_CLOSED)
        policy = self.policies.get(campaign, self.policy).for_period(kind.report_period(spec), kind.period_origin(spec))
        report = {"report_id": report_id, "campaign": campaign, "fingerprint": spec.fingerprint, "payload": payload}
        try:
            with self.state.transaction():
                epsilon, delta = kind.ledger_charge(spec, ctx)
                if self.ledger.refusal(campaign, epsilon, policy, now, batch, delta=delta,
                                      budget=spec.budget) is not None:
                    return Recorded(RecordStatus.REFUSED_BY_POLICY)
                if ctx.finish is not None:  # e.g. a RAPPOR report: drawn with the secret the state file holds
                    report["payload"] = ctx.finish(payload)
                self.ledger.charge(campaign, epsilon, policy, now, delta=delta, batch=batch)
                self.queue.put(report, now)
                pending = self.queue.last_count
        except sqlite3.Error as exc:
            self.log_once(("state", type(exc).__name__), "the state file cannot be written: %s", exc)
            return Recorded(RecordStatus.STATE_ERROR)
        if pending >= self.batch_size:
            self.wake.set()
        return Recorded(RecordStatus.QUEUED, report_id)

    def context(self, kind: CampaignKind, campaign: str, report_id: str = "", batch: str | None = None
                ) -> DeviceContext:
        "What the kind may use to make one report (``client_sdk.kinds.DeviceContext``)"
        return DeviceContext(rng=self.rng, state=KindStateSlot(self.state, kind.name),
                             memo=self.memos.setdefault(kind.name, {}), secret=self.device_secret,
                             sealing_configs=lambda: self._sealing_configs(campaign), log_once=self.log_once,
                             campaign=campaign, report_id=report_id, batch=batch)

    def _sealing_configs(self, campaign: str) -> tuple[Any, Any] | RecordStatus:
        """The leader's and helper's HPKE configs for ``campaign`` (``DeviceContext.sealing_configs``), or the status
        saying why a report cannot be sealed; SpecError, or ImportError without the ``distributed`` extra"""
        if self.specs.trusted is None:
            self.log_once(("aggregators", campaign), "campaign %s is distributed and this client has no "
                          "aggregators configured (Client(aggregators=...)): nothing is sealed", campaign)
            return RecordStatus.AGGREGATORS_NOT_CONFIGURED
        try:
            return self.specs.sealing_configs(campaign)
        except AggregatorMismatch as exc:
            self.log_once(("aggregator_mismatch", campaign), "campaign %s: refused, the leader's listing does not "
                          "match the configured aggregators (%s)", campaign, exc)
            return RecordStatus.AGGREGATOR_MISMATCH

    # What tests read: the randomizers the kinds built, and the device secret
    @property
    def mechanisms(self) -> dict[str, Mechanism]:
        return {key: held for memo in self.memos.values() for key, held in memo.items()
                if isinstance(held, Mechanism)}

    @property
    def secret(self) -> bytes | None:
        return self.device_secret.current

    def checked_mechanism(self, spec: Spec) -> Mechanism:
        "The randomizer the spec's kind makes its reports with (UnsupportedSpec if none)"
        kind = kind_of(spec)
        return kind.randomizer_of(self.context(kind, spec.name), spec)  # type: ignore[no-any-return]

    # -- values held for their spec ---------------------------------------------------------------------------
    def hold(self, campaign: str, value: Any) -> RecordStatus:
        "Keep a value whose spec has not reached the device in the state file (fsynced, like a record)"
        text = encode_value(value)  # InvalidValue(Type) for a value no campaign takes: a bug shows at once
        try:
            with self.held_lock:
                held = self.held.max_values > 0 and self.held.hold(campaign, text, self.clock())
                if held:
                    self.held_campaigns.add(campaign)
        except sqlite3.Error as exc:
            self.log_once(("state", type(exc).__name__), "the state file cannot be written: %s", exc)
            return RecordStatus.STATE_ERROR
        return RecordStatus.HELD if held else RecordStatus.SPEC_UNAVAILABLE

    def release_held(self) -> None:
        """Queue the values held for campaigns whose spec is now known, each exactly as ``record`` would now (the
        ledger and policy asked at this moment), in the transaction that deletes it; drop, counted by reason, those
        of campaigns the collector does not have or closed and those the spec rejects"""
        try:
            self._release_each_held()
        except sqlite3.Error as exc:  # flush() and prepare() never raise for the state file: the values stay held
            self.log_once(("state", type(exc).__name__), "the state file cannot be written: %s", exc)

    def _release_each_held(self) -> None:
        released = False
        for campaign in sorted(self.held_campaigns):
            if not self.specs.answered(campaign):
                continue  # still no word from the collector
            try:
                spec = self.specs.known(campaign)
            except UnsupportedSpec as exc:
                spec = RecordStatus.SPEC_UNAVAILABLE
                self.log_once(("held_invalid", campaign), "campaign %s: held values dropped: %s", campaign, exc)
                self.count("held_dropped_invalid", self.held.drop([campaign], "held_dropped_invalid"))
            if isinstance(spec, RecordStatus):
                if spec is not RecordStatus.SPEC_UNAVAILABLE:  # unknown or closed: never reported
                    self.count(f"held_{spec.value}", self.held.drop([campaign], f"held_dropped_{spec.value}"))
            elif not self._release_campaign(spec, campaign):
                break  # the state file cannot be written: the rest waits for the next pass
            released = True
        if released:
            with self.held_lock:
                self.held_campaigns = self.held.campaigns()
                if not self.held_campaigns:
                    self.held.scrub()

    def _release_campaign(self, spec: Spec, campaign: str) -> bool:
        "Release one campaign's held values; False if the state file could not be written (the rest stays held)"
        self.held.expire(self.clock())
        outcomes, complete = self.held.release(campaign, lambda text: self._release_one(spec, campaign, text))
        for outcome in outcomes:
            self.count(f"held_{outcome}")
        return complete

    def _release_one(self, spec: Spec, campaign: str, text: str) -> str | None:
        "Queue one held value (inside the release's transaction); the outcome's name, None for a state error"
        try:
            status = self.queue_value(spec, campaign, decode_value(text), self.clock()).status
        except RecordingError as exc:  # the caller is gone: count and log instead of raising
            self.log_once(("held_invalid", campaign), "campaign %s: a held value was invalid: %s", campaign, exc)
            self.state.add_to_counter("held_dropped_invalid", 1)
            return "dropped_invalid"
        if status is RecordStatus.CAMPAIGN_CLOSED:  # the spec's last day passed while the value waited
            self.state.add_to_counter("held_dropped_campaign_closed", 1)
        return None if status is RecordStatus.STATE_ERROR else status.value

    def drop_all_held(self) -> None:
        "Forget the held campaigns after the consent switch deleted their values; scrub what they left"
        with self.held_lock:
            self.held_campaigns = set()
            self.held.scrub()



class KindStateSlot:
    "A kind's own state on this device: a JSON object in the state file's settings, under the kind's name"

    def __init__(self, state: StateFile, kind: str) -> None:
        self.state, self.key = state, f"kind_state.{kind}"

    def load(self) -> dict:
        loaded = json.loads(self.state.setting(self.key, "{}"))
        return loaded if isinstance(loaded, dict) else {}

    def save(self, value: dict) -> None:
        self.state.set_setting(self.key, json.dumps(value, sort_keys=True, separators=(",", ":")))


class DeviceSecret:
    """The device secret (RAPPOR memoizes its responses by it): the state file's; else an older SDK's secret file,
    imported (committed, then the file removed); else a fresh one from the OS CSPRNG, stored with the first report
    made with it (:meth:`store`, in that report's transaction)"""

    def __init__(self, state_dir: Path, state: StateFile) -> None:
        self.state_dir, self.state = state_dir, state
        self.current: bytes | None = None
        self.pending = False

    @property
    def value(self) -> bytes:
        with self.state.lock:
            if self.current is None:
                try:
                    stored = None if self.state.fresh else self.state.device_secret()
                    if stored is not None:
                        device_state.remove_legacy_file(self.state_dir)  # if a crash left it after its import
                    else:
                        stored = device_state.import_legacy_secret(self.state_dir, self.state.store_device_secret)
                except (sqlite3.Error, OSError) as exc:  # a STATE_ERROR for record(), like a damaged secret file
                    raise StateFileError(f"the RAPPOR device secret cannot be read or stored: {exc}") from None
                if stored is None:
                    self.current, self.pending = secrets.token_bytes(device_state.SECRET_BYTES), True
                else:
                    self.current = stored
            return self.current

    def store(self) -> bytes:
        "Store a secret drawn here (call inside the record's transaction); the stored one: another client's wins"
        if self.pending:
            assert self.current is not None
            self.current = self.state.store_device_secret(self.current)
            self.pending = False
        return self.value


def _uuid4() -> str:
    "A random (version 4) UUID from the OS CSPRNG, without importing ``uuid``"
    raw = bytearray(secrets.token_bytes(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
