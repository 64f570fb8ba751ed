"""The SQLite schema: its tables in plain SQL and the ``PRAGMA user_version`` of each migration step."""

from __future__ import annotations

# PRAGMA user_version of the current report schema: 2 = WITHOUT ROWID reports clustered on (day, report_id)
SCHEMA_VERSION = 2  # the reports step; LIFETIMES_SCHEMA_VERSION below is the latest
# 3 = campaigns.closed_day, api_keys.expires_day and api_keys.last_used_day (days only, never times)
LIFETIMES_SCHEMA_VERSION = 3
# 4 = day_filters: a Bloom filter over the report ids of each closed day (collector.storage.day_filter)
FILTERS_SCHEMA_VERSION = 4
# 5 = api_keys.is_public and api_keys.campaigns (the campaigns a scoped key may read and report to)
KEY_SCOPES_SCHEMA_VERSION = 5
# 6 = the distributed campaigns' tables (collector.distributed.schema; files made before kept their schema version
# in a dist_meta table, dropped by this step) with the job leases of dist_jobs
DIST_SCHEMA_VERSION = 6
LATEST_SCHEMA_VERSION = DIST_SCHEMA_VERSION  # what migrate() leaves
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

