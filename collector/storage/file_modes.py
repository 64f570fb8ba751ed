"""The database file's permissions: readable by its owner only (API key hashes, HPKE private keys, verify keys)."""

from __future__ import annotations

import os
from pathlib import Path


def create_private(path: Path) -> None:
    """Create the database file readable by its owner only (0600) unless it exists: it holds API key hashes and, on
    a leader or helper, HPKE private keys and verify keys.  SQLite creates the -wal and -shm files with the database
    file's permissions, so they are 0600 too."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:
        pass  # a directory that does not exist or cannot be written: sqlite3.connect names the problem


def restrict_database(path: Path) -> None:
    "Make an existing database (and its -wal, -shm files) readable by its owner only (a file made by an older version)"
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        try:
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)
        except FileNotFoundError:
            pass

