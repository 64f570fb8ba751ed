"""The SQLite schema: its tables in plain SQL and the migration steps, each with its ``PRAGMA user_version``
(``Storage.migrate`` applies a step, in one transaction, to a file at an earlier version)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .kind_migrations import KIND_VERSIONS_TABLE

# PRAGMA user_version of the current report schema: 2 = WITHOUT ROWID reports clustered on (day, report_id)
SCHEMA_VERSION = 2  # the reports step; LIFETIMES_SCHEMA_VERSION below is the latest
# 3 = campaigns.closed_day, api_keys.expires_day and api_keys.last_used_day (days only, never times)
LIFETIMES_SCHEMA_VERSION = 3
# 4 = day_filters: a Bloom filter over the report ids of each closed day (collector.storage.day_filter)
FILTERS_SCHEMA_VERSION = 4
# 5 = api_keys.is_public and api_keys.campaigns (the campaigns a scoped key may read and report to)
KEY_SCOPES_SCHEMA_VERSION = 5
# 6 = a file at this version has the prio3 kind's tables, made by that kind's migration 1
# (collector.distributed.schema), which leaves them as they are: the step itself adds nothing
PRIO3_TABLES_SCHEMA_VERSION = 6
# 7 = kind_migrations: the last migration of each campaign kind's own tables (collector.storage.kind_migrations)
KIND_TABLES_SCHEMA_VERSION = 7
LATEST_SCHEMA_VERSION = KIND_TABLES_SCHEMA_VERSION  # what migrate() leaves
DAY_FILTERS_TABLE = """CREATE TABLE IF NOT EXISTS day_filters (
    day INTEGER PRIMARY KEY,
    reports INTEGER NOT NULL,
    token BLOB NOT NULL,
    bits BLOB
)"""
REPORTS_TABLE = """CREATE TABLE IF NOT EXISTS reports (
    day INTEGER NOT NULL,
    report_id BLOB NOT NULL,
    version_id INTEGER NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (day, report_id)
) WITHOUT ROWID"""
# The other tables, as sqlite-utils first created them (plain SQL: opening a database imports no sqlite-utils)
BASE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS campaigns (name TEXT, version INTEGER, fingerprint TEXT NOT NULL, spec TEXT NOT NULL,
    created_day TEXT, PRIMARY KEY (name, version))""",
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_campaigns_name_fingerprint ON campaigns (name, fingerprint)",
    """CREATE TABLE IF NOT EXISTS aggregates (campaign TEXT, version INTEGER, day TEXT, n INTEGER NOT NULL,
    counts TEXT NOT NULL, PRIMARY KEY (campaign, version, day))""",
    """CREATE TABLE IF NOT EXISTS api_keys (key_hash TEXT PRIMARY KEY, key_id TEXT, role TEXT NOT NULL, label TEXT,
    created_day TEXT)""",
    "CREATE TABLE IF NOT EXISTS rate_buckets (key_hash TEXT PRIMARY KEY, tokens REAL, updated REAL)",
)
VERSIONS_TABLE = """CREATE TABLE IF NOT EXISTS report_versions (
    id INTEGER PRIMARY KEY,
    campaign TEXT NOT NULL,
    version INTEGER NOT NULL,
    UNIQUE (campaign, version)
)"""



def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def add_lifetimes(conn: sqlite3.Connection) -> None:
    "Version 3: the days a campaign was closed, a key expires and a key was last used (NULL: never)"
    for table, column in (("campaigns", "closed_day"), ("api_keys", "expires_day"), ("api_keys", "last_used_day")):
        if column not in _columns(conn, table):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


def add_day_filters(conn: sqlite3.Connection) -> None:
    "Version 4: the day_filters table (empty: a day's filter is built once the day is closed)"
    conn.execute(DAY_FILTERS_TABLE)


def add_key_scopes(conn: sqlite3.Connection) -> None:
    "Version 5: public keys and their campaign scope (existing keys: not public, every campaign)"
    columns = _columns(conn, "api_keys")
    if "is_public" not in columns:
        conn.execute("ALTER TABLE api_keys ADD COLUMN is_public INTEGER NOT NULL DEFAULT 0")
    if "campaigns" not in columns:
        conn.execute("ALTER TABLE api_keys ADD COLUMN campaigns TEXT")


def add_nothing(conn: sqlite3.Connection) -> None:
    "Version 6: nothing (the prio3 tables are that kind's migrations)"


def add_kind_versions(conn: sqlite3.Connection) -> None:
    """Version 7: the kind_migrations table (the kinds' migrations are applied after the collector's own steps).  One
    that a file below this version has is no record of them: its kinds' migrations run again (they leave tables)"""
    conn.execute("DROP TABLE IF EXISTS kind_migrations")
    conn.execute(KIND_VERSIONS_TABLE)


# The steps after the reports step (Storage._migrate_reports, which copies rows), in order
LATER_STEPS: tuple[tuple[int, Callable[[sqlite3.Connection], object]], ...] = (
    (LIFETIMES_SCHEMA_VERSION, add_lifetimes), (FILTERS_SCHEMA_VERSION, add_day_filters),
    (KEY_SCOPES_SCHEMA_VERSION, add_key_scopes), (PRIO3_TABLES_SCHEMA_VERSION, add_nothing),
    (KIND_TABLES_SCHEMA_VERSION, add_kind_versions),
)
