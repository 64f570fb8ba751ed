"""Tracing the SQL that code under test runs: every statement on every connection ``sqlite3.connect`` opens."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def traced_connections() -> Iterator[list[str]]:
    """The statements SQLite traces on the connections opened inside the block, in order (the list fills as they
    run); ``sqlite3.connect`` is itself again after the block"""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", traced)
        yield statements
