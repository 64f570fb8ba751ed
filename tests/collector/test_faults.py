"""Storage faults: a full disk, a lock held by another process, a corrupt file.

Each must answer 503 (locked, corrupt) or 507 (disk full) as problem+json with Retry-After, store nothing, and
make /readyz answer 503; reads keep working on a full disk even under rate limiting.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from collector import create_app
from collector.db import get_storage
from collector.storage import Storage

from .helpers import CATEGORICAL, bearer, make_reports, running_server, table_counts

HOLD_SQLITE_LOCK = """
import signal, sqlite3, sys
signal.alarm(30)  # never outlive a test that hangs
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""
HOLD_WRITER_FLOCK = """
import fcntl, os, signal, sys
signal.alarm(30)
fd = os.open(sys.argv[1] + ".writer-lock", os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


@contextmanager
def lock_held_by_another_process(db_path: Path, script: str) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", script, str(db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()


def assert_fault(response, status: int) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.json
    assert body["status"] == status and body["field"] == "database" and body["detail"]
    assert int(response.headers["Retry-After"]) == body["retry_after"] >= 1


def sqlite_disk_full_error(tmp_path: Path) -> sqlite3.OperationalError:
    "The error SQLite raises when it cannot grow a file (SQLITE_FULL), produced by SQLite itself"
    conn = sqlite3.connect(tmp_path / "tiny.db")
    conn.execute("PRAGMA max_page_count = 1")
    try:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("CREATE TABLE u (x)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("SQLite did not report a full database")


@pytest.fixture
def world(tmp_path: Path) -> dict:
    "A database with keys and a campaign, before any app opened it"
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        campaign, _ = storage.create_campaign(CATEGORICAL, "2024-01-01")
    return {"db": db_path, "admin": admin, "ingest": ingest, "spec": campaign.spec}


def make_app(world: dict, **config):
    return create_app({"DATABASE": str(world["db"]), "RATE_LIMIT": 0, "BUSY_TIMEOUT_MS": 300, **config})


def test_full_disk_is_507_and_stores_nothing(world):
    app = make_app(world)
    http = app.test_client()
    assert http.get("/readyz").status_code == 200
    before = table_counts(world["db"])
    with app.app_context():  # the test client serves in this thread, with this thread's connection
        conn = get_storage().conn
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    reports = make_reports(world["spec"], ["chrome", "safari"] * 300)
    response = http.post("/v1/reports", json={"reports": reports}, headers=bearer(world["ingest"]))
    assert_fault(response, 507)
    assert response.json["type"].endswith("insufficient-storage")
    assert table_counts(world["db"]) == before
    assert http.get("/v1/campaigns", headers=bearer(world["admin"])).status_code == 200  # reads still work


def test_full_disk_keeps_reads_working_under_rate_limiting(world, tmp_path, monkeypatch):
    app = make_app(world, RATE_LIMIT=100.0, RATE_BURST=100.0)
    http = app.test_client()
    full = sqlite_disk_full_error(tmp_path)

    def no_room(*args, **kwargs):
        raise full

    monkeypatch.setattr(Storage, "_take_token", no_room)  # taking a token is a write: the disk refuses it
    listed = http.get("/v1/campaigns", headers=bearer(world["admin"]))
    assert listed.status_code == 200 and [c["name"] for c in listed.json["campaigns"]] == ["browser"]
    assert http.get("/v1/campaigns/browser", headers=bearer(world["ingest"])).status_code == 200
    before = table_counts(world["db"])
    reports = make_reports(world["spec"], ["chrome"])
    response = http.post("/v1/reports", json={"reports": reports}, headers=bearer(world["ingest"]))
    assert_fault(response, 507)
    assert table_counts(world["db"]) == before


def test_full_disk_with_an_empty_bucket_still_limits_reads(world, tmp_path, monkeypatch):
    app = make_app(world, RATE_LIMIT=0.001, RATE_BURST=1.0)
    http = app.test_client()
    assert http.get("/v1/campaigns", headers=bearer(world["admin"])).status_code == 200  # the one token
    full = sqlite_disk_full_error(tmp_path)

    def no_room(*args, **kwargs):
        raise full

    monkeypatch.setattr(Storage, "_take_token", no_room)
    limited = http.get("/v1/campaigns", headers=bearer(world["admin"]))
    assert limited.status_code == 429 and "Retry-After" in limited.headers


@pytest.mark.parametrize("script", [HOLD_SQLITE_LOCK, HOLD_WRITER_FLOCK], ids=["sqlite-lock", "writer-flock"])
def test_lock_held_by_another_process_is_503_and_stores_nothing(world, script):
    app = make_app(world)
    http = app.test_client()
    before = table_counts(world["db"])
    reports = make_reports(world["spec"], ["chrome", "firefox"] * 5)
    with lock_held_by_another_process(world["db"], script):
        response = http.post("/v1/reports", json={"reports": reports}, headers=bearer(world["ingest"]))
        assert_fault(response, 503)
        assert response.json["type"].endswith("unavailable")
        ready = http.get("/readyz")
        assert ready.status_code == 503 and ready.json["field"] == "database" and ready.headers["Retry-After"]
        created = http.post("/v1/campaigns", json={**CATEGORICAL, "name": "other"},
                            headers=bearer(world["admin"]))
        assert_fault(created, 503)
        assert http.get("/v1/campaigns", headers=bearer(world["admin"])).status_code == 200
    assert table_counts(world["db"]) == before
    assert http.get("/readyz").status_code == 200  # recovers once the lock is released
    retried = http.post("/v1/reports", json={"reports": reports}, headers=bearer(world["ingest"]))
    assert retried.status_code == 200 and retried.json["accepted"] == len(reports)


def _garbage_header(data: bytearray) -> None:
    data[:100] = b"not a database, " * 6 + b"junk"


def _garbage_pages(data: bytearray) -> None:
    data[4096:] = b"\xff" * (len(data) - 4096)  # every b-tree page after the first: invalid page type


@pytest.mark.parametrize("damage", [_garbage_header, _garbage_pages], ids=["header", "pages"])
def test_corrupt_database_is_503_and_writes_nothing(world, damage):
    app = make_app(world)  # creates no connection that outlives create_app: the next request opens the file
    data = bytearray(world["db"].read_bytes())
    assert len(data) > 4096 and not Path(f"{world['db']}-wal").exists()
    damage(data)
    world["db"].write_bytes(bytes(data))
    http = app.test_client()
    reports = make_reports(world["spec"], ["chrome"] * 5)
    assert_fault(http.post("/v1/reports", json={"reports": reports}, headers=bearer(world["ingest"])), 503)
    assert_fault(http.get("/v1/campaigns", headers=bearer(world["admin"])), 503)
    ready = http.get("/readyz")
    assert ready.status_code == 503 and ready.json["field"] == "database" and ready.headers["Retry-After"]
    assert world["db"].read_bytes() == bytes(data)  # nothing written
    wal = Path(f"{world['db']}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    "A 2 MiB tmpfs: a disk that really fills up (needs CAP_SYS_ADMIN; skipped elsewhere)"
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount_point)],
                             capture_output=True) if shutil.which("mount") and os.geteuid() == 0 else None
    if mounted is None or mounted.returncode != 0:
        pytest.skip("cannot mount a size-limited tmpfs here (root and CAP_SYS_ADMIN needed)")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def test_really_full_disk_on_the_real_server(small_filesystem, tmp_path, monkeypatch):
    db_path = small_filesystem / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        admin, _ = storage.create_key("admin", "2024-01-01")
        campaign, _ = storage.create_campaign(CATEGORICAL, "2024-01-01")
    monkeypatch.setenv("LDP_MIN_FREE_DISK_BYTES", str(64 * 1024))
    with running_server(db_path, tmp_path / "server.log", workers=2, extra=("--rate-limit", "100")) as (url, _):
        stored = 0
        for seed in range(100):  # 500 reports take about 150 KiB: the disk is full long before
            reports = make_reports(campaign.spec, ["chrome", "safari"] * 250, seed=seed)
            status, headers, body = _request(url + "/v1/reports", ingest, {"reports": reports})
            if status != 200:
                break
            stored += len(reports)
        assert status == 507 and body["type"].endswith("insufficient-storage") and body["field"] == "database"
        assert int(headers["Retry-After"]) == body["retry_after"] >= 1
        ready_status, _, ready = _request(url + "/readyz")
        assert ready_status == 503 and ready["field"] == "disk"
        listed_status, _, listed = _request(url + "/v1/campaigns", admin)  # a read, with a rate-limit token
        assert listed_status == 200 and [c["name"] for c in listed["campaigns"]] == ["browser"]
    with Storage(db_path) as storage:
        assert storage.count_reports() == stored  # the refused batch left nothing behind
        assert sum(a.n for _, a in storage.aggregates_by_day(campaign)) == stored


def _request(url: str, key: str | None = None, body: dict | None = None) -> tuple[int, dict, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), json.loads(error.read())
