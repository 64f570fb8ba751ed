"""Fixtures: a fresh collector app over a temporary database per test, keys, and a campaign."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import client_sdk
from collector import create_app
from collector.storage import Storage

from .helpers import CATEGORICAL, bearer


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "collector.db"


@pytest.fixture
def app(db_path: Path) -> Any:
    return create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "MAX_BODY_BYTES": 1024 * 1024,
                       "MAX_BATCH_REPORTS": 2000})


@pytest.fixture
def http(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def keys(db_path: Path, app: Any) -> dict[str, str]:
    with Storage(db_path) as storage:
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    return {"admin": admin, "ingest": ingest}


@pytest.fixture
def campaign(http: Any, keys: dict[str, str]) -> client_sdk.Spec:
    response = http.post("/v1/campaigns", json=CATEGORICAL, headers=bearer(keys["admin"]))
    assert response.status_code == 201, response.json
    return client_sdk.load_spec(response.json["spec"])
