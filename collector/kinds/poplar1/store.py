"""The poplar1 kind's own tables, in each aggregator's own collector database (SQLite or PostgreSQL), and every
statement on them.  The campaigns, HPKE keys, uploads and releases are the distributed tables'
(``collector.distributed.store``: ``dist_campaigns``, ``dist_hpke_keys``, ``dist_reports``, ``dist_releases``).

* ``poplar1_levels``        per batch and level, on both aggregators: the aggregation parameter this aggregator
                            prepared (its candidate prefixes), the reports' count, the digest of the request it was
                            recorded for (the leader's level, the helper's prefixes and chunk count: the same
                            request again resumes the level, a crash after the record blocks nothing), the state
                            (the leader's ``prepared``; the helper's ``open``, then ``finished``), the helper's
                            number of chunks and its finish answer with the request's digest (the same request
                            again gets it unchanged), and this aggregator's noisy aggregate share with the checksum
                            of the reports it adds up (drawn once: a level finished again gets it unchanged, never
                            a second noise draw).  Its ``prep_state`` stays empty: the helper's chunks hold theirs.
                            The rules (``rules.check_level``) read this history.
* ``poplar1_level_reports`` per batch and level: the id of every report prepared at that level.
* ``poplar1_chunks``        the helper's: per batch, level and chunk position, the digest of the chunk request it
                            was recorded for, its reports' count, its state (``recorded``, then ``prepared``,
                            ``sketched``, ``aggregated``), its preparation state while it runs, its answers with
                            their requests' digests, and the (noiseless, never released) sum of its accepted reports'
                            output shares.  The helper's level row holds the level's number of chunks, its state
                            (``open``, then ``finished``), its finish answer and its noisy share.

A level row (or a chunk) is inserted in the transaction that checks the history, under the batch's lock
(``lock_levels``), so two requests for one batch serialize and a refused request records nothing.  A chunk's state
moves by compare-and-set (``advance_chunk``: the update names the state it moves from), so of two identical requests
racing, in one process or several on one database, one moves it and the other answers what that one stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...distributed.store import BatchKey, DistStore
from ...storage.kind_migrations import register_migrations
from .rules import AggParam, RecordedLevel

KIND = "poplar1"
_TABLES = (
    """CREATE TABLE IF NOT EXISTS poplar1_levels (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, level INTEGER NOT NULL, prefixes TEXT NOT NULL, report_count INTEGER NOT NULL,
    state TEXT NOT NULL, prep_state TEXT, answer TEXT, PRIMARY KEY (campaign, fingerprint, batch, level))""",
    """CREATE TABLE IF NOT EXISTS poplar1_level_reports (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, level INTEGER NOT NULL, report_id {blob} NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch, level, report_id))""",
)
_BLOB = {"sqlite": "BLOB", "postgresql": "bytea"}


def create_tables(conn: Any, dialect: str) -> None:
    "Migration 1: both tables"
    for statement in _TABLES:
        conn.execute(statement.format(blob=_BLOB[dialect]))


def _columns(conn: Any, dialect: str) -> set[str]:
    "The columns poplar1_levels has"
    if dialect == "sqlite":
        return {str(row[1]) for row in conn.execute("PRAGMA table_info(poplar1_levels)")}
    return {str(row[0]) for row in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'poplar1_levels'")}


def add_resume_columns(conn: Any, dialect: str) -> None:
    "Migration 2: the level request's digest and the aggregator's noisy share, per level"
    present = _columns(conn, dialect)
    for column in ("request_digest", "noisy_share"):
        if column not in present:  # a database whose kind versions were reset keeps the columns it has
            conn.execute(f"ALTER TABLE poplar1_levels ADD COLUMN {column} TEXT")


def add_chunks(conn: Any, dialect: str) -> None:
    "Migration 3: the helper's chunks, and each level's number of chunks"
    if "chunks" not in _columns(conn, dialect):
        conn.execute("ALTER TABLE poplar1_levels ADD COLUMN chunks INTEGER")
    conn.execute(_CHUNKS)


_CHUNKS = """CREATE TABLE IF NOT EXISTS poplar1_chunks (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, level INTEGER NOT NULL, chunk INTEGER NOT NULL, request_digest TEXT NOT NULL,
    report_count INTEGER NOT NULL, state TEXT NOT NULL, prep_state TEXT, answers TEXT, chunk_sum TEXT,
    PRIMARY KEY (campaign, fingerprint, batch, level, chunk))"""
MIGRATIONS = register_migrations(KIND, ((1, create_tables), (2, add_resume_columns), (3, add_chunks)))
CHUNK_STATES = ("recorded", "prepared", "sketched", "aggregated")  # a chunk's states on the helper, in order


@dataclass(frozen=True)
class ChunkRow:
    "One chunk of a level as the helper stored it"

    state: str
    request_digest: str
    report_count: int
    prep_state: dict | None
    answers: dict
    chunk_sum: list[int] | None


def prefix_bits(prefix: Sequence[bool]) -> str:
    return "".join("1" if bit else "0" for bit in prefix)


def bits_prefix(text: str) -> tuple[bool, ...]:
    return tuple(char == "1" for char in text)


class Poplar1Store(DistStore):
    "The distributed tables and the poplar1 kind's own, over one collector storage"

    def history(self, key: BatchKey) -> list[AggParam]:
        "The aggregation parameters this aggregator prepared for the batch, by level"
        rows = self._all("SELECT level, prefixes FROM poplar1_levels WHERE campaign = ? AND fingerprint = ? AND "
                         "batch = ? ORDER BY level", key)
        return [(int(r[0]), tuple(bits_prefix(p) for p in json.loads(r[1]))) for r in rows]

    def level_digests(self, key: BatchKey) -> dict[int, str | None]:
        "The digest of the request each recorded level of the batch was recorded for, by level"
        rows = self._all("SELECT level, request_digest FROM poplar1_levels WHERE campaign = ? AND fingerprint = ? AND "
                         "batch = ?", key)
        return {int(r[0]): r[1] for r in rows}

    def add_level(self, key: BatchKey, agg_param: AggParam, report_ids: Sequence[bytes], request_digest: str) -> bool:
        "Record a level as prepared with its reports; False if this level was recorded first (by a concurrent one)"
        level, prefixes = agg_param
        added = self.storage._run(
            "INSERT INTO poplar1_levels (campaign, fingerprint, batch, level, prefixes, report_count, state, "
            "request_digest) VALUES (?, ?, ?, ?, ?, ?, 'prepared', ?) ON CONFLICT DO NOTHING",
            (*key, level, json.dumps([prefix_bits(p) for p in prefixes]), len(report_ids), request_digest)) > 0
        if added:
            self.storage._run_many("INSERT INTO poplar1_level_reports (campaign, fingerprint, batch, level, "
                                   "report_id) VALUES (?, ?, ?, ?, ?)", [(*key, level, r) for r in report_ids])
        return added

    def level_reports(self, key: BatchKey, level: int) -> set[bytes]:
        rows = self._all("SELECT report_id FROM poplar1_level_reports WHERE campaign = ? AND fingerprint = ? AND "
                         "batch = ? AND level = ?", (*key, level))
        return {bytes(r[0]) for r in rows}

    def level_row(self, key: BatchKey, level: int) -> tuple[str, dict | None, dict | None] | None:
        "(state, preparation state, stored answer) of a level, or None"
        row = self._one("SELECT state, prep_state, answer FROM poplar1_levels WHERE campaign = ? AND fingerprint = ? "
                        f"AND batch = ? AND level = ?{self._for_update}", (*key, level))
        if row is None:
            return None
        return str(row[0]), json.loads(row[1]) if row[1] else None, json.loads(row[2]) if row[2] else None

    def set_level(self, key: BatchKey, level: int, state: str, prep_state: dict | None,
                  answer: dict | None = None) -> None:
        self.storage._run("UPDATE poplar1_levels SET state = ?, prep_state = ?, answer = ? WHERE campaign = ? AND "
                          "fingerprint = ? AND batch = ? AND level = ?",
                          (state, json.dumps(prep_state) if prep_state is not None else None,
                           json.dumps(answer) if answer is not None else None, *key, level))

    def noisy_share(self, key: BatchKey, level: int) -> tuple[str, list[int]] | None:
        "(checksum of the reports, noisy aggregate share) this aggregator finished the level with, or None"
        row = self._one("SELECT noisy_share FROM poplar1_levels WHERE campaign = ? AND fingerprint = ? AND batch = ? "
                        f"AND level = ?{self._for_update}", (*key, level))
        if row is None or row[0] is None:
            return None
        stored = json.loads(row[0])
        return str(stored["checksum"]), [int(x) for x in stored["share"]]

    def put_noisy_share(self, key: BatchKey, level: int, report_checksum: str, share: Sequence[int]) -> None:
        self.storage._run("UPDATE poplar1_levels SET noisy_share = ? WHERE campaign = ? AND fingerprint = ? AND "
                          "batch = ? AND level = ?",
                          (json.dumps({"checksum": report_checksum, "share": list(share)}), *key, level))

    def lock_levels(self, key: BatchKey) -> None:
        "Serialize the transactions that record a level or a chunk of the batch (SQLite's write lock does already)"
        self._lock_name("poplar1-levels " + json.dumps(key))

    # -- helper: a level's chunks ---------------------------------------------------------------------------------
    def recorded_level(self, key: BatchKey, level: int) -> RecordedLevel | None:
        "The helper's record of a level from its first chunk (locked to the end of the transaction), or None"
        row = self._one("SELECT prefixes, chunks FROM poplar1_levels WHERE campaign = ? AND fingerprint = ? AND "
                        f"batch = ? AND level = ?{self._for_update}", (*key, level))
        if row is None:
            return None
        return RecordedLevel((level, tuple(bits_prefix(p) for p in json.loads(row[0]))), int(row[1] or 1))

    def open_level(self, key: BatchKey, agg_param: AggParam, chunks: int, request_digest: str) -> None:
        "Record a level declared by its first chunk (the caller holds the batch's lock and found it unrecorded)"
        level, prefixes = agg_param
        self.storage._run(
            "INSERT INTO poplar1_levels (campaign, fingerprint, batch, level, prefixes, report_count, state, "
            "request_digest, chunks) VALUES (?, ?, ?, ?, ?, 0, 'open', ?, ?)",
            (*key, level, json.dumps([prefix_bits(p) for p in prefixes]), request_digest, chunks))

    def add_chunk(self, key: BatchKey, level: int, chunk: int, request_digest: str,
                  report_ids: Sequence[bytes]) -> None:
        "Record a chunk of a recorded level with its reports (the caller checked none is in the level)"
        self.storage._run("INSERT INTO poplar1_chunks (campaign, fingerprint, batch, level, chunk, request_digest, "
                          "report_count, state) VALUES (?, ?, ?, ?, ?, ?, ?, 'recorded')",
                          (*key, level, chunk, request_digest, len(report_ids)))
        self.storage._run_many("INSERT INTO poplar1_level_reports (campaign, fingerprint, batch, level, report_id) "
                               "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", [(*key, level, r) for r in report_ids])
        self.storage._run("UPDATE poplar1_levels SET report_count = report_count + ? WHERE campaign = ? AND "
                          "fingerprint = ? AND batch = ? AND level = ?", (len(report_ids), *key, level))

    def in_level(self, key: BatchKey, level: int, report_ids: Sequence[bytes]) -> set[bytes]:
        "Those of ``report_ids`` recorded at the level already"
        return self._in_chunks("SELECT report_id FROM poplar1_level_reports WHERE campaign = ? AND fingerprint = ? "
                               "AND batch = ? AND level = ? AND report_id IN ({marks})", report_ids, (*key, level))

    def chunk_rows(self, key: BatchKey, level: int, chunk: int | None = None, *,
                   prep_state: bool = False) -> dict[int, ChunkRow]:
        """The level's chunks by position (or the one at ``chunk``); their preparation states (the largest column,
        None otherwise) only if ``prep_state``"""
        where, params = ("", (*key, level)) if chunk is None else (" AND chunk = ?", (*key, level, chunk))
        state_column = "prep_state" if prep_state else "NULL"
        rows = self._all(f"SELECT chunk, state, request_digest, report_count, {state_column}, answers, chunk_sum FROM "
                         f"poplar1_chunks WHERE campaign = ? AND fingerprint = ? AND batch = ? AND level = ?{where}",
                         params)
        return {int(r[0]): ChunkRow(str(r[1]), str(r[2]), int(r[3]), json.loads(r[4]) if r[4] else None,
                                    json.loads(r[5]) if r[5] else {},
                                    [int(x) for x in json.loads(r[6])] if r[6] else None) for r in rows}

    def advance_chunk(self, key: BatchKey, level: int, chunk: int, moved_from: str, row: ChunkRow) -> bool:
        "Store ``row`` if the chunk is still at ``moved_from`` (compare-and-set); False if another request moved it"
        return self.storage._run(
            "UPDATE poplar1_chunks SET state = ?, prep_state = ?, answers = ?, chunk_sum = ? WHERE campaign = ? AND "
            "fingerprint = ? AND batch = ? AND level = ? AND chunk = ? AND state = ?",
            (row.state, json.dumps(row.prep_state) if row.prep_state is not None else None, json.dumps(row.answers),
             json.dumps(row.chunk_sum) if row.chunk_sum is not None else None, *key, level, chunk,
             moved_from)) > 0

    # -- leader: the batch's uploads ------------------------------------------------------------------------------
    def batch_reports(self, key: BatchKey) -> list[tuple[bytes, bytes, bytes, dict]]:
        "(id, public share, leader's opened share, helper's sealed share) of every report uploaded to the batch"
        rows = self._all("SELECT report_id, public_share, leader_share, helper_share FROM dist_reports WHERE "
                         "campaign = ? AND fingerprint = ? AND batch = ? ORDER BY report_id", key)
        return [(bytes(r[0]), bytes(r[1]), bytes(r[2]), json.loads(r[3])) for r in rows]
