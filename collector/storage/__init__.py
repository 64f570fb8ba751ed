"""The one package that touches the collector's database: campaigns, reports, aggregates, API keys, rate buckets.

Backend choice: one SQLite file through the standard ``sqlite3`` driver (schema in plain SQL, the hot insert
path; sqlite-utils only for ``Storage.db``, loaded on first use, for tests and audits), opened with

* ``journal_mode=WAL``: readers (estimates, health checks) never block the writer and vice versa;
* ``synchronous=FULL``: the WAL is fsynced at every commit, so a report acknowledged with 200 survives a crash
  of the process or the machine (NORMAL would only survive a process crash);
* ``busy_timeout``: writers from several gunicorn workers queue for the write lock instead of failing;
* ``BEGIN IMMEDIATE`` for every write transaction, so the lock is taken up front and a transaction never has to
  be retried half-way through.

Everything the API and the CLI need goes through a storage object (:func:`open_storage`): :class:`StorageBase`
holds what every backend shares (campaigns, the insert flow, aggregates, keys, rate buckets, in SQL both accept),
:class:`Storage` is SQLite's connection, transactions, schema and report insert, and ``collector.storage.postgres``
the same for PostgreSQL (a ``postgresql://`` URL).

Modules: ``models`` (the records handed out), ``rows`` (values <-> stored columns), ``base`` (:class:`StorageBase`,
rate buckets, keys), ``faults`` (errors that mean the storage failed), ``sqlite`` with ``sqlite_schema``,
``group_commit``, ``day_filter`` and ``filter_builds`` (the SQLite backend), ``postgres`` (only for a PostgreSQL URL),
``day_scrub`` (a closed day rewritten on disk, both backends), ``kind_migrations`` (the tables each campaign kind
registers for itself, applied by both backends), ``file_modes`` (the database file readable by its owner only).
Errors live in :mod:`collector.errors` and are re-exported here.  A tuning constant is read in the module
that defines it: patch ``collector.storage.base.REBUILD_CHUNK`` or ``collector.storage.sqlite.CHECKPOINT_REPORTS``,
not the re-exported name.

Stored per report: its UTC day, its 16 random id bytes, a small version id (``report_versions``: campaign and
version once per version, not per row) and the payload in a compact form
(``report_codec``).  Nothing else: no rowid, no time of day.  The table is ``WITHOUT ROWID`` and clustered on
(day, report_id), so within a day rows are read in the order of their random ids (a device's batch across
campaigns does not land on consecutive rows), and an insert only touches the pages of today's partition, however
many past days are stored.  Where a cell lands in its page still follows arrival while the day is open: a closed
day is rewritten in id order (``day_scrub``).
"""


from __future__ import annotations

from pathlib import Path

from ..config import DEFAULTS
from ..errors import (
    CampaignClosed,
    CampaignNotFound,
    DatabaseCorrupt,
    DatabaseLocked,
    DiskFull,
    RateLimited,
    StorageError,
    StorageUnavailable,
    VersionConflict,
)
from .base import DEDUP_DAYS, REBUILD_CHUNK, StorageBase, hash_key
from .faults import storage_fault
from .file_modes import create_private, restrict_database
from .filter_builds import wait_for_filter_builds
from .kind_migrations import KindMigrations, register_migrations, unregister_migrations
from .models import KEY_PREFIX, RATE_WINDOW_SECONDS, ROLES, ApiKey, CampaignVersion, InsertResult, RateRule, ReportGroup
from .rows import merged_counts, payload_text
from .sqlite import Storage
from .sqlite_schema import LATEST_SCHEMA_VERSION, SCHEMA_VERSION

__all__ = [
    "DEDUP_DAYS", "KEY_PREFIX", "LATEST_SCHEMA_VERSION", "RATE_WINDOW_SECONDS", "REBUILD_CHUNK", "ROLES",
    "SCHEMA_VERSION", "ApiKey", "CampaignClosed", "CampaignNotFound", "CampaignVersion", "DatabaseCorrupt",
    "DatabaseLocked", "DiskFull", "InsertResult", "KindMigrations", "RateLimited", "RateRule", "ReportGroup",
    "Storage", "StorageBase", "StorageError", "StorageUnavailable", "VersionConflict", "create_private", "hash_key",
    "is_database_url", "merged_counts", "open_storage", "payload_text", "register_migrations", "restrict_database",
    "storage_fault", "unregister_migrations", "wait_for_filter_builds",
]


def open_storage(target: str | Path, *, busy_timeout_ms: int = DEFAULTS["BUSY_TIMEOUT_MS"]) -> StorageBase:
    "The storage named by ``target``: a ``postgresql://`` URL (PostgreSQL backend) or the path of a SQLite file"
    if is_database_url(target):
        # imported here: the PostgreSQL store (psycopg, +495 ms) only for a postgresql:// database
        from .postgres import PostgresStorage  # psycopg loads only when a PostgreSQL database is used

        return PostgresStorage(str(target), busy_timeout_ms=busy_timeout_ms)
    return Storage(target, busy_timeout_ms=busy_timeout_ms)


def is_database_url(target: str | Path) -> bool:
    "True for a PostgreSQL connection URL"
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))
