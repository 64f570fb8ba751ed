"""The helper's side of a poplar1 walk: provisioning, and the requests of a level, chunk by chunk, then its finish
(``levels`` describes them), each checked against this helper's own records (``store.Poplar1Store``) and answered
once.

Each chunk step's answer is stored with the digest of its request (SHA-256 of the canonical JSON body: batch,
level, chunk, prefixes, reports, shares), in the transaction that moves the chunk's state by compare-and-set: the
same request again (the leader's retry after a lost answer, or a twin racing it in another thread or process) gets
the stored answer unchanged, nothing stored out of order; a different request at a chunk already recorded is
refused by the rules (``chunk-mismatch``, ``level-not-increasing``, ``report-repeated``).  The finish adds the
chunks' sums and draws the noise in one transaction holding the level's row: once.

Every level request carries each report's sealed share again; the process keeps the shares it opened for the
batches it walked last (``OpenedShares``), so a walk's later levels do not run HPKE again per report."""

from __future__ import annotations

import threading
import uuid
from collections import Counter, OrderedDict
from typing import Any, Generic, TypeVar

from client_sdk.distributed import HELPER, input_share_info
from client_sdk.distributed_messages import ProtocolError, b64url, from_b64url
from client_sdk.errors import ShareRejected, SpecError
from client_sdk.kinds.poplar1.device import poplar1_for
from client_sdk.spec import Spec, load_spec
from client_sdk.vdaf.hpke import HpkeError, open_sealed

from ...distributed import hpke_keys
from ...distributed.helper import PeerProblem, record_campaign
from ...distributed.store import BatchKey, failpoint
from ...storage import CampaignVersion, StorageBase
from .levels import (
    checksum,
    decode_agg_param,
    decode_report_id,
    decode_shares,
    decode_state,
    digest,
    encode_agg_param,
    encode_shares,
    encode_state,
    field_of,
    message_error,
    unknown_level,
)
from .prepare import LevelState, Poplar1Aggregator
from .rules import (
    AggParam,
    LevelRefusal,
    LevelRefused,
    RecordedLevel,
    check_agg_param,
    check_chunk,
    check_declared,
    check_distinct,
    check_min_batch,
    check_position,
)
from .store import ChunkRow, Poplar1Store, bits_prefix

KEY_FIELDS = {"campaign", "fingerprint", "batch", "level"}
CHUNK_FIELDS = KEY_FIELDS | {"chunk", "reports"}
K = TypeVar("K")
V = TypeVar("V")
OPENED_BATCHES = 4  # batches whose opened shares a helper process keeps for the later levels of their walks
CACHED_CHUNKS = 32  # chunks whose preparation state a helper process keeps as objects (PreparedStates)


class Recent(Generic[K, V]):
    "The last ``size`` entries put or touched, by key, under a lock: the oldest dropped first"

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._entries.get(key)

    def pop(self, key: K) -> V | None:
        with self._lock:
            return self._entries.pop(key, None)

    def setdefault(self, key: K, default: V) -> V:
        "The entry at ``key`` (``default`` put there if none), made the newest"
        with self._lock:
            value = self._entries.setdefault(key, default)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries.pop(key, None)
        self.setdefault(key, value)


class OpenedShares:
    """The input shares this process opened, per batch, for the last ``batches`` batches: the plaintext of a
    (report id, public share, config id, ciphertext), which only these determine (HPKE with this helper's key of
    that config id, the info made of the report's metadata)"""

    def __init__(self, batches: int = OPENED_BATCHES) -> None:
        self._opened: Recent[BatchKey, dict[tuple, bytes]] = Recent(batches)

    def get(self, key: BatchKey, sealed_as: tuple) -> bytes | None:
        return (self._opened.get(key) or {}).get(sealed_as)

    def put(self, key: BatchKey, sealed_as: tuple, plaintext: bytes) -> None:
        self._opened.setdefault(key, {})[sealed_as] = plaintext


OPENED = OpenedShares()


def row_mark(row: ChunkRow) -> tuple:
    """What determines a stored chunk's preparation state: its state, its request's digest and the digests of the
    requests it answered (preparation is deterministic: the same requests give the same state)"""
    return row.state, row.request_digest, tuple(sorted((step, entry.get("digest")) for step, entry in
                                                      row.answers.items() if isinstance(entry, dict)))


class PreparedStates:
    """The preparation states of the chunks this process moved last, as objects, each with the mark of the row it
    stored (``row_mark``): a chunk's next step takes its state from here when the stored row still has that mark,
    rather than decoding the stored copy (which stays the record, for another process or a restart).  A step takes
    its entry out, since it changes the state, and puts back the state it stores."""

    def __init__(self, chunks: int = CACHED_CHUNKS) -> None:
        self._states: Recent[tuple, tuple[tuple, LevelState]] = Recent(chunks)

    def take(self, where: tuple, row: ChunkRow) -> LevelState | None:
        entry = self._states.pop(where)
        return entry[1] if entry is not None and entry[0] == row_mark(row) else None

    def put(self, where: tuple, row: ChunkRow, state: LevelState) -> None:
        self._states.put(where, (row_mark(row), state))


PREPARED = PreparedStates()


def stored_answer(answers: dict | None, step: str, request_digest: str) -> dict | None:
    "The answer stored for this very request at ``step`` (the same digest), or None"
    entry = (answers or {}).get(step)
    if isinstance(entry, dict) and entry.get("digest") == request_digest:
        return dict(entry["answer"])
    return None


def with_answer(answers: dict | None, step: str, request_digest: str, answer: dict) -> dict:
    "The level's stored answers with ``step``'s added"
    return {**(answers or {}), step: {"digest": request_digest, "answer": answer}}


def provision(storage: StorageBase, store: Poplar1Store, name: str, body: Any, day: str) -> tuple[CampaignVersion,
                                                                                                   bool]:
    "Store the leader's poplar1 campaign and its verify key; idempotent"
    if not isinstance(body, dict) or set(body) != {"spec", "verify_key"} or not isinstance(body["spec"], dict):
        raise PeerProblem(ProtocolError.INVALID_FIELD, 'body must be {"spec", "verify_key"}', "body")
    source = {k: v for k, v in body["spec"].items() if k not in ("version", "fingerprint", "derived")}
    if source.get("name") != name:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "spec must be an object whose name is the path's", "spec")
    try:
        spec = load_spec(source)
        verify_key = from_b64url(body["verify_key"], "verify_key")
    except SpecError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"spec: {exc}", f"spec.{exc.field}") from None
    except ValueError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, str(exc), "verify_key") from None
    if len(verify_key) != poplar1_for(spec.params.bits).VERIFY_KEY_SIZE:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "verify_key has the wrong size", "verify_key")
    return record_campaign(storage, store, spec, source, verify_key, day)


def _aggregator(storage: StorageBase, store: Poplar1Store, body: Any, fields: set[str], day: str,
                overlap_days: int) -> tuple[Poplar1Aggregator, BatchKey, int]:
    if not isinstance(body, dict) or set(body) != fields:
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"body must be {sorted(fields)}", "body")
    name, fingerprint, batch, level = (body[k] for k in ("campaign", "fingerprint", "batch", "level"))
    if not isinstance(name, str) or not isinstance(fingerprint, str) or not isinstance(batch, str):
        raise PeerProblem(ProtocolError.INVALID_FIELD, "campaign, fingerprint and batch must be strings", "campaign")
    if type(level) is not int:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "level must be an integer", "level")
    known = store.campaign(name, fingerprint)
    version = storage.find_version(name, fingerprint)
    if known is None or version is None or known.role != "helper":
        raise PeerProblem(ProtocolError.UNKNOWN_CAMPAIGN, f"no poplar1 campaign {name!r} with this fingerprint here",
                          "campaign")
    spec: Spec = version.spec
    key: BatchKey = (name, fingerprint, batch)
    pairs = hpke_keys.keys(store).usable(day, overlap_days)

    def opener(report_id: bytes, public_share: bytes, sealed: Any) -> bytes:
        config_id, ciphertext = sealed
        pair = pairs.get(config_id) if type(config_id) is int else None
        if pair is None:
            raise ShareRejected(ProtocolError.HPKE_UNKNOWN_CONFIG_ID, "helper_share.config_id", "not this helper's")
        sealed_as = (report_id, public_share, config_id, ciphertext)
        opened = OPENED.get(key, sealed_as)
        if opened is not None:
            return opened
        for named in (batch, None):
            try:
                info = input_share_info(spec, str(uuid.UUID(bytes=report_id)), HELPER, public_share, named)
                opened = open_sealed(pair, ciphertext, info)
            except HpkeError:
                continue
            OPENED.put(key, sealed_as, opened)
            return opened
        raise ShareRejected(ProtocolError.HPKE_DECRYPT_ERROR, "helper_share.ciphertext", "does not open")

    return Poplar1Aggregator(spec, known.verify_key, 1, opener), key, level


def _count(body: dict, name: str, least: int) -> int:
    value = body[name]
    if type(value) is not int or value < least:
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"{name} must be an integer of at least {least}", name)
    return value


def _reports(body: dict) -> list[tuple[bytes, bytes, tuple[Any, bytes]]]:
    "The chunk's reports: (id, public share, the sealed share's config id and ciphertext)"
    entries = body["reports"] if isinstance(body["reports"], list) else None
    if entries is None:
        raise message_error("reports", "must be a list")
    reports = []
    for position, entry in enumerate(entries):
        where = f"reports[{position}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("helper_share"), dict):
            raise message_error(where, "must be {report_id, public_share, helper_share}")
        sealed = entry["helper_share"]
        reports.append((decode_report_id(entry.get("report_id"), f"{where}.report_id"),
                        from_b64url(entry.get("public_share"), f"{where}.public_share"),
                        (sealed.get("config_id"), from_b64url(sealed.get("ciphertext"),
                                                              f"{where}.helper_share.ciphertext"))))
    return reports


def _record_chunk(aggregator: Poplar1Aggregator, store: Poplar1Store, key: BatchKey, agg_param: AggParam,
                  chunk: int, chunks: int, request_digest: str, report_ids: list[bytes]) -> None:
    """Check a chunk on this helper's records (``rules``) and record it with its reports, in one transaction
    under the batch's lock; nothing if this very request recorded it before"""
    level = agg_param[0]
    opened = added = False
    with store.transaction():
        store.lock_levels(key)
        recorded = store.recorded_level(key, level)
        if recorded is None:
            check_agg_param(aggregator.vdaf, aggregator.params, store.history(key), agg_param)
            check_position(chunk, chunks)
            store.open_level(key, agg_param, chunks, digest({"prefixes": encode_agg_param(agg_param),
                                                             "chunks": chunks}))
            recorded, opened = RecordedLevel(agg_param, chunks), True
        check_declared(recorded, agg_param, chunks)
        existing = store.chunk_rows(key, level, chunk).get(chunk)
        if existing is not None:
            if existing.request_digest != request_digest:
                raise LevelRefused(LevelRefusal.CHUNK_MISMATCH,
                                   f"chunk {chunk} of level {level} was recorded for another request")
        else:
            check_chunk(store.history(key), level, chunk, chunks)
            check_distinct(report_ids)
            if store.in_level(key, level, report_ids):
                raise LevelRefused(LevelRefusal.REPORT_REPEATED,
                                   f"a report of chunk {chunk} is in another chunk of level {level}")
            others = store.chunk_rows(key, level)
            if len(others) + 1 == chunks:  # the level's last chunk: min_batch over the whole level
                check_min_batch(aggregator.params, sum(r.report_count for r in others.values()) + len(report_ids),
                                f"reports in the level's {chunks} chunks")
            store.add_chunk(key, level, chunk, request_digest, report_ids)
            added = True
    if opened:
        failpoint(f"poplar1-helper-level-{level}-recorded")
    if added:
        failpoint(f"poplar1-helper-level-{level}-chunk-{chunk}-recorded")


def _advance(store: Poplar1Store, key: BatchKey, level: int, chunk: int, moved_from: str, moved_to: str, step: str,
             request_digest: str, answer: dict, aggregator: Poplar1Aggregator | None,
             chunk_sum: list[int] | None = None) -> dict:
    """Store a chunk step's answer and the chunk's new preparation state if the chunk is still at ``moved_from``
    (``aggregator.level``; None when the step leaves none) if the chunk is still at ``moved_from`` (compare-and-set);
    if a concurrent identical request moved it first, the answer that one stored"""
    state = None if aggregator is None else aggregator.level
    prep_state = None if aggregator is None or state is None else encode_state(aggregator, state)
    with store.transaction():
        row = store.chunk_rows(key, level, chunk)[chunk]
        moved_row = ChunkRow(moved_to, row.request_digest, row.report_count, prep_state,
                             with_answer(row.answers, step, request_digest, answer), chunk_sum)
        moved = store.advance_chunk(key, level, chunk, moved_from, moved_row)
    if moved and state is not None:
        PREPARED.put((key, level, chunk), moved_row, state)
    if moved:
        failpoint(f"poplar1-helper-level-{level}-chunk-{chunk}-{moved_to}")
        return answer
    stored = stored_answer(store.chunk_rows(key, level, chunk)[chunk].answers, step, request_digest)
    if stored is None:
        raise LevelRefused(LevelRefusal.CHUNK_MISMATCH, f"chunk {chunk} of level {level} answered another {step}")
    return stored


def level_init(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    "A chunk of a level: checked on this helper's records, recorded, each report's first sketch share"
    aggregator, key, level = _aggregator(storage, store, body, CHUNK_FIELDS | {"prefixes", "chunks"}, day,
                                         overlap_days)
    chunk, chunks = _count(body, "chunk", 0), _count(body, "chunks", 1)
    request_digest = digest(body)
    row = store.chunk_rows(key, level, chunk).get(chunk)
    repeated = stored_answer(row.answers, "levels", request_digest) if row is not None else None
    if repeated is not None:
        return repeated
    try:
        agg_param = decode_agg_param(body)
        reports = _reports(body)
    except ShareRejected as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, exc.message, exc.field) from None
    except ValueError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, str(exc), "reports") from None
    _record_chunk(aggregator, store, key, agg_param, chunk, chunks, request_digest, [r[0] for r in reports])
    first = aggregator.first_shares(key[2], agg_param, reports)
    assert aggregator.level is not None
    answer = {"reports": encode_shares(field_of(aggregator, level), first)}
    return _advance(store, key, level, chunk, "recorded", "prepared", "levels", request_digest, answer,
                    aggregator)


def _chunk_step(storage: StorageBase, store: Poplar1Store, body: Any, stage: str, step: str, day: str,
                overlap_days: int) -> tuple[Poplar1Aggregator, BatchKey, int, int, str, dict | None, Any]:
    """A chunk resumed at ``stage`` for ``step``: (aggregator, key, level, chunk, the request's digest, the stored
    answer to this very request or None, the peer's shares)"""
    aggregator, key, level = _aggregator(storage, store, body, CHUNK_FIELDS, day, overlap_days)
    chunk = _count(body, "chunk", 0)
    row = store.chunk_rows(key, level, chunk).get(chunk)
    if row is None:
        raise PeerProblem(ProtocolError.JOB_MISMATCH, f"chunk {chunk} of level {level} is not recorded here",
                          "chunk")
    request_digest = digest(body)
    repeated = stored_answer(row.answers, step, request_digest)
    if repeated is not None:
        return aggregator, key, level, chunk, request_digest, repeated, None
    if step in row.answers:
        raise LevelRefused(LevelRefusal.CHUNK_MISMATCH, f"chunk {chunk} of level {level} answered another {step}")
    agg_param = (level, dict(store.history(key))[level])
    aggregator.level = PREPARED.take((key, level, chunk), row) if row.state == stage else None
    if aggregator.level is None:  # not this process's last state of the chunk: the stored copy
        row = store.chunk_rows(key, level, chunk, prep_state=True)[chunk]
        if row.state != stage or row.prep_state is None:
            raise PeerProblem(ProtocolError.JOB_MISMATCH, f"chunk {chunk} of level {level} is {row.state} here, "
                                                          f"not {stage}", "chunk")
        aggregator.level = decode_state(aggregator, key, agg_param, row.prep_state)
    try:
        theirs = decode_shares(field_of(aggregator, level), body["reports"])
    except ShareRejected as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, exc.message, exc.field) from None
    return aggregator, key, level, chunk, request_digest, None, theirs


def level_sketch(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    "A chunk's second request: the leader's first shares in, this helper's second shares out"
    aggregator, key, level, chunk, request_digest, repeated, theirs = _chunk_step(
        storage, store, body, "prepared", "sketch", day, overlap_days)
    if repeated is not None:
        return repeated
    second = aggregator.round_two(theirs)
    answer = {"reports": encode_shares(field_of(aggregator, level), second)}
    assert aggregator.level is not None
    return _advance(store, key, level, chunk, "prepared", "sketched", "sketch", request_digest, answer,
                    aggregator)


def level_aggregate(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    "A chunk's third request: the leader's second shares in, the chunk's accepted reports out, their sum stored"
    aggregator, key, level, chunk, request_digest, repeated, theirs = _chunk_step(
        storage, store, body, "sketched", "aggregate", day, overlap_days)
    if repeated is not None:
        return repeated
    state = aggregator.level
    assert state is not None
    accepted, total = aggregator.aggregate(theirs)
    answer = {"report_count": len(accepted), "checksum": checksum(accepted),
              "accepted": [str(uuid.UUID(bytes=r)) for r in accepted],
              "rejections": dict(Counter(state.rejected.values()))}
    return _advance(store, key, level, chunk, "sketched", "aggregated", "aggregate", request_digest, answer, None,
                    total)


def level_finish(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    """The level's last request, once every chunk is aggregated: the accepted reports' count and checksum and this
    helper's noisy aggregate share, drawn and stored in one transaction holding the level's row (once)"""
    aggregator, key, level = _aggregator(storage, store, body, KEY_FIELDS, day, overlap_days)
    request_digest = digest(body)
    with store.transaction():
        row = store.level_row(key, level)
        recorded = store.recorded_level(key, level)
        if row is None or recorded is None:
            raise PeerProblem(ProtocolError.JOB_MISMATCH, unknown_level(level).message, "level")
        repeated = stored_answer(row[2], "finish", request_digest)
        if repeated is not None:
            return repeated
        chunks = store.chunk_rows(key, level)
        missing = [c for c in range(recorded.chunks) if c not in chunks or chunks[c].state != "aggregated"]
        if missing:
            raise LevelRefused(LevelRefusal.LEVEL_INCOMPLETE, f"level {level}: chunks {missing} of {recorded.chunks} "
                                                              "are not aggregated here")
        accepted = [decode_report_id(r, "accepted") for c in chunks.values()
                    for r in c.answers["aggregate"]["answer"]["accepted"]]
        check_min_batch(aggregator.params, len(accepted), "reports passed the sketch")
        modulus = field_of(aggregator, level).MODULUS
        total = [sum(column) % modulus for column in zip(*(c.chunk_sum or [] for c in chunks.values()))]
        share = aggregator.noisy(level, total)
        rejections: Counter = Counter()
        for c in chunks.values():
            rejections.update(c.answers["aggregate"]["answer"]["rejections"])
        accepted_checksum = checksum(accepted)
        answer = {"report_count": len(accepted), "checksum": accepted_checksum,
                  "aggregate_share": b64url(bytes(field_of(aggregator, level).encode_vec(share))),
                  "rejections": dict(rejections)}
        store.set_level(key, level, "finished", None, with_answer(None, "finish", request_digest, answer))
        store.put_noisy_share(key, level, accepted_checksum, share)
    return answer


__all__ = ["bits_prefix", "level_aggregate", "level_finish", "level_init", "level_sketch", "provision"]
