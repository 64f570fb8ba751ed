"""The leader's uploads: check each distributed report (``client_sdk.distributed_messages.parse_payload``), open
the leader's share, and store the valid ones in their batch in one transaction."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import Counter
from dataclasses import dataclass, field

from client_sdk.distributed import LEADER, input_share_info
from client_sdk.distributed_messages import ProtocolError, parse_payload
from client_sdk.errors import ShareRejected
from client_sdk.vdaf.hpke import HpkeError, open_sealed

from ...storage import CampaignVersion
from .. import hpke_keys
from ..store import BatchKey, DistStore
from .campaigns import campaign_vdaf

FUTURE_BATCH_DAYS = 1  # a report may name a batch this many days after the leader's day (a device's clock ahead)


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
    result = UploadResult()
    pairs = {pair.config.id: pair for pair in hpke_keys.key_pairs(store)}  # once per upload, not per report
    rows: dict[BatchKey, list[tuple]] = {}
    reasons: dict[BatchKey, Counter] = {}
    indices: dict[bytes, int] = {}
    latest = (dt.date.fromisoformat(day) + dt.timedelta(days=FUTURE_BATCH_DAYS)).isoformat()

    def reject(index: int, report_id: str, key: BatchKey, where: str, reason: str, slug: ProtocolError) -> None:
        result.rejected.append((index, report_id, where, reason))
        reasons.setdefault(key, Counter())[slug] += 1

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
            payload = parse_payload(report["payload"])
        except ShareRejected as exc:
            reject(index, report_id, key, exc.field, exc.message, ProtocolError(exc.reason))
            continue
        if payload.helper_config_id != (known.helper_hpke_config or {}).get("id"):
            reject(index, report_id, key, "payload.helper_share.config_id",
                   "is not the helper's HPKE config id (sealed to another key?)", ProtocolError.HPKE_UNKNOWN_CONFIG_ID)
            continue
        batch = payload.batch
        if batch is not None:
            if batch > latest:
                slug = ProtocolError.BATCH_IN_FUTURE
                reject(index, report_id, key, "payload.batch", f"names batch {batch}, more than {FUTURE_BATCH_DAYS} "
                       f"day(s) after this leader's day {day} ({slug})", slug)
                continue
            key = (spec.name, spec.fingerprint, batch)
        pair = pairs.get(payload.leader_config_id)
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
        rows.setdefault(key, []).append((raw_id, *key, payload.public_share, plaintext,
                                         json.dumps(payload.helper_share())))
    if not rows and not reasons:
        return result
    existing = store.existing_report_ids([r[0] for group in rows.values() for r in group])
    with store.transaction() as conn:
        for key, group in rows.items():
            if store.batch_state(key, conn) != "open":  # its report is final: refused by name, never moved
                for row in group:
                    result.rejected.append((indices[row[0]], str(uuid.UUID(bytes=row[0])), "payload.batch",
                                            f"names batch {key[2]}, which was collected; it takes no more reports "
                                            f"({ProtocolError.BATCH_COLLECTED})"))
                reasons.setdefault(key, Counter())[ProtocolError.BATCH_COLLECTED] += len(group)
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
