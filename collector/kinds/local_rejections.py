"""Rejected reports of local campaigns, counted per campaign and reason (issue 38: the dashboard's "rejections by
reason").

A report ``POST /v1/reports`` refuses (a 4xx item of its answer) whose campaign is known to the key adds one to the
row (campaign, reason) of ``report_rejections``; the reason is the refused field's name (``payload``,
``payload.bits``, ``campaign`` for a closed one...), indices dropped.  Nothing else is stored: not the payload,
report id, key, address or day, and no row id or time (SQLite's table has no rowid), so the table orders
nothing by arrival; a report with no campaign this key may use (unknown name, out of scope, malformed) is not
counted at all, so an attacker's text never reaches it.  The local kind owns the table (its migration 2).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..storage import StorageBase

FIELD = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){0,3}")  # a field name the collector writes
OTHER = "payload"  # the reason of a field name of another shape (never stored as written)


def create_rejections(conn: Any, dialect: str) -> None:
    "Migration 2 of the local kind: the counts table"
    suffix = " WITHOUT ROWID" if dialect == "sqlite" else ""
    conn.execute("CREATE TABLE IF NOT EXISTS report_rejections (campaign TEXT NOT NULL, reason TEXT NOT NULL, "
                 f"rejected INTEGER NOT NULL, PRIMARY KEY (campaign, reason)){suffix}")


def reason_of(field: str) -> str:
    "The stored reason of a refused field (``reports[3].payload[2]`` -> ``payload``): a collector field name"
    name = re.sub(r"\[\d+\]", "", field.removeprefix("reports")).lstrip(".")
    return name if FIELD.fullmatch(name) and len(name) <= 64 else OTHER


def count_rejections(storage: StorageBase, refused: Iterable[tuple[str, str]]) -> None:
    "Add the (campaign, field) refusals to their counts, in one transaction"
    counts = Counter((campaign, reason_of(field)) for campaign, field in refused)
    if not counts:
        return
    with storage.transaction():
        storage._run_many("INSERT INTO report_rejections (campaign, reason, rejected) VALUES (?, ?, ?) "
                          "ON CONFLICT (campaign, reason) DO UPDATE SET "
                          "rejected = report_rejections.rejected + excluded.rejected",
                          [(campaign, reason, n) for (campaign, reason), n in sorted(counts.items())])


def rejection_counts(storage: StorageBase, campaign: str) -> dict[str, int]:
    "The campaign's rejected reports by reason, most first"
    rows = storage._all("SELECT reason, rejected FROM report_rejections WHERE campaign = ?", (campaign,))
    return dict(sorted(((str(reason), int(n)) for reason, n in rows), key=lambda item: (-item[1], item[0])))
