"""Where a distributed campaign's batches stand, for "why is my number not ready": per batch, the reports accepted,
rejected by reason, pending (waiting for a job or in one), aggregated, and how far the batch is from ``min_batch``.

A batch's ``state``:

* ``open``: its window (its UTC day, or the spec's shorter ``window``) plus the collection grace has not ended; it
  takes reports;
* ``ready``: its window has ended with at least ``min_batch`` reports aggregated or pending: collect it;
* ``below_min_batch``: its window has ended with fewer: collection refuses it (``batch-too-small``) and it is never
  released; reports still arriving for it (devices that were offline) are taken and counted;
* ``collecting``: a collection closed it and has not stored the release (a helper that did not answer: retry);
* ``collected``: its release is stored.

The same numbers feed ``campaign show``, ``GET /v1/campaigns/<name>/progress`` and ``/metrics``.
"""

from __future__ import annotations

from typing import Any

from client_sdk.distributed_messages import ProtocolError
from client_sdk.spec_prio3 import Prio3Params

from ...storage import CampaignVersion
from ..batches import batch_closes
from ..store import DistStore

STATES = ("open", "ready", "below_min_batch", "collecting", "collected")
REASONS = tuple(error.value for error in ProtocolError)  # a metric's reason label is one of these (bounded)


def batch_state(batch: str, counts: dict[str, int], params: Prio3Params, stored_state: str, released: bool, *,
                now: float, grace: float) -> str:
    "One batch's state (see the module doc)"
    if released:
        return "collected"
    if stored_state == "closed":
        return "collecting"
    if now < batch_closes(params, batch, grace):
        return "open"
    enough = counts.get("pending", 0) + counts.get("aggregated", 0) >= params.min_batch
    return "ready" if enough else "below_min_batch"


def campaign_progress(store: DistStore, campaign: CampaignVersion, *, now: float, grace: float) -> dict:
    """The progress of one campaign version, batch by batch (newest first), with totals; ``now`` (POSIX seconds) and
    ``grace`` (``COLLECT_GRACE``) say which windows have ended"""
    spec = campaign.spec
    assert spec.prio3 is not None, "a distributed campaign"
    min_batch = spec.prio3.min_batch
    rows = store.progress_rows(spec.name, spec.fingerprint)
    batches = []
    for batch in sorted(rows, reverse=True):
        row = rows[batch]
        counts, rejected = row["reports"], row["rejected"]
        pending, aggregated = counts.get("pending", 0), counts.get("aggregated", 0)
        state = batch_state(batch, counts, spec.prio3, row["state"], row["released"], now=now, grace=grace)
        batches.append({"batch": batch, "state": state, "accepted": sum(counts.values()),
                        "rejected": dict(sorted(rejected.items())), "pending": pending,
                        "pending_in_jobs": row["in_jobs"], "aggregated": aggregated, "min_batch": min_batch,
                        "to_min_batch": max(0, min_batch - pending - aggregated)})
    totals: dict[str, Any] = {"accepted": 0, "pending": 0, "aggregated": 0, "rejected": {}}
    for item in batches:
        for name in ("accepted", "pending", "aggregated"):
            totals[name] += item[name]
        for reason, count in item["rejected"].items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + count
    totals["rejected"] = dict(sorted(totals["rejected"].items()))
    return {"campaign": spec.name, "version": campaign.version, "fingerprint": spec.fingerprint,
            "min_batch": min_batch, "totals": totals, "batches": batches}


def metric_reason(reason: str) -> str:
    "A rejection reason as a metric label: one of the protocol's names (a helper's free text is not one)"
    return reason if reason in REASONS else ProtocolError.REJECTED_BY_HELPER.value
