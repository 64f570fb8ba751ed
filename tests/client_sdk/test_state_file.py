"""A new state file is written from a template identical to the file SQLite makes, and never replaces an existing
file.  Which commits are fsynced (and what they cost) is a budget: tests/budgets/test_state_fsync.py."""

from __future__ import annotations

import uuid

from client_sdk.runtime.queue import ReportQueue
from client_sdk.runtime.state_file import SCHEMA_VERSION, STATE_FILE_NAME, StateFile
from tests.sqltrace import traced_connections


def report() -> dict:
    return {"report_id": str(uuid.uuid4()), "campaign": "c", "fingerprint": "f" * 32, "payload": "00"}


def traced_open(path) -> tuple[StateFile, list[str]]:
    "A StateFile opened on ``path`` and the statements SQLite traced on its connection"
    with traced_connections() as statements:
        state = StateFile(path)
    return state, statements


def schema_of(path) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return [*conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"),
                *conn.execute("SELECT * FROM queue_totals"), conn.execute("PRAGMA user_version").fetchone(),
                conn.execute("PRAGMA page_size").fetchone(), conn.execute("PRAGMA journal_mode").fetchone(),
                conn.execute("PRAGMA integrity_check").fetchone()]
    finally:
        conn.close()


def test_a_new_state_file_is_written_from_the_template(tmp_path, monkeypatch):
    """A new file is the template's bytes (one write, one fsync, no statement at open): the same schema, version,
    page size and WAL mode as the file SQLite makes without a template; private (0600), no temporary file left"""
    import os
    import sqlite3
    import stat

    import client_sdk.runtime.state_file as state_file

    if not hasattr(sqlite3.Connection, "serialize"):
        import pytest

        pytest.skip("no Connection.serialize (Python 3.10): no template")
    state, statements = traced_open(tmp_path / "template")
    assert state.fresh and statements == []
    state.close()
    monkeypatch.setattr(state_file, "_TEMPLATE", [None])
    StateFile(tmp_path / "sqlite").close()
    made = schema_of(tmp_path / "sqlite" / STATE_FILE_NAME)
    assert schema_of(tmp_path / "template" / STATE_FILE_NAME) == made
    assert made[-4:] == [(SCHEMA_VERSION,), (1024,), ("wal",), ("ok",)]
    assert sorted(os.listdir(tmp_path / "template")) == [STATE_FILE_NAME]
    if os.name == "posix":
        assert stat.S_IMODE((tmp_path / "template" / STATE_FILE_NAME).stat().st_mode) == 0o600


def test_an_existing_file_is_never_replaced_by_the_template(tmp_path):
    "A file another opener made first (even between the check and the link) is opened, not overwritten"
    import client_sdk.runtime.state_file as state_file

    first = StateFile(tmp_path)
    ReportQueue(first).put(report(), now=1.0)
    assert not state_file._private_file(first.path, state_file._template() or b"x")
    second = StateFile(tmp_path)
    assert not second.fresh and len(ReportQueue(second)) == 1
    first.close()
    second.close()
