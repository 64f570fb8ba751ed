"""Which state-file commits are fsynced: every record (ledger charge and queued report) is; only the removal of
acknowledged reports and the spec cache are not (their loss in a power cut loses no report)."""

from __future__ import annotations

import uuid

from client_sdk.queue import ReportQueue
from client_sdk.state_file import SCHEMA_VERSION, STATE_FILE_NAME, StateFile
from tests.sqltrace import traced_connections


def report() -> dict:
    return {"report_id": str(uuid.uuid4()), "campaign": "c", "fingerprint": "f" * 32, "payload": "00"}


def synchronous(state: StateFile) -> int:
    return state.conn.execute("PRAGMA synchronous").fetchone()[0]


def traced(state: StateFile, action) -> list[tuple[str, int]]:
    "The statements ``action`` ran, each with the synchronous level in force (2 FULL, 1 NORMAL)"
    statements: list[str] = []
    level = [synchronous(state)]  # set again only when it changes
    state.conn.set_trace_callback(statements.append)
    out = []
    try:
        action()
    finally:
        state.conn.set_trace_callback(None)
    for statement in statements:
        if statement.startswith("PRAGMA synchronous = "):
            level[0] = {"NORMAL": 1, "FULL": 2}[statement.rsplit(" ", 1)[1]]
        else:
            out.append((statement.split(" ", 1)[0], level[0]))
    return out


def test_records_are_fsynced_and_removals_are_not(tmp_path):
    state = StateFile(tmp_path)
    queue = ReportQueue(state)
    item = report()
    put = traced(state, lambda: queue.put(item, now=1.0))
    assert ("COMMIT", 2) in put and all(level == 2 for _, level in put)
    removed = traced(state, lambda: queue.remove([item["report_id"]]))
    assert removed and all(statement == ("DELETE", 1) for statement in removed)  # the trigger's too
    again = traced(state, lambda: queue.put(report(), now=1.0))
    assert ("COMMIT", 2) in again and all(level == 2 for _, level in again)  # back to FULL for the next record
    assert len(queue) == 1
    state.close()
    assert len(ReportQueue(StateFile(tmp_path))) == 1  # the removal committed (atomic), though not fsynced


def test_a_removal_inside_a_transaction_keeps_that_transactions_level(tmp_path):
    state = StateFile(tmp_path)
    queue = ReportQueue(state)
    item = report()
    queue.put(item, now=1.0)

    def remove_in_transaction():
        with state.transaction():
            queue.remove([item["report_id"]])

    assert all(level == 2 for _, level in traced(state, remove_in_transaction))
    state.close()


def test_spec_cache_without_fsync_and_back_to_full(tmp_path):
    from client_sdk.state_file import _template

    state = StateFile(tmp_path)
    with state.without_fsync(), state.transaction():
        assert synchronous(state) == (0 if _template() else 1)  # OFF: the first commit to a template's new WAL
        state.cache_spec("c", {"name": "c"}, "f" * 32, 1.0)
    with state.without_fsync(), state.transaction():
        assert synchronous(state) == 1
        state.cache_spec("c", {"name": "c"}, "f" * 32, 1.0)
    with state.transaction():
        assert synchronous(state) == 2  # the next transaction is fsynced again
    assert state.cached_spec("c") == ({"name": "c"}, 1.0)
    state.close()



def traced_open(path) -> tuple[StateFile, list[str]]:
    "A StateFile opened on ``path`` and the statements SQLite traced on its connection"
    with traced_connections() as statements:
        state = StateFile(path)
    return state, statements


def test_a_new_state_file_switches_to_wal_without_a_rollback_journal(tmp_path, monkeypatch):
    """Without a template (Python 3.10: no Connection.serialize), SQLite makes a new file.  From SQLite's default
    mode the switch to WAL creates, fsyncs twice and deletes a rollback journal and fsyncs the directory (strace;
    docs/benchmarks.md): a new file goes through journal mode OFF first (a check of the statements, as the
    syscalls are not observable from Python)"""
    import client_sdk.state_file as state_file

    monkeypatch.setattr(state_file, "_TEMPLATE", [None])
    state, statements = traced_open(tmp_path)
    modes = [s.rstrip(";") for s in statements if s.startswith("PRAGMA journal_mode")]
    assert state.fresh and modes == ["PRAGMA journal_mode = OFF", "PRAGMA journal_mode = WAL"]
    assert state.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not (tmp_path / (STATE_FILE_NAME + "-journal")).exists()
    state.close()


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

    import client_sdk.state_file as state_file

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
    import client_sdk.state_file as state_file

    first = StateFile(tmp_path)
    ReportQueue(first).put(report(), now=1.0)
    assert not state_file._private_file(first.path, state_file._template() or b"x")
    second = StateFile(tmp_path)
    assert not second.fresh and len(ReportQueue(second)) == 1
    first.close()
    second.close()


def test_the_first_fsynced_commit_after_the_template_syncs_again(tmp_path):
    "Only the new WAL's first commit without an fsync runs at OFF; a record after it is FULL, the next cache NORMAL"
    state = StateFile(tmp_path)
    queue = ReportQueue(state)
    with state.without_fsync(), state.transaction():
        state.cache_spec("c", {"name": "c"}, "f" * 32, 1.0)
        assert synchronous(state) in (0, 1)
    put = traced(state, lambda: queue.put(report(), now=1.0))
    assert ("COMMIT", 2) in put
    with state.without_fsync(), state.transaction():
        assert synchronous(state) == 1
    state.close()
    assert len(ReportQueue(StateFile(tmp_path))) == 1


def test_a_record_writes_at_most_seven_pages_to_the_wal(tmp_path):
    """Pages per record commit (WAL frames): the queue, its three indexes, its totals, the ledger and its period; 10
    with AUTOINCREMENT (sqlite_sequence) and rowid ledger tables (a table and its key's index each)"""
    from .test_client import FakeCollector, make_client

    client = make_client(tmp_path, FakeCollector())
    wal = client.state.path.with_name(STATE_FILE_NAME + "-wal")
    assert client.record("browser", "chrome")  # the first record also fsyncs the WAL's header
    sizes = []
    for value in ("firefox", "safari", "chrome"):
        before = wal.stat().st_size
        assert client.record("browser", value)
        sizes.append((wal.stat().st_size - before) // (1024 + 24))  # a frame: a 24-byte header and a page
    assert max(sizes) <= 7, sizes
    client.close(timeout=0)
