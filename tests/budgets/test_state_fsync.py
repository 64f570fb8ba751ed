"""Which state-file commits are fsynced: every record (ledger charge and queued report) is; only the removal of
acknowledged reports and the spec cache are not (their loss in a power cut loses no report)."""

from __future__ import annotations

import pytest

from client_sdk.runtime.queue import ReportQueue
from client_sdk.runtime.state_file import STATE_FILE_NAME, StateFile
from tests.client_sdk.test_state_file import report, traced_open

pytestmark = pytest.mark.budget


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
    from client_sdk.runtime.state_file import _template

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



def test_a_new_state_file_switches_to_wal_without_a_rollback_journal(tmp_path, monkeypatch):
    """Without a template (Python 3.10: no Connection.serialize), SQLite makes a new file.  From SQLite's default
    mode the switch to WAL creates, fsyncs twice and deletes a rollback journal and fsyncs the directory (strace;
    docs/benchmarks.md): a new file goes through journal mode OFF first (a check of the statements, as the
    syscalls are not observable from Python)"""
    import client_sdk.runtime.state_file as state_file

    monkeypatch.setattr(state_file, "_TEMPLATE", [None])
    state, statements = traced_open(tmp_path)
    modes = [s.rstrip(";") for s in statements if s.startswith("PRAGMA journal_mode")]
    assert state.fresh and modes == ["PRAGMA journal_mode = OFF", "PRAGMA journal_mode = WAL"]
    assert state.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not (tmp_path / (STATE_FILE_NAME + "-journal")).exists()
    state.close()


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
    from tests.client_sdk.fakes import FakeCollector, make_client

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
