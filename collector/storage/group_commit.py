"""Group commit of the SQLite backend: the inserts of one process wait in a queue per database file and the first
one commits them all in one transaction (``Storage._insert_grouped``)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .models import InsertResult, RateRule, ReportGroup


@dataclass(eq=False)
class _PendingInsert:
    "One request's insert, queued for a shared transaction (Storage._insert_grouped)"

    groups: Sequence[ReportGroup]
    day: str
    day_number: int
    version_ids: list[int]
    bucket: tuple[str, RateRule] | None
    now: float
    within: Callable[[Any, InsertResult], None] | None = None  # (storage, result) in the transaction, after the inserts
    earlier: set[str] = field(default_factory=set)
    result: InsertResult = field(default_factory=InsertResult)
    error: BaseException | None = None
    lead: bool = False
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class _GroupCommitQueue:
    "The inserts of one process waiting for a shared transaction on one database file; counters for tests"

    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: list[_PendingInsert] = field(default_factory=list)
    leading: bool = False
    transactions: int = 0  # shared transactions begun
    committed_requests: int = 0  # requests answered by a committed shared transaction


_group_commit_queues: dict[tuple[int, str], _GroupCommitQueue] = {}
_group_commit_queues_lock = threading.Lock()


def _group_commit_queue(path: Path) -> _GroupCommitQueue:
    "This process's queue for the database file at ``path`` (a forked worker starts with its own)"
    key = (os.getpid(), str(path.resolve()))
    with _group_commit_queues_lock:
        return _group_commit_queues.setdefault(key, _GroupCommitQueue())
