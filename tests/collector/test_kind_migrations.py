"""The kinds' own tables: registered by each kind, applied by both backends' migrate(), and databases made by the
collector before the kinds had migrations of their own (SQL dumps in tests/data/old_databases, made by that code)
open, migrate and work."""

from __future__ import annotations

import ast
import json
import pathlib
import sqlite3
import uuid

import psycopg
import pytest

import client_sdk
import estimators
from collector.distributed.store import DistStore
from collector.kinds import collector_kind  # noqa: F401  (registers every built-in kind's migrations)
from collector.release_ledger import LEDGER  # noqa: F401  (registers the release ledger's migrations)
from collector.storage import (
    LATEST_SCHEMA_VERSION,
    ReportGroup,
    open_storage,
    payload_text,
    register_migrations,
    unregister_migrations,
)
from collector.storage.kind_migrations import registered_migrations
from collector.storage.postgres import SCHEMA_VERSION as PG_SCHEMA_VERSION

from .helpers import on_both_backends

ROOT = pathlib.Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "data" / "old_databases"
DAY = "2024-01-01"


def built_in() -> list[dict]:
    "The kind_migrations rows of a database migrated now: every registered kind's last step (table_rows: in key order)"
    return [{"kind": kind.kind, "version": kind.latest} for kind in registered_migrations() if kind.kind != "sketch"]


def works_as_before(storage) -> None:
    "The old file's campaign, aggregate and HPKE key read as they were, and new reports and tables can be written"
    campaign = storage.get_campaign("grr")
    assert (campaign.version, campaign.spec.mechanism) == (1, "grr")
    assert storage.read_aggregate(campaign).n == 4 and storage.count_reports("grr") == 4
    store = DistStore(storage)
    assert [(k.config_id, k.private_key) for k in store.hpke_keys()] == [(7, b"\x01" * 32)]
    mechanism = client_sdk.mechanism_from_spec(campaign.spec, rng=client_sdk.DeterministicRandom(2))
    payloads = [mechanism.perturb("b")]
    group = ReportGroup(campaign, [str(uuid.uuid4())], payloads, [payload_text(p) for p in payloads],
                        estimators.aggregate(campaign.spec, payloads))
    storage.insert_reports([group], "2024-01-02")
    assert storage.count_reports("grr") == 5
    assert store.add_hpke_key(8, b"\x02" * 32, "2024-01-02", first=False)
    assert storage.table_rows("kind_migrations") == built_in()


def test_a_sqlite_file_of_the_collector_wide_distributed_step_opens_and_works(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript((OLD / "collector_sqlite_v6.sql").read_text())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    with open_storage(path) as storage:
        storage.migrate()
        assert storage.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_SCHEMA_VERSION
        works_as_before(storage)
        storage.migrate()  # idempotent
        assert storage.table_rows("kind_migrations") == built_in()


def test_a_postgresql_database_of_the_collector_wide_distributed_migration_opens_and_works(postgres_cluster):
    url = postgres_cluster.create_database("old")
    with psycopg.connect(url, autocommit=True) as conn:
        for line in (OLD / "collector_postgres_v5.sql").read_text().splitlines():
            if line.strip() and not line.startswith("--"):
                conn.execute(line)
        assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")] == [1, 2, 3, 4, 5]
        spec = client_sdk.load_spec({"name": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]})
        conn.execute("INSERT INTO campaigns VALUES ('grr', 1, %s, %s, %s, NULL)",
                     (spec.fingerprint, json.dumps(spec.to_dict()), DAY))
        conn.execute("INSERT INTO report_versions (campaign, version) VALUES ('grr', 1)")
        conn.execute("INSERT INTO aggregates VALUES ('grr', 1, %s, 0, 4, '[2, 1, 1]')", (DAY,))
        conn.execute("INSERT INTO dist_hpke_keys VALUES (7, %s, %s, 0)", (b"\x01" * 32, DAY))
    with open_storage(url) as storage:
        storage.migrate()
        assert storage.schema_version() == PG_SCHEMA_VERSION
        assert storage.read_aggregate(storage.get_campaign("grr")).n == 4
        store = DistStore(storage)
        assert [(k.config_id, k.private_key) for k in store.hpke_keys()] == [(7, b"\x01" * 32)]
        assert store.add_hpke_key(8, b"\x02" * 32, "2024-01-02", first=False)
        assert storage.table_rows("kind_migrations") == built_in()
        storage.migrate()  # idempotent


def _quantile_tables(conn, dialect: str) -> None:
    conn.execute("CREATE TABLE sketch_rows (campaign TEXT NOT NULL, level INTEGER NOT NULL)")


def _quantile_index(conn, dialect: str) -> None:
    conn.execute("CREATE INDEX sketch_rows_level ON sketch_rows (level)")


@on_both_backends
def test_a_kind_registered_after_the_database_was_made_gets_its_tables_at_the_next_migrate(storage):
    try:
        register_migrations("sketch", ((1, _quantile_tables),))
        storage.migrate()
        assert storage.row_count("sketch_rows") == 0
        register_migrations("sketch", ((1, _quantile_tables), (2, _quantile_index)))
        with pytest.raises(ValueError, match="other migrations"):
            register_migrations("sketch", ((1, _quantile_index),))
        storage.migrate()
        storage.migrate()  # each step once
        assert {r["kind"]: r["version"] for r in storage.table_rows("kind_migrations")} == {
            **{row["kind"]: row["version"] for row in built_in()}, "sketch": 2}
    finally:
        unregister_migrations("sketch")


def test_a_kinds_migrations_are_numbered_from_one():
    with pytest.raises(ValueError, match="numbered 1, 2"):
        register_migrations("sketch", ((2, _quantile_tables),))


def test_the_storage_layer_imports_no_kind():
    "The kinds register their tables; collector.storage never names collector.distributed or collector.kinds"
    for path in sorted((ROOT / "collector" / "storage").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = ("." * node.level) + (node.module or "")
                assert not module.startswith(("..distributed", "..kinds", "collector.distributed",
                                              "collector.kinds")), f"{path.name}: imports {module}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith(("collector.distributed", "collector.kinds"))
                               for a in node.names), path.name
