"""The messages of a poplar1 level between the leader and the helper, one encoder and one decoder each, and an
aggregator (``StoredAggregator``) whose level history is its own database's (``store.Poplar1Store``).

A level is three peer requests, each naming the batch (campaign, fingerprint, batch) and the level:

- ``POST /v1/peer/poplar1/levels``: the aggregation parameter (the candidate prefixes as bit strings) and the
  reports (id, public share, the helper's sealed share); the helper checks the level on its own records, records
  it, and answers each report's first sketch share (or its rejection's name);
- ``POST /v1/peer/poplar1/levels/sketch``: the leader's first shares; the helper answers its second shares;
- ``POST /v1/peer/poplar1/levels/finish``: the leader's second shares; the helper answers the accepted reports'
  count and checksum and its noisy aggregate share.

Each answer is stored with its request's digest and repeated unchanged for the same request (a retry after a lost
answer), never computed or drawn twice; a different request at an answered level is refused.  A level an
aggregator recorded and did not answer (killed in between) is resumed by the very same request (the same digest),
prepared again: preparation draws nothing, and each aggregator stores its noisy share when it first draws it.

A share is the draft's encoding of its field vector (``Field.encode_vec``), base64url; a rejection is its problem
type's name.  The preparation state a level needs between requests is stored by the helper as ``prep_state``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

from client_sdk.distributed_messages import ProtocolError, b64url, from_b64url
from client_sdk.errors import ShareRejected
from client_sdk.vdaf.poplar1 import Poplar1VerifyState

from ...distributed.store import BatchKey, failpoint
from .prepare import LevelState, Poplar1Aggregator
from .rules import AggParam, LevelRecords, LevelRefusal, LevelRefused, check_level
from .store import Poplar1Store, bits_prefix, prefix_bits

Shares = dict[bytes, list[int] | str]  # report id -> its share, or the name of its rejection
ROLES = ("leader", "helper")  # by aggregator id: the names of the crash tests' failpoints


def message_error(field: str, detail: str) -> ShareRejected:
    "A level message that does not decode, the field named (``invalid-message``)"
    return ShareRejected(ProtocolError.INVALID_MESSAGE, field, detail)


def checksum(report_ids: Sequence[bytes]) -> str:
    "SHA-256 over the sorted 16-byte report ids, hex"
    return hashlib.sha256(b"".join(sorted(report_ids))).hexdigest()


def digest(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def field_of(aggregator: Poplar1Aggregator, level: int) -> Any:
    return aggregator.vdaf.idpf.current_field(level)


def encode_agg_param(agg_param: AggParam) -> dict:
    return {"level": agg_param[0], "prefixes": [prefix_bits(prefix) for prefix in agg_param[1]]}


def decode_agg_param(body: dict) -> AggParam:
    level, prefixes = body.get("level"), body.get("prefixes")
    if type(level) is not int or level < 0:
        raise message_error("level", "must be a non-negative integer")
    if not isinstance(prefixes, list) or not all(isinstance(p, str) and set(p) <= {"0", "1"} for p in prefixes):
        raise message_error("prefixes", "must be a list of bit strings")
    return level, tuple(bits_prefix(p) for p in prefixes)


def encode_shares(field: Any, shares: Shares) -> list[dict]:
    out = []
    for report_id, share in shares.items():
        text = str(uuid.UUID(bytes=report_id))
        out.append({"report_id": text, "error": share} if isinstance(share, str)
                   else {"report_id": text, "share": b64url(bytes(field.encode_vec(share)))})
    return out


def decode_report_id(value: Any, field: str) -> bytes:
    try:
        parsed = uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise message_error(field, "must be a UUID") from None
    return parsed.bytes


def decode_shares(field: Any, entries: Any, name: str = "reports") -> Shares:
    if not isinstance(entries, list):
        raise message_error(name, "must be a list of {report_id, share | error}")
    out: Shares = {}
    for position, entry in enumerate(entries):
        where = f"{name}[{position}]"
        if not isinstance(entry, dict):
            raise message_error(where, "must be {report_id, share | error}")
        report_id = decode_report_id(entry.get("report_id"), f"{where}.report_id")
        if isinstance(entry.get("error"), str):
            out[report_id] = str(entry["error"])
            continue
        try:
            out[report_id] = list(field.decode_vec(from_b64url(entry.get("share"), f"{where}.share")))
        except ValueError as exc:
            raise message_error(f"{where}.share", str(exc)) from None
    return out


# -- the preparation state between requests ------------------------------------------------------------------------
def encode_state(aggregator: Poplar1Aggregator, state: LevelState) -> dict:
    field = field_of(aggregator, state.agg_param[0])
    return {"states": {r.hex(): [s.step, b64url(bytes(field.encode_vec(s.verify_mem)))]
                       for r, s in state.states.items()},
            "shares": {r.hex(): b64url(bytes(field.encode_vec(s))) for r, s in state.shares.items()},
            "rejected": {r.hex(): reason for r, reason in state.rejected.items()}}


def decode_state(aggregator: Poplar1Aggregator, key: BatchKey, agg_param: AggParam, data: dict) -> LevelState:
    level = agg_param[0]
    field = field_of(aggregator, level)
    state = LevelState(key[2], agg_param)
    for hex_id, (step, mem) in data["states"].items():
        state.states[bytes.fromhex(hex_id)] = Poplar1VerifyState(step, level, list(field.decode_vec(
            from_b64url(mem, "state"))))
    state.shares = {bytes.fromhex(h): list(field.decode_vec(from_b64url(s, "share")))
                    for h, s in data["shares"].items()}
    state.rejected = {bytes.fromhex(h): reason for h, reason in data["rejected"].items()}
    return state


def sealed_parts(sealed: Any) -> tuple[bytes, ...]:
    "An input share as an aggregator receives it, as bytes: the leader's opened share, or the helper's sealed one"
    if isinstance(sealed, bytes):
        return (sealed,)
    config_id, ciphertext = sealed
    return json.dumps(config_id).encode(), bytes(ciphertext)


def request_digest(agg_param: AggParam, reports: Sequence[tuple[bytes, bytes, Any]]) -> str:
    "SHA-256 over a level request: the aggregation parameter, then each report (id, public share, input share)"
    hashed = hashlib.sha256(json.dumps(encode_agg_param(agg_param), sort_keys=True).encode())
    for report_id, public_share, sealed in reports:
        for part in (report_id, public_share, *sealed_parts(sealed)):
            hashed.update(len(part).to_bytes(8, "big") + part)
    return hashed.hexdigest()


class StoredAggregator(Poplar1Aggregator):
    """A Poplar1Aggregator whose level history is its own database's: a level is checked against the stored
    history and recorded (with its reports and the request's digest) in one transaction, before anything is
    prepared.  The same request for a recorded level resumes it (a crash after the record, a retried walk): its
    preparation is deterministic and its noisy share is stored when first drawn, so the level's answers are the
    ones a first run gives; any other request for a recorded level is refused as the rules refuse it"""

    def __init__(self, *args: Any, store: Poplar1Store, key: BatchKey, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.store, self.key = store, key

    def round_one(self, batch: str, agg_param: AggParam,
                  reports: Sequence[tuple[bytes, bytes, Any]]) -> dict[bytes, list[int] | str]:
        ids = [report_id for report_id, _, _ in reports]
        level = agg_param[0]
        this_request = request_digest(agg_param, reports)
        with self.store.transaction():
            history = self.store.history(self.key)
            resumed = self.store.level_digests(self.key).get(level) == this_request
            if resumed:
                history = [recorded for recorded in history if recorded[0] < level]
            else:
                check_level(self.vdaf, self.params, history, agg_param, ids)
                if not self.store.add_level(self.key, agg_param, ids, this_request):
                    raise LevelRefused(LevelRefusal.LEVEL_NOT_INCREASING, f"level {level} was prepared already")
        if not resumed:
            failpoint(f"poplar1-{ROLES[self.agg_id]}-level-{level}-recorded")
        self.records = LevelRecords({batch: history})
        return super().round_one(batch, agg_param, reports)

    def finish(self, peer: dict[bytes, list[int] | str]) -> tuple[list[bytes], list[int]]:
        "The accepted reports and the level's noisy share: the stored one if the level was finished before"
        level = self._current().agg_param[0]
        accepted, share = super().finish(peer)
        accepted_checksum = checksum(accepted)
        with self.store.transaction():
            stored = self.store.noisy_share(self.key, level)
            if stored is None:
                self.store.put_noisy_share(self.key, level, accepted_checksum, share)
                return accepted, share
        if stored[0] != accepted_checksum:
            raise LevelRefused(LevelRefusal.LEVEL_NOT_INCREASING, f"level {level} was finished over other reports")
        return accepted, stored[1]


def unknown_level(level: int) -> ShareRejected:
    return message_error("level", f"level {level} is not in preparation here ({ProtocolError.JOB_MISMATCH})")
