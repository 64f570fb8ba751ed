"""The leader's uploads: check each distributed report (``client_sdk.distributed_messages.parse_payload``), open
the leader's share, and store the valid ones in their batch in one transaction."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass, field

from client_sdk.clock import DAY_SECONDS, day_start
from client_sdk.distributed import LEADER, input_share_info
from client_sdk.distributed_messages import ProtocolError, parse_payload
from client_sdk.errors import ShareRejected
from client_sdk.vdaf.hpke import HpkeError, open_sealed

from ...auth import clock_now
from ...storage import CampaignVersion
from .. import hpke_keys
from ..store import BatchKey, DistCampaign, DistStore
from .campaigns import campaign_vdaf

FUTURE_BATCH_DAYS = 1  # a report may name a batch this many days after the leader's day (a device's clock ahead)


@dataclass
class UploadResult:
    accepted: int = 0
    duplicate: int = 0
    rejected: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index, report_id, field, reason)


def accept_reports(store: DistStore, items: list[tuple[int, dict, CampaignVersion]], day: str,
                   overlap_days: int = hpke_keys.DEFAULT_OVERLAP_DAYS, *, now: float | None = None) -> UploadResult:
    """Check each distributed report, open the leader's share, and store the valid ones in one transaction.

    A report goes into the batch its payload names (a device's clock behind or ahead of the leader's does not move
    it into another batch), or if it names none (devices of earlier versions) into the batch of its receipt:
    ``day``, or for a campaign of shorter batches (its ``window``) the one of ``now`` (default the collector's
    clock).  A name that is no batch of the campaign's window is refused (``invalid-message``), a batch ending
    more than ``FUTURE_BATCH_DAYS`` after ``day`` (``batch-in-future``), one already collected too
    (``batch-collected``): both are final for the report, as is a share sealed to a retired HPKE key
    (``outdated-config``: ``hpke_keys`` has the overlap rule)."""
    result = UploadResult()
    keys = hpke_keys.keys(store)  # once per upload, not per report
    pairs, retired = keys.usable(day, overlap_days), keys.retired(day, overlap_days)
    helpers: dict[tuple[str, str], DistCampaign | None] = {}  # read per upload: a leader process refreshes them
    rows: dict[BatchKey, list[tuple[bytes, bytes, bytes, str]]] = {}
    reasons: dict[BatchKey, Counter] = {}
    indices: dict[bytes, int] = {}
    latest_end = day_start(day) + (1 + FUTURE_BATCH_DAYS) * DAY_SECONDS  # the end of the latest batch taken
    received = clock_now() if now is None else now

    def reject(index: int, report_id: str, key: BatchKey, where: str, reason: str, slug: ProtocolError) -> None:
        result.rejected.append((index, report_id, where, reason))
        reasons.setdefault(key, Counter())[slug] += 1

    for index, report, campaign in items:
        spec = campaign.spec
        params = spec.prio3
        assert params is not None, "a distributed campaign"
        key: BatchKey = (spec.name, spec.fingerprint, day if params.batch_seconds == DAY_SECONDS
                         else params.batch_at(received))
        found = campaign_vdaf(store, spec)
        report_id = report["report_id"]
        if found is None:
            result.rejected.append((index, report_id, "campaign", "this leader holds no keys for the campaign"))
            continue
        known, vdaf = found
        try:
            payload = parse_payload(report["payload"])
        except ShareRejected as exc:
            reject(index, report_id, key, exc.field, exc.message, ProtocolError(exc.reason))
            continue
        if key[:2] not in helpers:
            helpers[key[:2]] = store.campaign(*key[:2])
        current = helpers[key[:2]] or known
        if payload.helper_config_id not in {c.get("id") for c in current.helper_configs()}:
            if payload.helper_config_id in current.helper_retired_ids():
                reject(index, report_id, key, "payload.helper_share.config_id", "names a retired HPKE key of the "
                       f"helper ({ProtocolError.OUTDATED_CONFIG}): fetch the campaign and the helper's configs again",
                       ProtocolError.OUTDATED_CONFIG)
            else:
                reject(index, report_id, key, "payload.helper_share.config_id",
                       "is not the helper's HPKE config id (sealed to another key?)",
                       ProtocolError.HPKE_UNKNOWN_CONFIG_ID)
            continue
        batch = payload.batch
        if batch is not None:
            try:
                batch_end = params.batch_end(batch)
            except ValueError as exc:
                reject(index, report_id, key, "payload.batch", str(exc), ProtocolError.INVALID_MESSAGE)
                continue
            if batch_end > latest_end:
                slug = ProtocolError.BATCH_IN_FUTURE
                reject(index, report_id, key, "payload.batch", f"names batch {batch}, more than {FUTURE_BATCH_DAYS} "
                       f"day(s) after this leader's day {day} ({slug})", slug)
                continue
            key = (spec.name, spec.fingerprint, batch)
        pair = pairs.get(payload.leader_config_id)
        if payload.leader_config_id in retired:
            reject(index, report_id, key, "payload.leader_share.config_id", "names a retired HPKE key of this leader "
                   f"({ProtocolError.OUTDATED_CONFIG}): fetch the campaign again", ProtocolError.OUTDATED_CONFIG)
            continue
        if pair is None:
            reject(index, report_id, key, "payload.leader_share.config_id",
                   "is not this leader's HPKE config id (sealed to another key?)", ProtocolError.HPKE_UNKNOWN_CONFIG_ID)
            continue
        info = input_share_info(spec, report_id, LEADER, payload.public_share, batch)
        try:
            plaintext = open_sealed(pair, payload.leader_ciphertext, info)
        except HpkeError:
            reject(index, report_id, key, "payload.leader_share.ciphertext", "cannot be opened with the leader's key "
                   "(sealed to another key, for another report, or altered)", ProtocolError.HPKE_DECRYPT_ERROR)
            continue
        try:
            vdaf.vdaf.decode_public_share(payload.public_share)
        except ValueError as exc:
            reject(index, report_id, key, "payload.public_share", f"is malformed: {exc}", ProtocolError.INVALID_MESSAGE)
            continue
        try:
            vdaf.decode_input_share(0, plaintext)
        except ValueError as exc:
            reject(index, report_id, key, "payload.leader_share", f"opens to a malformed share: {exc}",
                   ProtocolError.INVALID_MESSAGE)
            continue
        raw_id = uuid.UUID(report_id).bytes
        indices[raw_id] = index
        rows.setdefault(key, []).append((raw_id, payload.public_share, plaintext, json.dumps(payload.helper_share())))
    if not rows and not reasons:
        return result
    with store.transaction():
        for key, group in rows.items():
            if store.lock_batch(key, exclusive=False) != "open":  # its report is final: refused by name, never moved
                for row in group:
                    result.rejected.append((indices[row[0]], str(uuid.UUID(bytes=row[0])), "payload.batch",
                                            f"names batch {key[2]}, which was collected; it takes no more reports "
                                            f"({ProtocolError.BATCH_COLLECTED})"))
                reasons.setdefault(key, Counter())[ProtocolError.BATCH_COLLECTED] += len(group)
                continue
            inserted = store.insert_reports(key, group)  # an id stored already is skipped: a duplicate
            result.accepted += inserted
            result.duplicate += len(group) - inserted
        for key, counter in reasons.items():
            store.count_rejections(key, dict(counter))
    result.rejected.sort()
    return result
