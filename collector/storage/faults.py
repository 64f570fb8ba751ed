"""Which database and OS errors mean the storage, not the request, failed (:func:`storage_fault`)."""

from __future__ import annotations

import errno
import os
import sqlite3

from ..errors import (
    DatabaseCorrupt,
    DatabaseLocked,
    DiskFull,
    StorageUnavailable,
)

# SQLite primary result codes (https://www.sqlite.org/rescode.html) that mean the database, not the request, failed
_FAULT_CODES: dict[int, type[StorageUnavailable]] = {
    5: DatabaseLocked, 6: DatabaseLocked, 15: DatabaseLocked,  # BUSY, LOCKED, PROTOCOL
    11: DatabaseCorrupt, 26: DatabaseCorrupt,  # CORRUPT, NOTADB
    13: DiskFull,  # FULL
    8: StorageUnavailable, 10: StorageUnavailable, 14: StorageUnavailable,  # READONLY, IOERR, CANTOPEN
}
_FAULT_MESSAGES: dict[str, type[StorageUnavailable]] = {  # Python < 3.11 has no sqlite_errorcode
    "database is locked": DatabaseLocked, "database disk image is malformed": DatabaseCorrupt,
    "file is not a database": DatabaseCorrupt, "database or disk is full": DiskFull,
    "disk i/o error": StorageUnavailable, "unable to open database file": StorageUnavailable,
    "attempt to write a readonly database": StorageUnavailable,
}


def storage_fault(exc: BaseException) -> StorageUnavailable | None:
    "The StorageUnavailable that a database or OS error stands for; None if the error is not a storage fault"
    if isinstance(exc, StorageUnavailable):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFull(f"no space left on the database's disk ({os.strerror(exc.errno)})")
    if type(exc).__module__.startswith(("psycopg.", "psycopg_pool")):
        # imported here: the PostgreSQL store (psycopg, +495 ms) only for a postgresql:// database
        from .postgres import postgres_fault  # psycopg loads only when a PostgreSQL database is used

        return postgres_fault(exc)
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    message = str(exc).lower()
    fault = _FAULT_CODES.get(code & 0xFF) if code is not None else next(
        (cls for text, cls in _FAULT_MESSAGES.items() if text in message), None)
    return fault(f"SQLite: {exc}") if fault is not None else None
