"""The leader's side of a poplar1 campaign: provisioning with the helper, uploads (the leader's share opened and
decoded, the helper's kept sealed), and the walk of a batch over the peer protocol (``levels``), its release
stored beside the distributed campaigns' (``dist_releases``) with its estimate."""

from __future__ import annotations

import json
import secrets
import uuid
from collections import Counter
from typing import Any

from client_sdk.distributed import LEADER, input_share_info
from client_sdk.distributed_messages import ProtocolError, b64url, from_b64url, parse_payload
from client_sdk.errors import ShareRejected
from client_sdk.kinds.poplar1.device import poplar1_for
from client_sdk.spec import load_spec
from client_sdk.vdaf.hpke import HpkeError, open_sealed
from estimators.kinds.poplar1 import estimate_walk
from estimators.kinds.poplar1.prune import minimum_walk_reports

from ...distributed import hpke_keys
from ...distributed.peer import PeerClient
from ...distributed.store import BatchKey, DistCampaign, helper_config_block
from ...storage import CampaignVersion, StorageBase
from .levels import (
    Chunking,
    StoredAggregator,
    checksum,
    decode_report_id,
    decode_shares,
    encode_agg_param,
    encode_shares,
    field_of,
)
from .rules import AggParam, LevelRefusal, LevelRefused
from .store import Poplar1Store
from .walk import walk


def provision_campaign(storage: StorageBase, store: Poplar1Store, peer: PeerClient, helper_url: str, source: dict,
                       day: str) -> tuple[CampaignVersion, bool]:
    "Create a poplar1 campaign: its verify key drawn here, the helper provisioned, then the version stored"
    spec = load_spec(source)
    known = store.campaign(spec.name, spec.fingerprint)
    existing = storage.find_version(spec.name, spec.fingerprint)
    if existing is not None and known is not None and known.state == "ready":
        return existing, False
    if known is None:
        size = poplar1_for(spec.params.bits).VERIFY_KEY_SIZE
        known = DistCampaign(spec.name, spec.fingerprint, "leader", secrets.token_bytes(size), helper_url, None,
                             "provisioning")
        with store.transaction():
            store.put_campaign(known)
    configs = peer.hpke_configs()
    spec_dict = {k: v for k, v in spec.to_dict(derived=False).items() if k not in ("version", "fingerprint")}
    peer.call("PUT", f"/v1/peer/poplar1/campaigns/{spec.name}", {"spec": spec_dict,
                                                                  "verify_key": b64url(known.verify_key)})
    campaign, created = storage.create_campaign(source, day)
    with store.transaction():
        store.put_campaign(DistCampaign(spec.name, spec.fingerprint, "leader", known.verify_key, helper_url,
                                        helper_config_block(configs, known), "ready"))
    return campaign, created


def accept_reports(store: Poplar1Store, items: list[tuple[int, dict, CampaignVersion]], day: str,
                   overlap_days: int) -> tuple[int, int, list[tuple[int, str, str, str]]]:
    "(accepted, duplicate, rejected) of a POST /v1/reports's poplar1 reports; each rejection names its field"
    pairs = hpke_keys.keys(store).usable(day, overlap_days)
    rows: dict[BatchKey, list[tuple[bytes, bytes, bytes, str]]] = {}
    rejected: list[tuple[int, str, str, str]] = []
    for index, report, campaign in items:
        spec, report_id = campaign.spec, report["report_id"]
        vdaf = poplar1_for(spec.params.bits)
        try:
            payload = parse_payload(report["payload"])
            batch = payload.batch or day
            key: BatchKey = (spec.name, spec.fingerprint, batch)
            if store.release(key) is not None:
                raise ShareRejected(ProtocolError.BATCH_COLLECTED, "payload.batch", f"batch {batch} was collected")
            pair = pairs.get(payload.leader_config_id)
            if pair is None:
                raise ShareRejected(ProtocolError.HPKE_UNKNOWN_CONFIG_ID, "payload.leader_share.config_id",
                                    "is not this leader's HPKE config id")
            try:
                plaintext = open_sealed(pair, payload.leader_ciphertext,
                                        input_share_info(spec, report_id, LEADER, payload.public_share,
                                                         payload.batch))
            except HpkeError:
                raise ShareRejected(ProtocolError.HPKE_DECRYPT_ERROR, "payload.leader_share.ciphertext",
                                    "cannot be opened with the leader's key") from None
            try:
                vdaf.decode_public_share(payload.public_share)
                vdaf.decode_input_share(0, plaintext)
            except ValueError as exc:
                raise ShareRejected(ProtocolError.INVALID_MESSAGE, "payload", f"is malformed: {exc}") from None
        except ShareRejected as exc:
            rejected.append((index, report_id, exc.field, exc.message))
            continue
        rows.setdefault(key, []).append((uuid.UUID(report_id).bytes, payload.public_share, plaintext,
                                         json.dumps(payload.helper_share())))
    accepted = duplicate = 0
    with store.transaction():
        for key, group in rows.items():
            inserted = store.insert_reports(key, group)
            accepted += inserted
            duplicate += len(group) - inserted
    return accepted, duplicate, rejected


class HttpHelperLevels:
    """The helper's three steps of a level (``walk.HelperLevels``), as the peer requests of ``levels``: each step
    chunk by chunk (``chunking``), the finish once for the level"""

    def __init__(self, peer: PeerClient, key: BatchKey, field_for: Any, chunking: Chunking) -> None:
        self.peer, self.key, self.field_for, self.chunking = peer, key, field_for, chunking
        self.level = -1
        self.chunks: list[list[bytes]] = []  # the level's report ids, by chunk

    def _body(self, **more: Any) -> dict:
        return {"campaign": self.key[0], "fingerprint": self.key[1], "batch": self.key[2], "level": self.level,
                **more}

    def _each_chunk(self, path: str, peer: dict) -> list[dict]:
        "The helper's answer to ``path`` for each chunk, sent the leader's shares of its reports"
        field = self.field_for(self.level)
        return [self.peer.call("POST", path, self._body(chunk=position, reports=encode_shares(
                    field, {r: peer[r] for r in ids if r in peer})))
                for position, ids in enumerate(self.chunks)]

    def round_one(self, batch: str, agg_param: AggParam, reports: Any) -> dict:
        self.level = agg_param[0]
        entries = [{"report_id": str(uuid.UUID(bytes=r)), "public_share": b64url(p), "helper_share": sealed}
                   for r, p, sealed in reports]
        body = self._body(prefixes=encode_agg_param(agg_param)["prefixes"])
        chunks = self.chunking.split(body, entries)
        self.chunks = [[uuid.UUID(entry["report_id"]).bytes for entry in chunk] for chunk in chunks]
        out: dict = {}
        for position, chunk in enumerate(chunks):
            answer = self.peer.call("POST", "/v1/peer/poplar1/levels",
                                    {**body, "chunk": position, "chunks": len(chunks), "reports": chunk})
            out.update(decode_shares(self.field_for(self.level), answer.get("reports")))
        return out

    def round_two(self, peer: dict) -> dict:
        out: dict = {}
        for answer in self._each_chunk("/v1/peer/poplar1/levels/sketch", peer):
            out.update(decode_shares(self.field_for(self.level), answer.get("reports")))
        return out

    def finish(self, peer: dict) -> tuple[list[bytes], list[int]]:
        "The reports the helper accepted and its noisy aggregate share (``walk`` holds them to the leader's)"
        accepted: list[bytes] = []
        for ids, answer in zip(self.chunks, self._each_chunk("/v1/peer/poplar1/levels/aggregate", peer)):
            chunk = [decode_report_id(r, "accepted") for r in answer.get("accepted", [])]
            if not set(chunk) <= set(ids) or answer.get("checksum") != checksum(chunk):
                raise ValueError("the helper's answer for a chunk does not add up")
            accepted += chunk
        answer = self.peer.call("POST", "/v1/peer/poplar1/levels/finish", self._body())
        if answer.get("checksum") != checksum(accepted) or answer.get("report_count") != len(accepted):
            raise ValueError("the helper's answer does not add up")
        field = self.field_for(self.level)
        share = list(field.decode_vec(from_b64url(answer["aggregate_share"], "aggregate_share")))
        return accepted, share


def collect(storage: StorageBase, store: Poplar1Store, peer: PeerClient, campaign: CampaignVersion,
            batch: str, chunking: Chunking | None = None) -> dict:
    """Walk the batch with the helper, each level's reports sent in chunks (``chunking``, default the defaults);
    the stored release (the walk, the estimate, the rejections), once"""
    spec = campaign.spec
    key: BatchKey = (spec.name, spec.fingerprint, batch)
    stored = store.release(key)
    if stored is not None:
        return stored
    known = store.campaign(spec.name, spec.fingerprint)
    if known is None or known.state != "ready":
        raise LevelRefused(LevelRefusal.LEVEL_NOT_IN_WALK, f"campaign {spec.name!r} is not provisioned here")
    reports = store.batch_reports(key)
    if len(reports) < spec.params.min_batch:
        raise LevelRefused(LevelRefusal.BATCH_TOO_SMALL, f"{len(reports)} reports in batch {batch}, below "
                                                         f"min_batch = {spec.params.min_batch}")
    needed = minimum_walk_reports(spec.epsilon, float(spec.delta or 0.0), len(spec.params.levels),
                                  spec.params.threshold, spec.params.stride)
    if len(reports) < needed:  # before any level: nothing is asked of the helper, nothing stored
        raise LevelRefused(LevelRefusal.BATCH_TOO_SMALL,
                           f"{len(reports)} reports in batch {batch}: at threshold {spec.params.threshold} and epsilon "
                           f"{spec.epsilon} a walk needs at least {needed} (with fewer, the counts kept above the "
                           "noise's margin are so small that the noise's own candidates multiply level by level); "
                           "raise the threshold or wait for more reports")
    leader = StoredAggregator(spec, known.verify_key, 0, lambda r, p, share: share, store=store, key=key)
    helper = HttpHelperLevels(peer, key, lambda level: field_of(leader, level), chunking or Chunking())
    release = walk(leader, helper, batch, reports)
    walked = release.to_dict()
    rejections = Counter(leader.rejections)
    out = {"campaign": spec.name, "fingerprint": spec.fingerprint, "version": campaign.version, "batch": batch,
           "kind": "poplar1", "walk": walked, "rejections": dict(rejections),
           "estimate": estimate_walk(spec, walked, rejected=rejections)}
    with store.transaction():
        store.put_release(key, campaign.version, out)
    return store.release(key) or out
