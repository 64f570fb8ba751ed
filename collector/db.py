"""The storage connection of a request: one per worker thread, opened on first use and kept.

Flask's tutorial opens a connection per request; with WAL that is expensive, because closing the last connection
to a database checkpoints the WAL into the main file (an extra fsync of the database, about 15 ms here).  So each
worker process (and thread) keeps its connection; every write is a ``BEGIN IMMEDIATE`` transaction, committed or
rolled back before the response is sent (report inserts of concurrent requests may share one: group commit,
``Storage._insert_grouped``).
"""

from __future__ import annotations

import os
import threading

from flask import Flask, current_app

from .storage import Storage, StorageBase, is_database_url, open_storage


def get_storage() -> StorageBase:
    "This thread's Storage for the current app (re-opened after a fork)"
    local = current_app.extensions["ldp_storage_local"]
    storage: StorageBase | None = getattr(local, "storage", None)
    if storage is None or getattr(local, "pid", None) != os.getpid():
        storage = _open(current_app.config["DATABASE"], int(current_app.config["BUSY_TIMEOUT_MS"]))
        local.storage, local.pid = storage, os.getpid()
    storage.reset()  # never carry a half-done transaction into the next request
    return storage


def _open(database: str, busy_timeout_ms: int) -> StorageBase:
    "SQLite: a connection per thread; PostgreSQL: a view over the process's connection pool"
    if is_database_url(database):
        # imported here: the PostgreSQL store (psycopg, +495 ms) only for a postgresql:// database
        from .storage.postgres import PostgresStorage

        return PostgresStorage(database, busy_timeout_ms=busy_timeout_ms, pooled=True)
    return Storage(database, busy_timeout_ms=busy_timeout_ms)


def init_app(app: Flask) -> None:
    "Create the schema once at start-up"
    with open_storage(app.config["DATABASE"]) as storage:
        storage.migrate()
    app.extensions["ldp_storage_local"] = threading.local()
