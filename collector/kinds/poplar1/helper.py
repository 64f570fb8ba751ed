"""The helper's side of a poplar1 walk: provisioning, and the three requests of a level (``levels`` describes
them), each checked against this helper's own records (``store.Poplar1Store``) and answered once.

Each step's answer is stored with the digest of its request (SHA-256 of the canonical JSON body: batch, level,
prefixes, reports, shares): the same request again (the leader's retry after a lost answer) gets the stored answer
unchanged, nothing prepared or drawn again; a different request at a level already answered is refused by the
rules (``level-not-increasing``, or the step's ``job-mismatch`` / ``batch-collected``).

Every level request carries each report's sealed share again; the process keeps the shares it opened for the
batches it walked last (``OpenedShares``), so a walk's later levels do not run HPKE again per report."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

from client_sdk.distributed import HELPER, input_share_info
from client_sdk.distributed_messages import ProtocolError, b64url, from_b64url
from client_sdk.errors import ShareRejected, SpecError
from client_sdk.kinds.poplar1.device import poplar1_for
from client_sdk.spec import Spec, load_spec
from client_sdk.vdaf.hpke import HpkeError, open_sealed

from ...distributed import hpke_keys
from ...distributed.helper import PeerProblem, record_campaign
from ...distributed.store import BatchKey
from ...storage import CampaignVersion, StorageBase
from .levels import (
    StoredAggregator,
    checksum,
    decode_agg_param,
    decode_report_id,
    decode_shares,
    decode_state,
    digest,
    encode_shares,
    encode_state,
    field_of,
    message_error,
    unknown_level,
)
from .store import Poplar1Store, bits_prefix

KEY_FIELDS = {"campaign", "fingerprint", "batch", "level"}
OPENED_BATCHES = 4  # batches whose opened shares a helper process keeps for the later levels of their walks


class OpenedShares:
    """The input shares this process opened, per batch, for the last ``batches`` batches: the plaintext of a
    (report id, public share, config id, ciphertext), which only these determine (HPKE with this helper's key of
    that config id, the info made of the report's metadata)"""

    def __init__(self, batches: int = OPENED_BATCHES) -> None:
        self.batches = batches
        self._opened: OrderedDict[BatchKey, dict[tuple, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: BatchKey, sealed_as: tuple) -> bytes | None:
        with self._lock:
            return self._opened.get(key, {}).get(sealed_as)

    def put(self, key: BatchKey, sealed_as: tuple, plaintext: bytes) -> None:
        with self._lock:
            self._opened.setdefault(key, {})[sealed_as] = plaintext
            self._opened.move_to_end(key)
            while len(self._opened) > self.batches:
                self._opened.popitem(last=False)


OPENED = OpenedShares()


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
                overlap_days: int) -> tuple[StoredAggregator, BatchKey, int]:
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

    aggregator = StoredAggregator(spec, known.verify_key, 1, opener, store=store, key=key)
    return aggregator, key, level


def level_init(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    "The first request of a level: checked on this helper's records, recorded, each report's first sketch share"
    aggregator, key, level = _aggregator(storage, store, body, KEY_FIELDS | {"prefixes", "reports"}, day,
                                         overlap_days)
    request_digest = digest(body)
    row = store.level_row(key, level)
    repeated = stored_answer(row[2], "levels", request_digest) if row is not None else None
    if repeated is not None:
        return repeated
    try:
        agg_param = decode_agg_param(body)
        reports = []
        entries = body["reports"] if isinstance(body["reports"], list) else None
        if entries is None:
            raise message_error("reports", "must be a list")
        for position, entry in enumerate(entries):
            where = f"reports[{position}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("helper_share"), dict):
                raise message_error(where, "must be {report_id, public_share, helper_share}")
            sealed = entry["helper_share"]
            reports.append((decode_report_id(entry.get("report_id"), f"{where}.report_id"),
                            from_b64url(entry.get("public_share"), f"{where}.public_share"),
                            (sealed.get("config_id"), from_b64url(sealed.get("ciphertext"),
                                                                  f"{where}.helper_share.ciphertext"))))
    except ShareRejected as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, exc.message, exc.field) from None
    except ValueError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, str(exc), "reports") from None
    first = aggregator.round_one(key[2], agg_param, reports)  # LevelRefused: the blueprint's problem
    assert aggregator.level is not None
    answer = {"reports": encode_shares(field_of(aggregator, level), first)}
    with store.transaction():
        store.set_level(key, level, "prepared", encode_state(aggregator, aggregator.level),
                        with_answer(None, "levels", request_digest, answer))
    return answer


def _resume(storage: StorageBase, store: Poplar1Store, body: Any, stage: str, day: str,
            overlap_days: int) -> tuple[StoredAggregator, BatchKey, int, tuple | None]:
    aggregator, key, level = _aggregator(storage, store, body, KEY_FIELDS | {"reports"}, day, overlap_days)
    row = store.level_row(key, level)
    if row is None:
        raise PeerProblem(ProtocolError.JOB_MISMATCH, unknown_level(level).message, "level")
    history = dict(store.history(key))
    agg_param = (level, history[level])
    if row[0] == stage and row[1] is not None:
        aggregator.level = decode_state(aggregator, key, agg_param, row[1])
    return aggregator, key, level, row


def _resume_step(storage: StorageBase, store: Poplar1Store, body: Any, stage: str, step: str, day: str,
                 overlap_days: int) -> tuple[StoredAggregator, BatchKey, int, tuple, str, dict | None]:
    "The level resumed at ``stage``, the request's digest, and this step's stored answer to that same request"
    aggregator, key, level, row = _resume(storage, store, body, stage, day, overlap_days)
    assert row is not None
    request_digest = digest(body)
    return aggregator, key, level, row, request_digest, stored_answer(row[2], step, request_digest)


def level_sketch(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    "The second request: the leader's first shares in, this helper's second shares out"
    aggregator, key, level, row, request_digest, repeated = _resume_step(storage, store, body, "prepared", "sketch",
                                                                          day, overlap_days)
    if repeated is not None:
        return repeated
    if aggregator.level is None:
        raise PeerProblem(ProtocolError.JOB_MISMATCH, f"level {level} is past its sketch here", "level")
    field = field_of(aggregator, level)
    try:
        theirs = decode_shares(field, body["reports"])
    except ShareRejected as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, exc.message, exc.field) from None
    second = aggregator.round_two(theirs)
    answer = {"reports": encode_shares(field, second)}
    with store.transaction():
        store.set_level(key, level, "sketched", encode_state(aggregator, aggregator.level),
                        with_answer(row[2], "sketch", request_digest, answer))
    return answer


def level_finish(storage: StorageBase, store: Poplar1Store, body: Any, day: str, overlap_days: int) -> dict:
    "The third request: the sketch checked, the accepted reports' noisy aggregate share; once"
    aggregator, key, level, row, request_digest, repeated = _resume_step(storage, store, body, "sketched", "finish",
                                                                          day, overlap_days)
    if repeated is not None:
        return repeated
    if row[0] == "finished":
        raise PeerProblem(ProtocolError.BATCH_COLLECTED, f"level {level} was finished already", "level")
    if aggregator.level is None:
        raise PeerProblem(ProtocolError.JOB_MISMATCH, f"level {level} has not been sketched here", "level")
    field = field_of(aggregator, level)
    try:
        theirs = decode_shares(field, body["reports"])
    except ShareRejected as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, exc.message, exc.field) from None
    accepted, share = aggregator.finish(theirs)  # LevelRefused below min_batch
    answer = {"report_count": len(accepted), "checksum": checksum(accepted),
              "accepted": [str(uuid.UUID(bytes=r)) for r in accepted],
              "aggregate_share": b64url(bytes(field.encode_vec(share))),
              "rejections": dict(aggregator.rejections)}
    with store.transaction():
        store.set_level(key, level, "finished", None, with_answer(row[2], "finish", request_digest, answer))
    return answer


__all__ = ["bits_prefix", "level_finish", "level_init", "level_sketch", "provision"]
