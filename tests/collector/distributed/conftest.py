"""Each test starts with the collector's clock of days where it found it (``Pair.end_day`` moves it on), and with
the aggregators' databases of its backend: two SQLite files, or (``on_both_backends``) the session's two PostgreSQL
databases (a leader's and a helper's), emptied first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from collector.storage import open_storage

from ..pg_cluster import PostgresCluster, empty_database
from . import kit


@pytest.fixture(autouse=True)
def _clock_of_days(monkeypatch: pytest.MonkeyPatch) -> None:
    from collector import auth

    monkeypatch.setattr(auth, "CLOCK_OFFSET", auth.CLOCK_OFFSET)  # restored after the test


@pytest.fixture(scope="session")
def aggregator_databases(postgres_cluster: PostgresCluster) -> tuple[str, str]:
    "The URLs of the session's leader and helper PostgreSQL databases, migrated"
    urls = (postgres_cluster.create_database("leader"), postgres_cluster.create_database("helper"))
    for url in urls:
        with open_storage(url) as storage:
            storage.migrate()
    return urls


@pytest.fixture(autouse=True)
def _aggregator_backend(backend: str, request: pytest.FixtureRequest, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    "kit.Pair and test_processes.Aggregators open the backend's databases (SQLite files in ``tmp_path`` by default)"
    if backend == "postgresql":
        urls = request.getfixturevalue("aggregator_databases")
        for url in urls:
            empty_database(url)
        kit.forget_cached_keys()  # the emptied databases get new HPKE keys and verify keys
        monkeypatch.setattr(kit, "DATABASES", urls)
    yield
    if backend == "postgresql":
        kit.forget_cached_keys()
