"""Scrubbing a closed day: its reports rewritten into fresh pages, so the files no longer say in which order they came.

A B-tree clustered on the random report id orders query results, not the bytes on disk.  While a day is open,
SQLite places each new cell in free space of its leaf page (a page fills from its end: the offsets of a page's cells
follow their arrival), and the WAL keeps each commit's pages in commit order; PostgreSQL appends each row to the
heap (``ctid`` order, and so ``SELECT *`` and ``pg_dump``, is arrival order).  Scrubbing a closed day undoes that:

* SQLite (:func:`scrub_sqlite_day`): with ``secure_delete`` on (deleted cells and freed pages are overwritten
  with zeros), the day's rows are deleted and inserted again in report-id order, ``SCRUB_CHUNK`` reports per
  transaction: each chunk is one transaction, so a crash or a kill loses nothing (the chunk is stored before or
  after, whole).  Then :func:`truncate_wal` checkpoints the WAL and truncates it to zero bytes, so no frame of the
  day's earlier page images is left.  ``Storage._build_day_filters`` scrubs a day as it builds its filter.
* PostgreSQL (``PostgresStorage.scrub_closed_days``): ``CLUSTER`` on the primary key writes the table into a new file
  in (day, report id) order, with its indexes, and drops the old one (dead rows with it), in one transaction.

A distributed campaign's batch is scrubbed once collected (``DistStore.scrub_batch``, with
:func:`rewrite_in_key_order`): on the leader and the helper its per-report rows, without their job ids.

Report ids are random (version 4 UUIDs), so an order by id is unrelated to the order of arrival.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager

SCRUB_CHUNK = 20_000  # reports rewritten per transaction: the writer lock is held for one chunk at a time
TRUNCATE_TRIES = 5  # tries of a checkpoint that readers keep from finishing
TRUNCATE_WAIT_MS = 500  # how long each try waits for readers (and so writers for it) at most


def scrub_sqlite_day(transaction: Callable[[], AbstractContextManager[sqlite3.Connection]], day_number: int,
                    still_wanted: Callable[[sqlite3.Connection], bool]) -> int | None:
    """Rewrite the reports of ``day_number`` in report-id order (:func:`rewrite_in_key_order`); how many, or None
    once ``still_wanted(conn)``, asked in each transaction, says no"""
    return rewrite_in_key_order(transaction, "reports", REPORT_COLUMNS, "day = ?", (day_number,),
                                still_wanted=still_wanted)


REPORT_COLUMNS = ("day", "report_id", "version_id", "payload")


def rewrite_in_key_order(transaction: Callable[[], AbstractContextManager[sqlite3.Connection]], table: str,
                         columns: Sequence[str], where: str, params: Sequence[object], *, key: str = "report_id",
                         replace: Mapping[str, object] | None = None,
                         still_wanted: Callable[[sqlite3.Connection], bool] | None = None) -> int | None:
    """Delete the rows of ``table`` matching ``where`` and insert them again in ``key`` order (its cells and index
    entries land in fresh space in that order; the old ones are zeroed), SCRUB_CHUNK rows per transaction, each
    column of ``replace`` set to its value; how many rows.  Stops (None) once ``still_wanted(conn)``, asked in
    each transaction, says no."""
    names, marks, at = ", ".join(columns), ", ".join("?" * len(columns)), columns.index(key)
    fixed = {columns.index(column): value for column, value in (replace or {}).items()}
    after: object = b""
    rewritten = 0
    while True:
        with transaction() as conn:
            if still_wanted is not None and not still_wanted(conn):
                return None
            rows = conn.execute(f"SELECT {names} FROM {table} WHERE {where} AND {key} > ? ORDER BY {key} LIMIT ?",
                                (*params, after, SCRUB_CHUNK)).fetchall()
            if not rows:
                return rewritten
            with _secure_delete(conn):
                conn.execute(f"DELETE FROM {table} WHERE {where} AND {key} >= ? AND {key} <= ?",
                             (*params, rows[0][at], rows[-1][at]))
                conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                                 ([fixed.get(i, value) for i, value in enumerate(row)] for row in rows))
            after, rewritten = rows[-1][at], rewritten + len(rows)


def rewrite_table(transaction: Callable[[], AbstractContextManager[sqlite3.Connection]], table: str) -> None:
    """A table copied into a new one of the same definition, the old one dropped with secure_delete on (its pages
    zeroed as a whole) and the copy renamed to its name, in one transaction: no older version of a row, left in a
    page's free space by an update, survives.  For ``aggregates``: each insert request rewrote its day's row, and
    the differences between successive versions would be the requests' reports in order of arrival."""
    copy = f"{table}_scrubbed"
    with transaction() as conn, _secure_delete(conn):
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()[0]
        conn.execute(re.sub(r"^(CREATE TABLE\s+(IF NOT EXISTS\s+)?)[\"\[`]?\w+[\"\]`]?", rf"\g<1>{copy}", sql))
        conn.execute(f"INSERT INTO {copy} SELECT * FROM {table}")
        conn.execute(f"DROP TABLE {table}")
        conn.execute(f"ALTER TABLE {copy} RENAME TO {table}")


def delete_securely(transaction: Callable[[], AbstractContextManager[sqlite3.Connection]], sql: str,
                    params: Sequence[object]) -> None:
    "One DELETE in a transaction of its own, the deleted cells overwritten with zeros"
    with transaction() as conn, _secure_delete(conn):
        conn.execute(sql, params)


@contextmanager
def _secure_delete(conn: sqlite3.Connection) -> Iterator[None]:
    "secure_delete on for the block (this connection only), then back to what it was"
    before = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = 1")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(before)}")


def truncate_wal(conn: sqlite3.Connection, lock: Callable[[], AbstractContextManager[object]]) -> bool:
    """Copy the WAL into the database file and truncate it to zero bytes, under the writer lock (``lock``: writers
    queue on it meanwhile); True once done.  A reader still on an older snapshot keeps the checkpoint from
    finishing: tried TRUNCATE_TRIES times, 1, 2, 3 ... seconds apart, each waiting TRUNCATE_WAIT_MS for them (the
    writers wait as long)."""
    before = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute(f"PRAGMA busy_timeout = {TRUNCATE_WAIT_MS}")
    try:
        for attempt in range(TRUNCATE_TRIES):
            if attempt:
                time.sleep(attempt)
            with lock():
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return True
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(before)}")
