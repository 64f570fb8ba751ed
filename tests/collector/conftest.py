"""Fixtures: a fresh collector app over a temporary database per test, keys, and a campaign.

The database is a SQLite file unless a test is parametrised with ``backend="postgresql"`` (``on_both_backends``
in helpers): then it is the session's PostgreSQL database (one throwaway cluster per session), emptied first.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import client_sdk
from collector import create_app
from collector.storage import open_storage

from .helpers import CATEGORICAL, bearer
from .pg_cluster import PostgresCluster, ServerNotFound, empty_database


@pytest.fixture(scope="session")
def postgres_cluster() -> Any:
    "One PostgreSQL cluster for the whole session; a missing server fails the tests that need it"
    try:
        cluster = PostgresCluster()
    except ServerNotFound as exc:
        pytest.fail(str(exc))
    yield cluster
    from collector.storage.postgres import close_pools

    close_pools()
    cluster.stop()


@pytest.fixture(scope="session")
def postgres_database(postgres_cluster: PostgresCluster) -> str:
    "The URL of a migrated database of the session's cluster"
    url = postgres_cluster.create_database("tests")
    with open_storage(url) as storage:
        storage.migrate()
    return url


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture
def db_path(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    "A SQLite file (path) or an empty PostgreSQL database (URL)"
    if backend == "postgresql":
        url: str = request.getfixturevalue("postgres_database")
        empty_database(url)
        return url
    return tmp_path / "collector.db"


@pytest.fixture
def app(db_path: Path | str) -> Any:
    return create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "MAX_BODY_BYTES": 1024 * 1024,
                       "MAX_BATCH_REPORTS": 2000})


@pytest.fixture
def storage(backend: str, db_path: Path | str, tmp_path: Path) -> Iterator[Any]:
    "A migrated storage, open for the test: the file ``s.db`` in ``tmp_path``, or the session's PostgreSQL database"
    with open_storage(db_path if backend == "postgresql" else tmp_path / "s.db") as opened:
        opened.migrate()
        yield opened


@pytest.fixture
def http(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def keys(db_path: Path | str, app: Any) -> dict[str, str]:
    with open_storage(db_path) as storage:
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    return {"admin": admin, "ingest": ingest}


@pytest.fixture
def campaign(http: Any, keys: dict[str, str]) -> client_sdk.Spec:
    response = http.post("/v1/campaigns", json=CATEGORICAL, headers=bearer(keys["admin"]))
    assert response.status_code == 201, response.json
    return client_sdk.load_spec(response.json["spec"])


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    "Tokens come back in 10-second steps: keep the test inside one window whenever it runs"
    fake = types.SimpleNamespace(time=lambda: 1_700_000_001.5)
    monkeypatch.setattr("collector.auth.time", fake)
    monkeypatch.setattr("collector.api.reports.time", fake)
