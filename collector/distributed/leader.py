"""The leader's side: campaign creation with the helper, uploads, aggregation jobs (the driver), collection.

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

The driver (:class:`Driver`) runs in every gunicorn worker of ``serve --role leader``; a file lock
(``<database>.aggregator-lock``) lets one of them work at a time, and ``ldp-telemetry aggregate`` and collection take
the same lock.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from client_sdk.errors import LDPError
from client_sdk.spec import Spec

from ..storage import CampaignVersion, StorageBase, open_storage
from . import hpke_keys
from .aggregation import CampaignVdaf, Verified, b64d, b64e
from .helper import LEADER_ROLE, checksum
from .peer import Backoff, PeerClient, PeerRefused, PeerUnavailable
from .store import BatchKey, DistCampaign, DistStore, failpoint

logger = logging.getLogger("collector")
JOB_SIZE = 1000  # reports per aggregation job
PAYLOAD_FIELDS = frozenset(("public_share", "leader_share", "helper_share"))  # and "batch" (devices since 0.x)
FUTURE_BATCH_DAYS = 1  # a report may name a batch this many days after the leader's day (a device's clock ahead)
SEALED_FIELDS = frozenset(("config_id", "ciphertext"))


class CollectError(LDPError):
    "Collection cannot proceed: (status, slug, detail, field); ``release`` is the batch's stored one, if collected"

    def __init__(self, status: int, slug: str, detail: str, field: str = "batch",
                 retry_after: int | None = None, release: dict | None = None) -> None:
        super().__init__(detail)
        self.status, self.slug, self.detail, self.field, self.retry_after = status, slug, detail, field, retry_after
        self.release = release


# -- campaigns --------------------------------------------------------------------------------------------------
def provision_campaign(storage: StorageBase, store: DistStore, peer: PeerClient, helper_url: str, source: dict,
                       day: str) -> tuple[CampaignVersion, bool]:
    """Create a distributed campaign: draw its verify key (kept before anything is sent, so a retry reuses it),
    provision the helper with the spec and the key, then store the version here.  Idempotent."""
    from client_sdk.spec import load_spec

    spec = load_spec(source)  # SpecError names the field
    existing = storage.find_version(spec.name, spec.fingerprint)
    known = store.campaign(spec.name, spec.fingerprint)
    if existing is not None and known is not None and known.state == "ready":
        return existing, False
    vdaf_size = CampaignVdaf(spec, b"").vdaf.VERIFY_KEY_SIZE
    if known is None:
        with store.transaction() as conn:
            known = store.campaign(spec.name, spec.fingerprint)
            if known is None:
                known = DistCampaign(spec.name, spec.fingerprint, "leader", secrets.token_bytes(vdaf_size),
                                     helper_url, None, "provisioning")
                store.put_campaign(known, conn)
    helper_config = peer.hpke_configs()[0]
    spec_dict = {k: v for k, v in spec.to_dict(derived=False).items() if k not in ("version", "fingerprint")}
    peer.provision(spec.name, {"spec": spec_dict, "verify_key": b64e(known.verify_key)})
    campaign, created = storage.create_campaign(source, day)
    with store.transaction() as conn:
        store.put_campaign(DistCampaign(spec.name, spec.fingerprint, "leader", known.verify_key, helper_url,
                                        helper_config, "ready"), conn)
    _VDAF_CACHE.clear()
    return campaign, created


def aggregators_block(store: DistStore, campaign: CampaignVersion) -> dict | None:
    "The listing's ``aggregators`` block (both HPKE configs and the helper's URL), or None"
    known = store.campaign(campaign.name, campaign.fingerprint)
    if known is None or known.role != "leader" or known.state != "ready":
        return None
    return {"leader": {"hpke_config": hpke_keys.configs(store)[0]},
            "helper": {"url": known.helper_url, "hpke_config": known.helper_hpke_config}}


_VDAF_CACHE: dict[tuple[str, str, str], tuple[DistCampaign, CampaignVdaf]] = {}


def campaign_vdaf(store: DistStore, spec: Spec) -> tuple[DistCampaign, CampaignVdaf] | None:
    key = (str(store.storage.path), spec.name, spec.fingerprint)
    cached = _VDAF_CACHE.get(key)
    if cached is None:
        known = store.campaign(spec.name, spec.fingerprint)
        if known is None or known.state != "ready":
            return None
        cached = _VDAF_CACHE[key] = (known, CampaignVdaf(spec, known.verify_key))
    return cached


# -- uploads ----------------------------------------------------------------------------------------------------
@dataclass
class UploadResult:
    accepted: int = 0
    duplicate: int = 0
    rejected: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index, report_id, field, reason)


def accept_reports(store: DistStore, items: list[tuple[int, dict, CampaignVersion]], day: str) -> UploadResult:
    """Check each distributed report, open the leader's share, and store the valid ones in one transaction.

    A report goes into the batch its payload names (a device's clock behind or ahead of the leader's does not move
    it into another batch), or into ``day`` if it names none (devices of earlier versions).  A batch more than
    ``FUTURE_BATCH_DAYS`` after ``day`` is refused (``batch-in-future``), one already collected too
    (``batch-collected``): both are final for the report."""
    from client_sdk import distributed
    from client_sdk.vdaf.hpke import HpkeError, open_sealed

    result = UploadResult()
    pairs = {pair.config.id: pair for pair in hpke_keys.key_pairs(store)}  # once per upload, not per report
    rows: dict[BatchKey, list[tuple]] = {}
    reasons: dict[BatchKey, Counter] = {}
    indices: dict[bytes, int] = {}
    latest = (dt.date.fromisoformat(day) + dt.timedelta(days=FUTURE_BATCH_DAYS)).isoformat()
    for index, report, campaign in items:
        spec = campaign.spec
        key: BatchKey = (spec.name, spec.fingerprint, day)
        found = campaign_vdaf(store, spec)
        report_id = report["report_id"]
        if found is None:
            result.rejected.append((index, report_id, "campaign", "this leader holds no keys for the campaign"))
            continue
        known, vdaf = found
        try:
            public_share, leader_ct, helper_share, leader_id, batch = _parse_payload(report["payload"], known)
        except _Reject as reject:
            result.rejected.append((index, report_id, reject.field, reject.reason))
            reasons.setdefault(key, Counter())[reject.slug] += 1
            continue
        if batch is not None:
            if batch > latest:
                result.rejected.append((index, report_id, "payload.batch", f"names batch {batch}, more than "
                                        f"{FUTURE_BATCH_DAYS} day(s) after this leader's day {day} (batch-in-future)"))
                reasons.setdefault(key, Counter())["batch-in-future"] += 1
                continue
            key = (spec.name, spec.fingerprint, batch)
        pair = pairs.get(leader_id)
        if pair is None:
            result.rejected.append((index, report_id, "payload.leader_share.config_id",
                                    "is not this leader's HPKE config id (sealed to another key?)"))
            reasons.setdefault(key, Counter())["hpke-unknown-config-id"] += 1
            continue
        info = distributed.input_share_info(spec, report_id, LEADER_ROLE, public_share, batch)
        try:
            plaintext = open_sealed(pair, leader_ct, info)
        except HpkeError:
            result.rejected.append((index, report_id, "payload.leader_share.ciphertext",
                                    "cannot be opened with the leader's key (sealed to another key, for another "
                                    "report, or altered)"))
            reasons.setdefault(key, Counter())["hpke-decrypt-error"] += 1
            continue
        try:
            vdaf.vdaf.decode_public_share(public_share)
        except ValueError as exc:
            result.rejected.append((index, report_id, "payload.public_share", f"is malformed: {exc}"))
            reasons.setdefault(key, Counter())["invalid-message"] += 1
            continue
        try:
            vdaf.decode_input_share(0, plaintext)
        except ValueError as exc:
            result.rejected.append((index, report_id, "payload.leader_share", f"opens to a malformed share: {exc}"))
            reasons.setdefault(key, Counter())["invalid-message"] += 1
            continue
        raw_id = uuid.UUID(report_id).bytes
        indices[raw_id] = index
        rows.setdefault(key, []).append((raw_id, *key, public_share, plaintext, json.dumps(helper_share)))
    if not rows and not reasons:
        return result
    existing = store.existing_report_ids([r[0] for group in rows.values() for r in group])
    with store.transaction() as conn:
        for key, group in rows.items():
            if store.batch_state(key, conn) != "open":  # its report is final: refused by name, never moved
                for row in group:
                    result.rejected.append((indices[row[0]], str(uuid.UUID(bytes=row[0])), "payload.batch",
                                            f"names batch {key[2]}, which was collected; it takes no more reports "
                                            "(batch-collected)"))
                reasons.setdefault(key, Counter())["batch-collected"] += len(group)
                continue
            fresh = [row for row in group if row[0] not in existing]
            before = conn.total_changes
            conn.executemany("INSERT INTO dist_reports (report_id, campaign, fingerprint, batch, public_share, "
                             "leader_share, helper_share, state) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending') "
                             "ON CONFLICT (report_id) DO NOTHING", fresh)
            inserted = conn.total_changes - before
            result.accepted += inserted
            result.duplicate += len(group) - inserted
        for key, counter in reasons.items():
            DistStore.count_rejections(conn, key, dict(counter))
    result.rejected.sort()
    return result


class _Reject(LDPError):
    "A report's payload is malformed: ``field``, ``reason`` and the rejection counter's ``slug``"

    def __init__(self, field: str, reason: str, slug: str = "invalid-message") -> None:
        super().__init__(reason)
        self.field, self.reason, self.slug = field, reason, slug


def _parse_payload(payload: Any, known: DistCampaign) -> tuple[bytes, bytes, dict, int, str | None]:
    "(public share, leader ciphertext, helper sealed share, leader config id, batch), or _Reject naming the field"
    from client_sdk.distributed import ShareRejected, check_batch

    if not isinstance(payload, dict) or set(payload) - {"batch"} != PAYLOAD_FIELDS:
        raise _Reject("payload", "must be {public_share, leader_share, helper_share[, batch]}")
    try:
        batch = check_batch(payload["batch"]) if "batch" in payload else None
    except ShareRejected as exc:
        raise _Reject(exc.field, "must be a UTC day YYYY-MM-DD") from None
    try:
        public_share = b64d(payload["public_share"], "payload.public_share")
    except ValueError as exc:
        raise _Reject("payload.public_share", "must be base64url without padding") from exc
    shares = {}
    for name in ("leader_share", "helper_share"):
        sealed = payload[name]
        if not isinstance(sealed, dict) or set(sealed) != SEALED_FIELDS:
            raise _Reject(f"payload.{name}", "must be {config_id, ciphertext}")
        if type(sealed["config_id"]) is not int or not 0 <= sealed["config_id"] <= 255:
            raise _Reject(f"payload.{name}.config_id", "must be an integer 0..255")
        try:
            shares[name] = b64d(sealed["ciphertext"], f"payload.{name}.ciphertext")
        except ValueError as exc:
            raise _Reject(f"payload.{name}.ciphertext", "must be base64url without padding") from exc
    helper_config = known.helper_hpke_config or {}
    if payload["helper_share"]["config_id"] != helper_config.get("id"):
        raise _Reject("payload.helper_share.config_id", "is not the helper's HPKE config id (sealed to another key?)",
                      "hpke-unknown-config-id")
    return public_share, shares["leader_share"], payload["helper_share"], payload["leader_share"]["config_id"], batch


# -- aggregation jobs -------------------------------------------------------------------------------------------
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
    outcome: dict[bytes, str] = {r.report_id: "invalid-message" for r, v in zip(reports, verified) if v.error}
    body = {"campaign": key[0], "fingerprint": key[1], "batch": key[2],
            "reports": [{"report_id": str(uuid.UUID(bytes=r.report_id)), "public_share": b64e(r.public_share),
                         "helper_share": r.helper_share,
                         "leader_verifier_share": b64e(vdaf.vdaf.encode_verifier_share(v.verifier_share))}
                        for r, v in sent]}
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


def _check_answer(answer: dict, body: dict) -> list[dict]:
    reports = answer.get("reports")
    expected = [r["report_id"] for r in body["reports"]]
    if not isinstance(reports, list) or [r.get("report_id") if isinstance(r, dict) else None
                                         for r in reports] != expected:
        raise PeerUnavailable("the helper's answer does not list the job's reports in order")
    return reports


def _finish(vdaf: CampaignVdaf, sent: list[tuple[Any, Verified]], answers: list[dict],
            outcome: dict[bytes, str]) -> dict[bytes, list[int]]:
    "The leader's output shares of the reports the helper accepted; the others' reasons go to ``outcome``"
    outputs = {}
    for (report, mine), answer in zip(sent, answers):
        if answer.get("result") != "continue":
            outcome[report.report_id] = str(answer.get("error", "rejected-by-helper"))[:100]
            continue
        try:
            message = vdaf.vdaf.decode_verifier_message(b64d(answer.get("verifier_message"), "verifier_message"))
            out_share = vdaf.vdaf.verify_next(vdaf.ctx, mine.state, message)
        except ValueError:
            # The helper counted it (its joint randomness check passed, ours did not): as in DAP the two views now
            # differ, and collection of this batch will refuse with batch-mismatch.  Needs a malicious device that
            # also beats the proof's soundness.
            logger.warning("report %s: verifier message rejected by the leader after the helper accepted it",
                           uuid.UUID(bytes=report.report_id))
            outcome[report.report_id] = "joint-randomness-mismatch"
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


# -- collection -------------------------------------------------------------------------------------------------
def collect(storage: StorageBase, store: DistStore, peer: PeerClient, campaign: CampaignVersion, batch: str, *,
            lock_timeout: float = 120.0, grace: float = 3600.0, now: float | None = None) -> dict:
    """Finish the batch's jobs, gather both noisy aggregate shares, unshard and store the release (once).

    Only a batch whose UTC day ended ``grace`` seconds ago or more (``now``, default the collector's clock):
    collecting earlier would close it while devices still send reports for it (each report names its batch, and
    one for a collected batch is refused ``batch-collected``, so the grace is what a late device has).
    Concurrent collections of one batch take the aggregator lock in turn: the first stores the release, every
    other gets ``batch-collected`` with that release (so a retried request, after a lost answer, gets the same
    release and never a second noise draw)."""
    from client_sdk.clock import day_start

    from ..auth import clock_now

    spec = campaign.spec
    key: BatchKey = (spec.name, spec.fingerprint, batch)
    found = campaign_vdaf(store, spec)
    if found is None:
        raise CollectError(409, "not-distributed", f"campaign {spec.name!r} is not a distributed campaign of this "
                                                   "leader", "name")
    _, vdaf = found
    if store.release(key) is not None:
        raise _collected(store, key)
    now = clock_now() if now is None else now
    closes = day_start(batch) + 86400 + grace
    if now < closes:
        raise CollectError(409, "batch-open", f"batch {batch} is still open: it takes reports until the end of that "
                                              f"UTC day plus a grace of {grace:g} s (COLLECT_GRACE) for reports "
                                              f"devices queued that day; collect it in {int(closes - now) + 1} s")
    min_batch = vdaf.params.min_batch
    states = store.report_states(key)
    if states.get("pending", 0) + states.get("aggregated", 0) < min_batch:
        raise _too_small(states.get("pending", 0) + states.get("aggregated", 0), min_batch)
    with store.transaction() as conn:
        if store.batch_state(key, conn) == "open":
            DistStore.set_batch(conn, key, "closed")  # no upload enters the batch from here on
    with aggregator_lock(str(store.storage.path), lock_timeout) as held:
        if not held:
            raise CollectError(503, "busy", "another process is running this leader's jobs; retry", retry_after=5)
        if store.release(key) is not None:  # a concurrent collection finished while this one waited for the lock
            raise _collected(store, key)
        try:
            run_pending(storage, store, peer, key)
        except PendingWork as exc:
            raise CollectError(503, "helper-unavailable", f"the helper did not answer ({exc}); the batch is closed "
                                                          "and nothing is lost: retry", retry_after=10) from None
        if store.pending_jobs(key):
            raise CollectError(502, "job-refused", "the helper refused jobs of this batch: "
                                                   + "; ".join(str(e) for e in store.pending_jobs(key)[:3]))
        valid = store.aggregated_ids(key)
        if len(valid) < min_batch:
            with store.transaction() as conn:
                DistStore.set_batch(conn, key, "open")  # nothing was released: the batch can take reports again
            raise _too_small(len(valid), min_batch)
        count, share = store.agg_share(key)
        if count != len(valid):
            raise CollectError(500, "internal", f"aggregate share counts {count} reports, {len(valid)} aggregated")
        vector = vdaf.decode(share)
        body: dict[str, Any] = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": batch,
                                "report_count": count, "checksum": checksum(valid)}
        try:
            helper = peer.aggregate_share(body)
        except PeerUnavailable as exc:
            raise CollectError(503, "helper-unavailable", f"the helper did not answer ({exc}); retry",
                               retry_after=10) from None
        except PeerRefused as exc:
            status = 409 if exc.status == 409 else 502
            raise CollectError(status, exc.slug, f"the helper refused: {exc.detail}") from None
        if helper.get("report_count") != count:
            raise CollectError(502, "batch-mismatch", "the helper's share counts another number of reports")
        helper_vector = vdaf.decode(b64d(helper.get("aggregate_share"), "aggregate_share"))
        release = vdaf.unshard([vdaf.add_noise(vector), helper_vector])
        rejected = store.rejections(key)
        out = {"campaign": spec.name, "fingerprint": spec.fingerprint, "version": campaign.version, "batch": batch,
               "report_count": count, "rejected": rejected, "prio3": vdaf.params.type, "release": release,
               "noise": vdaf.noise.describe(), "coin_subset": None}
        with store.transaction() as conn:
            inserted = conn.execute("INSERT INTO dist_releases (campaign, fingerprint, version, batch, release) "
                                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                    (*key[:2], campaign.version, batch, json.dumps(out))).rowcount
            if not inserted:  # another process stored the release first (it holds no lock of ours): keep that one
                raise _collected(store, key, conn)
            DistStore.set_batch(conn, key, "collected")
    return out


def _collected(store: DistStore, key: BatchKey, conn: Any = None) -> CollectError:
    "batch-collected, with the stored release"
    release = store.release(key, conn)
    return CollectError(409, "batch-collected", f"batch {key[2]} of {key[0]!r} was collected already; the release "
                                                "is in this answer and in GET /v1/campaigns/<name>/releases",
                        release=release)


def _too_small(count: int, needed: int) -> CollectError:
    return CollectError(409, "batch-too-small", f"the batch holds {count} valid or pending reports; at least "
                                                f"{needed} are needed (min_batch)")


# -- the driver ---------------------------------------------------------------------------------------------------
class Driver(threading.Thread):
    "Runs pending jobs every ``interval`` seconds; after a failure waits with exponential backoff"

    def __init__(self, database: str, helper_url: str, token: str, interval: float,
                 backoff: Backoff | None = None) -> None:
        super().__init__(name="ldp-aggregation-driver", daemon=True)
        self.database, self.helper_url, self.token, self.interval = database, helper_url, token, interval
        self.backoff = backoff or Backoff(base=max(interval, 0.5), cap=60.0)
        self.stopping = threading.Event()
        self.failures = 0

    def run(self) -> None:
        delay = self.interval
        while not self.stopping.wait(delay):
            delay = self.step()

    def step(self) -> float:
        "One round; the delay before the next"
        try:
            with aggregator_lock(self.database, 0) as held:
                if held:
                    with open_storage(self.database) as storage:
                        store = DistStore(storage)
                        if store.pending_batches():
                            run_pending(storage, store, PeerClient.for_url(self.helper_url, self.token, retries=0),
                                        job_size=JOB_SIZE)
            self.failures = 0
            return self.interval
        except PeerUnavailable as exc:
            self.failures += 1
            logger.warning("aggregation jobs pending, helper unavailable (attempt %d): %s", self.failures, exc)
        except Exception:  # noqa: BLE001 (the driver must survive anything and try again later)
            self.failures += 1
            logger.exception("aggregation driver round failed")
        return self.backoff.delay(self.failures - 1)
