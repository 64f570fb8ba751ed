"""A direct HTTP client acting as a poplar1 leader against a real helper: it reads the batch's reports and the
verify key from the leader's database, prepares the leader's own shares of each chunk in-process
(``Poplar1Aggregator``) and sends the helper the chunk requests it chooses (``collector.kinds.poplar1.levels``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import requests

from client_sdk.distributed_messages import b64url
from collector.kinds.poplar1 import Poplar1Aggregator
from collector.kinds.poplar1.levels import decode_shares, encode_shares, field_of
from collector.kinds.poplar1.store import Poplar1Store, bits_prefix
from collector.storage import open_storage
from tests.collector.distributed.test_e2e_devices import PEER_TOKEN

Row = tuple[bytes, bytes, bytes, dict]  # (id, public share, the leader's opened share, the helper's sealed share)


class ActingLeader:
    "The leader's side of one batch's levels, chunk by chunk, each request built and sent as the test chooses"

    def __init__(self, leader_db: Path | str, helper_url: str, spec: Any, batch: str) -> None:
        self.helper_url, self.spec, self.batch = helper_url, spec, batch
        key = (spec.name, spec.fingerprint, batch)
        with open_storage(leader_db) as storage:
            store = Poplar1Store(storage)
            known = store.campaign(spec.name, spec.fingerprint)
            self.rows: list[Row] = store.batch_reports(key)
        assert known is not None
        self.verify_key = known.verify_key
        self._chunks: dict[tuple[int, int], tuple[Poplar1Aggregator, dict, dict]] = {}

    def _key(self, level: int) -> dict:
        return {"campaign": self.spec.name, "fingerprint": self.spec.fingerprint, "batch": self.batch,
                "level": level}

    def post(self, step: str, body: dict) -> requests.Response:
        "POST /v1/peer/poplar1/levels[/step] with the peer token"
        path = "/v1/peer/poplar1/levels" + (f"/{step}" if step else "")
        return requests.post(self.helper_url + path, json=body, timeout=120,
                             headers={"Authorization": f"Bearer {PEER_TOKEN}"})

    def init_body(self, level: int, prefixes: list[str], chunk: int, chunks: int, rows: list[Row]) -> dict:
        "A chunk's first request; the leader's first shares of its reports prepared meanwhile"
        leader = Poplar1Aggregator(self.spec, self.verify_key, 0, lambda report_id, public, share: share)
        agg_param = (level, tuple(bits_prefix(p) for p in prefixes))
        first = leader.first_shares(self.batch, agg_param, [(r, p, s) for r, p, s, _ in rows])
        self._chunks[(level, chunk)] = (leader, first, {})
        return {**self._key(level), "prefixes": prefixes, "chunk": chunk, "chunks": chunks,
                "reports": [{"report_id": str(uuid.UUID(bytes=r)), "public_share": b64url(p), "helper_share": h}
                            for r, p, _, h in rows]}

    def init(self, level: int, prefixes: list[str], chunk: int, chunks: int, rows: list[Row]) -> requests.Response:
        answer = self.post("", self.init_body(level, prefixes, chunk, chunks, rows))
        if answer.ok:
            self.took(level, chunk, answer.json())
        return answer

    def took(self, level: int, chunk: int, answer: dict) -> None:
        "The helper's first shares of a chunk, kept for the leader's second round"
        leader, _, theirs = self._chunks[(level, chunk)]
        theirs.update(decode_shares(field_of(leader, level), answer["reports"]))

    def sketch_body(self, level: int, chunk: int) -> dict:
        leader, first, _ = self._chunks[(level, chunk)]
        return {**self._key(level), "chunk": chunk, "reports": encode_shares(field_of(leader, level), first)}

    def aggregate_body(self, level: int, chunk: int) -> dict:
        leader, _, theirs = self._chunks[(level, chunk)]
        second = leader.round_two(theirs)
        return {**self._key(level), "chunk": chunk, "reports": encode_shares(field_of(leader, level), second)}

    def finish_body(self, level: int) -> dict:
        return self._key(level)

    def whole_chunk(self, level: int, prefixes: list[str], chunk: int, chunks: int, rows: list[Row]) -> dict:
        "A chunk through its three requests; the helper's answer to the last (its accepted reports)"
        for answer in (self.init(level, prefixes, chunk, chunks, rows), self.post("sketch", self.sketch_body(
                level, chunk)), self.post("aggregate", self.aggregate_body(level, chunk))):
            assert answer.status_code == 200, answer.text
        return answer.json()
