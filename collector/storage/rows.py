"""Conversions between Python values and stored columns: campaign rows, report ids, UTC days, aggregate counts."""

from __future__ import annotations

import datetime as dt
import functools
import json
import operator
import uuid
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from client_sdk.errors import PrivacyWarning
from client_sdk.spec import Spec, canonical_json, load_spec

from ..errors import StorageError
from .models import CampaignVersion

if TYPE_CHECKING:  # imported where used: numpy loads with the first aggregate, not with the storage
    import estimators


_last_counts: dict[str, tuple[str, list]] = {}  # per campaign fingerprint: the counts text last stored, parsed


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
    import estimators

    return estimators.Aggregate.from_dict({"mechanism": campaign.spec.mechanism, "fingerprint": campaign.fingerprint,
                                           "n": n, "counts": json.loads(counts)})


def merged_counts(campaign: CampaignVersion, row: tuple[int, str] | None,
                  aggregate: estimators.Aggregate) -> tuple[int, str]:
    """(n, counts as stored) of the stored aggregate ``row`` (n, counts JSON; None: none yet) plus ``aggregate``:
    what ``Aggregate.from_dict(row).merge(aggregate).to_dict()`` stores, added in Python lists instead of numpy
    arrays (a request's aggregate is a few hundred counts at most; the arrays' per-call cost was most of it)"""
    import estimators

    if (aggregate.mechanism, aggregate.fingerprint) != (campaign.spec.mechanism, campaign.fingerprint):
        raise estimators.AggregateMismatch(f"cannot merge aggregates of {campaign.fingerprint} and "
                                           f"{aggregate.fingerprint}")
    counts = aggregate.counts.tolist()  # int64: Python ints already
    if aggregate.counts.dtype == object:
        counts = _plain_counts(counts)
    if row is not None:
        # The stored text is most often what this process wrote last for the campaign: parsed then, not again.
        # Parsing the same text gives the same lists (never changed in place), so the cache cannot hide a change.
        last = _last_counts.get(campaign.fingerprint)
        stored = last[1] if last is not None and last[0] == row[1] else json.loads(row[1])
        counts = _add_counts(stored, counts)
    text = json.dumps(counts)
    _last_counts[campaign.fingerprint] = (text, counts)
    return (int(aggregate.n) if row is None else int(row[0]) + int(aggregate.n)), text


def _plain_counts(counts: list) -> list:
    "Nested lists of Python ints (an object array's tolist() may hold numpy integers)"
    return [_plain_counts(c) if type(c) is list else int(c) for c in counts]


def _add_counts(stored: list, added: list) -> list:
    "Element-wise sum of two equally shaped nested lists of ints; a stored aggregate of another shape is an error"
    if len(stored) != len(added):
        raise StorageError(f"stored aggregate has {len(stored)} counts, the reports' has {len(added)}")
    if added and type(added[0]) is list:
        return [_add_counts(a, b) for a, b in zip(stored, added)]
    return list(map(operator.add, map(int, stored), added))


def payload_text(payload: Any) -> str:
    "The stored form of a payload: canonical JSON"
    return canonical_json(payload)
