"""The campaign kinds' own tables: each kind registers its migrations here (:func:`register_migrations`, called
from the kind's own module), and both backends apply them after their own steps, in one transaction per pass.

The storage layer imports no kind.  A kind's migrations are numbered from 1 by the kind; the table
``kind_migrations`` holds the last one each kind applied, so a kind registered after a database was made gets its
tables at the next ``migrate()``.  A kind whose tables may predate its own numbering (made by an earlier
collector-wide step) writes its first migration so that it leaves tables already in place as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# (the transaction's connection: sqlite3 or psycopg, the dialect "sqlite" or "postgresql")
MigrationStep = Callable[[Any, str], object]
KIND_VERSIONS_TABLE = "CREATE TABLE IF NOT EXISTS kind_migrations (kind TEXT PRIMARY KEY, version INTEGER NOT NULL)"
_MARKS = {"sqlite": "?", "postgresql": "%s"}


@dataclass(frozen=True)
class KindMigrations:
    "One kind's migrations: ``steps`` are (version, step), versions from 1, increasing"

    kind: str
    steps: tuple[tuple[int, MigrationStep], ...]

    @property
    def latest(self) -> int:
        return self.steps[-1][0] if self.steps else 0


_REGISTERED: dict[str, KindMigrations] = {}


def register_migrations(kind: str, steps: Sequence[tuple[int, MigrationStep]]) -> KindMigrations:
    """Register the migrations of ``kind``'s own tables (the same ones again, or with more steps after them: the
    longer list); ValueError for versions not numbered from 1 or steps unlike those registered under the name"""
    versions = [version for version, _ in steps]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"the migrations of kind {kind!r} must be numbered 1, 2, ...; got {versions}")
    migrations = KindMigrations(kind, tuple(steps))
    known = _REGISTERED.get(kind)
    if known is not None and known.steps != migrations.steps[:len(known.steps)]:
        raise ValueError(f"kind {kind!r} has registered other migrations already")
    _REGISTERED[kind] = migrations
    return migrations


def unregister_migrations(kind: str) -> None:
    "Forget ``kind``'s migrations (its tables stay in the databases that have them)"
    _REGISTERED.pop(kind, None)


def registered_migrations() -> tuple[KindMigrations, ...]:
    return tuple(_REGISTERED[name] for name in sorted(_REGISTERED))


def applied_versions(conn: Any) -> dict[str, int]:
    "The last migration of each kind applied to the database of ``conn`` (which has the kind_migrations table)"
    return {str(kind): int(version) for kind, version in conn.execute("SELECT kind, version FROM kind_migrations")}


def pending(applied: dict[str, int]) -> bool:
    "Whether a registered kind has a migration not in ``applied``"
    return any(migrations.latest > applied.get(migrations.kind, 0) for migrations in _REGISTERED.values())


def apply_kind_migrations(conn: Any, dialect: str) -> None:
    "Apply every registered kind's migrations not yet applied, inside the caller's transaction (under its lock)"
    conn.execute(KIND_VERSIONS_TABLE)
    applied = applied_versions(conn)
    mark = _MARKS[dialect]
    for migrations in registered_migrations():
        done = applied.get(migrations.kind, 0)
        for version, step in migrations.steps:
            if version > done:
                step(conn, dialect)
        if migrations.latest > done:
            conn.execute(f"DELETE FROM kind_migrations WHERE kind = {mark}", (migrations.kind,))
            conn.execute(f"INSERT INTO kind_migrations (kind, version) VALUES ({mark}, {mark})",
                         (migrations.kind, migrations.latest))
