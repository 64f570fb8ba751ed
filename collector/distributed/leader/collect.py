"""The leader's collection of a batch: close it, finish its jobs, gather both noisy aggregate shares, unshard and
store the release (once), recorded in the release ledger (``collector.release_ledger``), which refuses a batch that
would pass the spec's ``budget`` before anything is drawn."""

from __future__ import annotations

import time
from typing import Any

from client_sdk.clock import utc_day
from client_sdk.distributed_messages import ProtocolError, from_b64url
from client_sdk.errors import LDPError

from ... import release_ledger
from ...auth import clock_now
from ...config import DEFAULTS
from ...storage import CampaignVersion, StorageBase
from ..batches import still_open
from ..helper import checksum
from ..peer import PeerClient, PeerRefused, PeerUnavailable
from ..store import BatchKey, DistStore
from .campaigns import campaign_vdaf
from .jobs import LEASE_SECONDS, PendingWork, run_pending

JOB_POLL_SECONDS = 0.2  # while another driver runs a job of the batch being collected


class CollectError(LDPError):
    "Collection cannot proceed: its problem type (slug), detail, field, the stored release, more problem members"

    def __init__(self, slug: str, detail: str, field: str = "batch", retry_after: int | None = None,
                 release: dict | None = None, extra: dict | None = None,
                 helper_refusal: PeerRefused | None = None) -> None:
        """``slug``: a ProtocolError, or the helper's own problem type when ``helper_refusal`` (the helper's answer
        refusing the request) is given; the HTTP answer is collector.distributed.api's"""
        super().__init__(detail)
        self.slug, self.detail, self.field, self.retry_after = slug, detail, field, retry_after
        self.release = release
        self.extra = extra or {}
        self.helper_refusal = helper_refusal



def collect(storage: StorageBase, store: DistStore, peer: PeerClient, campaign: CampaignVersion, batch: str, *,
            lock_timeout: float = 120.0, grace: float = DEFAULTS["COLLECT_GRACE"], now: float | None = None,
            lease_seconds: float = LEASE_SECONDS) -> dict:
    """Finish the batch's jobs, gather both noisy aggregate shares, unshard and store the release (once).

    Only a batch that ended ``grace`` seconds ago or more (``now``, default the collector's clock; its length is the
    spec's ``window``):
    collecting earlier would close it while devices still send reports for it (each report names its batch, and
    one for a collected batch is refused ``batch-collected``, so the grace is what a late device has).
    The batch's jobs are claimed as the drivers claim them (leases); jobs another driver holds are waited for up to
    ``lock_timeout`` seconds.  Of concurrent collections of one batch (in any leader process) the first to store the
    release wins, every other gets ``batch-collected`` with that release (so a retried request, after a lost answer,
    gets the same release and never a second noise draw)."""
    spec = campaign.spec
    key: BatchKey = (spec.name, spec.fingerprint, batch)
    found = campaign_vdaf(store, spec)
    if found is None:
        raise CollectError(ProtocolError.NOT_DISTRIBUTED,
                           f"campaign {spec.name!r} is not a distributed campaign of this leader", "name")
    _, vdaf = found
    if store.release(key) is not None:
        raise _collected(store, key)
    now = clock_now() if now is None else now
    try:
        open_detail = still_open(vdaf.params, batch, now=now, grace=grace, role="leader")
    except ValueError as exc:
        raise CollectError(ProtocolError.INVALID_FIELD, str(exc)) from None
    if open_detail is not None:
        raise CollectError(ProtocolError.BATCH_OPEN, open_detail)
    release_ledger.check(storage, campaign)  # BudgetExhausted: the batch stays open, no noise is drawn
    min_batch = vdaf.params.min_batch
    states = store.report_states(key)
    if states.get("pending", 0) + states.get("aggregated", 0) < min_batch:
        raise _too_small(states.get("pending", 0) + states.get("aggregated", 0), min_batch)
    with store.transaction():
        if store.lock_batch(key, exclusive=True) == "open":  # waits for uploads half-way into the batch
            store.set_batch(key, "closed")  # no upload enters the batch from here on
    _finish_jobs(storage, store, peer, key, lock_timeout, lease_seconds)
    if store.release(key) is not None:  # a concurrent collection finished meanwhile
        raise _collected(store, key)
    valid = store.aggregated_ids(key)
    if len(valid) < min_batch:
        with store.transaction():
            store.set_batch(key, "open")  # nothing was released: the batch can take reports again
        raise _too_small(len(valid), min_batch)
    count, share = store.agg_share(key)
    if count != len(valid):
        raise CollectError(ProtocolError.INTERNAL,
                           f"aggregate share counts {count} reports, {len(valid)} aggregated")
    vector = vdaf.decode(share)
    body: dict[str, Any] = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": batch,
                            "report_count": count, "checksum": checksum(valid)}
    try:
        helper = peer.aggregate_share(body)
    except PeerUnavailable as exc:
        raise CollectError(ProtocolError.HELPER_UNAVAILABLE, f"the helper did not answer ({exc}); retry",
                           retry_after=10) from None
    except PeerRefused as exc:
        raise CollectError(exc.slug, f"the helper refused: {exc.detail}", helper_refusal=exc) from None
    if helper.get("report_count") != count:
        raise CollectError(ProtocolError.BATCH_MISMATCH, "the helper's share counts another number of reports")
    helper_vector = vdaf.decode(from_b64url(helper.get("aggregate_share"), "aggregate_share"))
    release = vdaf.unshard([vdaf.add_noise(vector), helper_vector])
    rejected = store.rejections(key)
    out = {"campaign": spec.name, "fingerprint": spec.fingerprint, "version": campaign.version, "batch": batch,
           "report_count": count, "rejected": rejected, "prio3": vdaf.params.type, "release": release,
           "noise": vdaf.noise.describe(), "coin_subset": None}
    try:
        with store.transaction():
            release_ledger.lock(storage, spec.name)  # the check and the record below are one step
            if store.release(key) is not None:  # another process stored this batch's release first: keep that one
                raise _collected(store, key)
            # again, under the lock: a concurrent collection of another batch may have been recorded since
            release_ledger.check(storage, campaign)
            if not store.put_release(key, campaign.version, out):
                raise _collected(store, key)
            store.set_batch(key, "collected")
            release_ledger.record_batch(storage, campaign, batch, utc_day(now))
    except release_ledger.BudgetExhausted:
        with store.transaction():
            store.set_batch(key, "open")  # nothing was released: the batch stays open, as refused before
        raise
    store.scrub_batch(key)  # its jobs are done and it takes no report any more: its reports' order of arrival goes
    return out


def _finish_jobs(storage: StorageBase, store: DistStore, peer: PeerClient, key: BatchKey, timeout: float,
                 lease_seconds: float) -> None:
    """Run the batch's jobs until none is pending; jobs leased by another driver (in this process or another) are
    waited for until ``timeout`` seconds have passed (or their lease expires, then they are run here)"""
    deadline = time.monotonic() + timeout
    while True:
        try:
            summary = run_pending(storage, store, peer, key, lease_seconds=lease_seconds)
        except PendingWork as exc:
            raise CollectError(ProtocolError.HELPER_UNAVAILABLE, f"the helper did not answer ({exc}); the batch "
                               "is closed and nothing is lost: retry", retry_after=10) from None
        if not store.batch_unfinished(key):
            return
        # Refused only when this round's own run was (a pending job no one holds may have been finished, or be
        # claimed by another driver, since this round, and reports another process is putting into a job are not
        # in one yet: they are looked at again)
        if summary.errors and not store.leased_jobs(key):
            raise CollectError(ProtocolError.JOB_REFUSED, "the helper refused jobs of this batch: "
                               + "; ".join(summary.errors[:3]))
        if time.monotonic() >= deadline:
            raise CollectError(ProtocolError.BUSY,
                               "another process is running this batch's jobs; retry", retry_after=5)
        time.sleep(JOB_POLL_SECONDS)


def _collected(store: DistStore, key: BatchKey) -> CollectError:
    "batch-collected, with the stored release"
    release = store.release(key)
    return CollectError(ProtocolError.BATCH_COLLECTED,
                        f"batch {key[2]} of {key[0]!r} was collected already; the release "
                        "is in this answer and in GET /v1/campaigns/<name>/releases",
                        release=release)


def _too_small(count: int, needed: int) -> CollectError:
    "batch-too-small, in state below_min_batch: the batch's window has ended (``progress``)"
    return CollectError(ProtocolError.BATCH_TOO_SMALL,
                        f"the batch's window has ended with {count} valid or pending reports; at least "
                        f"{needed} are needed (min_batch): it is not released (state below_min_batch)",
                        extra={"state": "below_min_batch", "report_count": count, "min_batch": needed})

