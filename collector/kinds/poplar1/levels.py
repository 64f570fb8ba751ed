"""The messages of a poplar1 level between the leader and the helper, one encoder and one decoder each, and an
aggregator (``StoredAggregator``) whose level history is its own database's (``store.Poplar1Store``).

A level is the helper's, chunk by chunk (``Chunking``: at most ``POPLAR1_CHUNK_EVALUATIONS`` reports x candidate
prefixes and ``MAX_BODY_BYTES`` per request), then one finish; each request names the batch (campaign,
fingerprint, batch), the level and, but the finish, the chunk's position:

- ``POST /v1/peer/poplar1/levels``: the aggregation parameter (the candidate prefixes as bit strings), the number
  of chunks of the level and the chunk's reports (id, public share, the helper's sealed share); the helper checks
  the chunk on its own records (``rules``), records it, and answers each report's first sketch share (or its
  rejection's name);
- ``POST /v1/peer/poplar1/levels/sketch``: the leader's first shares of the chunk; the helper answers its second
  shares;
- ``POST /v1/peer/poplar1/levels/aggregate``: the leader's second shares of the chunk; the helper answers the
  chunk's accepted reports and adds up their output shares in its store (noiseless: never released);
- ``POST /v1/peer/poplar1/levels/finish``: once every chunk is aggregated, the helper answers the level's accepted
  count and checksum and its noisy aggregate share (its noise drawn once, in the transaction that stores it).

Each answer is stored with its request's digest and repeated unchanged for the same request (a retry after a lost
answer), never computed or drawn twice; a different request at an answered chunk is refused.  A chunk the helper
recorded and did not answer (killed in between) is resumed by the very same request (the same digest), prepared
again: preparation draws nothing.  The leader cuts a level the same way on every try (its reports in id order), so
its retried walk resumes the helper's chunks.  The leader prepares its own share of a level in one go
(``StoredAggregator``).

A share is the draft's encoding of its field vector (``Field.encode_vec``), base64url; a rejection is its problem
type's name.  The preparation state a chunk needs between requests is stored by the helper with the chunk
(``store.ChunkRow.prep_state``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from client_sdk.distributed_messages import ProtocolError, b64url, from_b64url
from client_sdk.errors import ShareRejected
from client_sdk.vdaf.poplar1 import Poplar1VerifyState

from ...config import DEFAULTS
from ...distributed.store import BatchKey, failpoint
from .prepare import LevelState, Poplar1Aggregator
from .rules import AggParam, LevelRecords, LevelRefusal, LevelRefused, check_level
from .store import Poplar1Store, bits_prefix, prefix_bits

Shares = dict[bytes, list[int] | str]  # report id -> its share, or the name of its rejection
ROLES = ("leader", "helper")  # by aggregator id: the names of the crash tests' failpoints


@dataclass(frozen=True)
class Chunking:
    """How the leader cuts a level into the helper's requests: at most ``evaluations`` reports x candidate prefixes
    a chunk (the helper's preparation time is about proportional: ``Poplar1.verify_init_indices`` per report and
    candidate), each request's body within ``body_bytes``"""

    evaluations: int = DEFAULTS["POPLAR1_CHUNK_EVALUATIONS"]
    body_bytes: int = DEFAULTS["MAX_BODY_BYTES"]  # the helper's request body limit (the same default on both)

    def __post_init__(self) -> None:
        if type(self.evaluations) is not int or self.evaluations < 1:
            raise ValueError(f"POPLAR1_CHUNK_EVALUATIONS must be a positive integer, got {self.evaluations!r}")
        if type(self.body_bytes) is not int or self.body_bytes < 1:
            raise ValueError(f"MAX_BODY_BYTES must be a positive integer, got {self.body_bytes!r}")

    @classmethod
    def from_config(cls, config: Any) -> Chunking:
        return cls(int(config["POPLAR1_CHUNK_EVALUATIONS"]), int(config["MAX_BODY_BYTES"]))

    def reports(self, candidates: int) -> int:
        "The most reports a chunk holds at a level of ``candidates`` prefixes"
        return max(1, self.evaluations // max(1, candidates))

    def split(self, body: dict, entries: Sequence[dict]) -> list[list[dict]]:
        """``entries`` in order, cut where a chunk would exceed its reports (``reports``, for the prefixes of
        ``body``) or its request (``body`` with the chunk as its ``reports``, as JSON) ``body_bytes`` (a chunk has
        at least one entry)"""
        most = self.reports(len(body["prefixes"]))
        chunks: list[list[dict]] = []
        size = 0
        empty = len(json.dumps({**body, "chunk": 0, "chunks": 0, "reports": []})) + 16  # the two numbers' digits
        for entry in entries:
            more = len(json.dumps(entry)) + 2  # ", " between entries
            if not chunks or len(chunks[-1]) >= most or size + more > self.body_bytes:
                chunks.append([])
                size = empty
            chunks[-1].append(entry)
            size += more
        return chunks


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
            self.store.lock_levels(self.key)
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
