"""The tables of distributed campaigns, written once for both storage backends.

They are the prio3 kind's own tables: this module registers their migrations with the storage layer
(``collector.storage.register_migrations``) when it is imported (by the kind's collector side and by
``collector.distributed.store``), and each backend's ``migrate()`` applies them after its own steps.  Migration 1
leaves tables already in place as they are: databases made before the kinds had migrations of their own got these
tables from a collector-wide step (SQLite ``PRAGMA user_version`` 6, PostgreSQL migration 4).
``collector.distributed.store`` describes each table; this module holds only the DDL.
"""

from __future__ import annotations

from typing import Any

from ..storage.kind_migrations import register_migrations

KIND = "prio3"  # the kind whose tables these are (its migrations are recorded under this name)

_TABLES = (
    # seq: each key's place in the rotation order (collector.distributed.hpke_keys), newest highest
    """CREATE TABLE IF NOT EXISTS dist_hpke_keys (config_id INTEGER PRIMARY KEY, private_key {blob} NOT NULL,
    created_day TEXT NOT NULL, seq INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS dist_campaigns (name TEXT NOT NULL, fingerprint TEXT NOT NULL, role TEXT NOT NULL,
    verify_key {blob} NOT NULL, helper_url TEXT, helper_hpke_config TEXT, state TEXT NOT NULL,
    PRIMARY KEY (name, fingerprint))""",
    """CREATE TABLE IF NOT EXISTS dist_agg_shares (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, report_count INTEGER NOT NULL, share {blob} NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch))""",
    """CREATE TABLE IF NOT EXISTS dist_batches (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, batch TEXT NOT NULL,
    state TEXT NOT NULL, seed_own {blob}, seed_commitment {blob}, answer TEXT,
    PRIMARY KEY (campaign, fingerprint, batch))""",
    """CREATE TABLE IF NOT EXISTS dist_reports (report_id {blob} PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, public_share {blob} NOT NULL, leader_share {blob} NOT NULL,
    helper_share TEXT NOT NULL, job_id TEXT, state TEXT NOT NULL, error TEXT){without_rowid}""",
    "CREATE INDEX IF NOT EXISTS idx_dist_reports_batch ON dist_reports (campaign, fingerprint, batch, state)",
    "CREATE INDEX IF NOT EXISTS idx_dist_reports_job ON dist_reports (job_id)",
    "CREATE INDEX IF NOT EXISTS idx_dist_reports_pending ON dist_reports (state, job_id)",
    # lease_owner / lease_expires (POSIX seconds): the driver that claimed a pending job, and until when
    """CREATE TABLE IF NOT EXISTS dist_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT, lease_owner TEXT, lease_expires DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS dist_rejections (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch, reason))""",
    """CREATE TABLE IF NOT EXISTS dist_releases (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    version INTEGER NOT NULL, batch TEXT NOT NULL, release TEXT NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch))""",
    """CREATE TABLE IF NOT EXISTS dist_helper_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, request_digest TEXT NOT NULL, response TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dist_helper_seen (report_id {blob} PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, job_id TEXT NOT NULL, valid INTEGER NOT NULL){without_rowid}""",
    "CREATE INDEX IF NOT EXISTS idx_dist_helper_seen_batch ON dist_helper_seen (campaign, fingerprint, batch, valid)",
)
TABLES = ("dist_hpke_keys", "dist_campaigns", "dist_agg_shares", "dist_batches", "dist_reports", "dist_jobs",
          "dist_rejections", "dist_releases", "dist_helper_jobs", "dist_helper_seen")
# Columns added after the first release of these tables (SQLite files made before carry the tables without them)
ADDED_COLUMNS = (("dist_jobs", "lease_owner", "TEXT"), ("dist_jobs", "lease_expires", "DOUBLE PRECISION"),
                 ("dist_hpke_keys", "seq", "INTEGER NOT NULL DEFAULT 0"))
_TYPES = {"sqlite": {"blob": "BLOB", "without_rowid": " WITHOUT ROWID"},
          "postgresql": {"blob": "bytea", "without_rowid": ""}}


def statements(dialect: str) -> tuple[str, ...]:
    "The DDL of every distributed table and index in ``dialect`` (``sqlite`` or ``postgresql``); idempotent"
    return tuple(statement.format(**_TYPES[dialect]) for statement in _TABLES)


def create_tables(conn: Any, dialect: str) -> None:
    """Migration 1: every table and index; in SQLite, the columns a file made before them lacks, and the tables'
    own version table of then (``dist_meta``) dropped"""
    for statement in statements(dialect):
        conn.execute(statement)
    if dialect == "sqlite":
        for table, column, kind in ADDED_COLUMNS:
            if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        conn.execute("DROP TABLE IF EXISTS dist_meta")


MIGRATIONS = register_migrations(KIND, ((1, create_tables),))
