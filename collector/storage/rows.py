"""Conversions between Python values and stored columns: campaign rows, report ids, UTC days, aggregate counts."""

from __future__ import annotations

import datetime as dt
import functools
import json
import uuid
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from client_sdk.errors import PrivacyWarning
from client_sdk.spec import Spec, canonical_json, load_spec

from .models import CampaignVersion

if TYPE_CHECKING:  # imported where used: numpy loads with the first aggregate, not with the storage
    import estimators


def _campaign(row: Sequence[Any]) -> CampaignVersion:
    name, version, fingerprint, spec_json, day = row
    return CampaignVersion(name, version, fingerprint, _stored_spec(spec_json), day)


@functools.lru_cache(maxsize=1024)
def _stored_spec(spec_json: str) -> Spec:
    "A stored spec, parsed once per text: every request reads its campaign, and a Spec is immutable"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # warned once, when the campaign was created
        return load_spec(spec_json)


def _id_bytes(report_id: str) -> bytes:
    "The 16 bytes of a (validated, lower-case hex) UUID string"
    return bytes.fromhex(report_id.replace("-", ""))


def _ids_bytes(report_ids: Sequence[str]) -> list[bytes]:
    "``_id_bytes`` of each id, with one hex conversion for the whole list"
    raw = _ids_joined(report_ids)
    return [raw[i:i + 16] for i in range(0, len(raw), 16)]


def _ids_joined(report_ids: Sequence[str]) -> bytes:
    "The 16 bytes of each id, concatenated (one hex conversion)"
    raw = bytes.fromhex("".join(report_ids).replace("-", ""))
    if len(raw) != 16 * len(report_ids):
        raise ValueError("report ids must be UUID strings")
    return raw




def _id_text(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def _day_number(day: str) -> int:
    "A UTC date as the integer stored in reports.day (its proleptic Gregorian ordinal)"
    return dt.date.fromisoformat(day).toordinal()


def _day_text(day_number: int) -> str:
    return dt.date.fromordinal(day_number).isoformat()


def _aggregate(campaign: CampaignVersion, n: int, counts: str) -> estimators.Aggregate:
    # imported here: numpy and the estimators (+250 ms) load with the first aggregate, not with a key command
    import estimators

    return estimators.Aggregate.from_dict({"mechanism": campaign.spec.mechanism, "fingerprint": campaign.fingerprint,
                                           "n": n, "counts": json.loads(counts)})


def merged_counts(campaign: CampaignVersion, row: tuple[int, str] | None,
                  aggregate: estimators.Aggregate) -> tuple[int, str]:
    """(n, counts as stored) of the stored aggregate ``row`` (n, counts JSON; None: none yet) plus ``aggregate``,
    merged by ``Aggregate.merge`` (AggregateMismatch for another spec or shape)"""
    # imported here: numpy and the estimators (+250 ms) load with the first aggregate, not with a key command
    import estimators

    stored = _aggregate(campaign, *row) if row is not None else estimators.Aggregate.empty(campaign.spec)
    data = stored.merge(aggregate).to_dict()
    return data["n"], json.dumps(data["counts"])


def payload_text(payload: Any) -> str:
    "The stored form of a payload: canonical JSON"
    return canonical_json(payload)
