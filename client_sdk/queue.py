"""The persistent report queue: perturbed reports wait here, on disk, until the collector acknowledges them.

Reports are stored exactly as they will be sent (JSON text with their report_id), so a retry resends the same
perturbed report and never draws a new one.  Limits on count, bytes and age drop the oldest reports first; a
dropped report is logged (without its content) and never resent.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from .state_file import StateFile

logger = logging.getLogger("client_sdk")


@dataclass(frozen=True)
class QueueLimits:
    "Most reports, bytes and seconds of age the queue keeps"

    max_reports: int = 10_000
    max_bytes: int = 5 * 1024 * 1024
    max_age_seconds: float = 7 * 24 * 3600.0

    def __post_init__(self) -> None:
        if self.max_reports < 1:
            raise ValueError("max_reports must be at least 1")
        if self.max_bytes < 1024:
            raise ValueError("max_bytes must be at least 1024")
        if self.max_age_seconds <= 0:
            raise ValueError("max_age_seconds must be positive")


@dataclass(frozen=True)
class QueuedReport:
    "One report waiting to be sent: its JSON text and id"

    report_id: str
    campaign: str
    text: str


class ReportQueue:
    "FIFO of reports in the state file"

    def __init__(self, state: StateFile, limits: QueueLimits | None = None) -> None:
        self.state = state
        self.limits = limits or QueueLimits()
        state.conn.execute("CREATE TABLE IF NOT EXISTS queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                           "report_id TEXT NOT NULL UNIQUE, campaign TEXT NOT NULL, body TEXT NOT NULL, "
                           "size INTEGER NOT NULL, created REAL NOT NULL)")

    def put(self, report: dict[str, Any], now: float) -> int:
        "Append a report; returns how many old reports the limits dropped"
        text = json.dumps(report, separators=(",", ":"))
        with self.state.transaction() as conn:
            conn.execute("INSERT INTO queue (report_id, campaign, body, size, created) VALUES (?, ?, ?, ?, ?)",
                         (report["report_id"], report["campaign"], text, len(text.encode()), now))
            return self.enforce_limits(now)

    def enforce_limits(self, now: float) -> int:
        "Drop expired reports, then the oldest until count and bytes fit"
        with self.state.transaction() as conn:
            dropped = conn.execute("DELETE FROM queue WHERE created < ?",
                                   (now - self.limits.max_age_seconds,)).rowcount
            count, size = conn.execute("SELECT count(*), coalesce(sum(size), 0) FROM queue").fetchone()
            excess = max(0, count - self.limits.max_reports)
            if excess:
                dropped += conn.execute("DELETE FROM queue WHERE seq IN (SELECT seq FROM queue ORDER BY seq LIMIT ?)",
                                        (excess,)).rowcount
                size = conn.execute("SELECT coalesce(sum(size), 0) FROM queue").fetchone()[0]
            while size > self.limits.max_bytes:
                seq, row_size = conn.execute("SELECT seq, size FROM queue ORDER BY seq LIMIT 1").fetchone()
                conn.execute("DELETE FROM queue WHERE seq = ?", (seq,))
                size -= row_size
                dropped += 1
        if dropped:
            logger.warning("report queue limits dropped %d old reports", dropped)
        return dropped

    def peek(self, max_reports: int, max_bytes: int) -> list[QueuedReport]:
        "The oldest reports, at most ``max_reports`` of them and ``max_bytes`` of JSON (always at least one)"
        with self.state.lock:
            rows = self.state.conn.execute("SELECT report_id, campaign, body, size FROM queue ORDER BY seq LIMIT ?",
                                           (max_reports,)).fetchall()
        out: list[QueuedReport] = []
        total = 0
        for report_id, campaign, body, size in rows:
            if out and total + size + 1 > max_bytes:
                break
            out.append(QueuedReport(report_id, campaign, body))
            total += size + 1
        return out

    def remove(self, report_ids: list[str]) -> None:
        with self.state.transaction() as conn:
            conn.executemany("DELETE FROM queue WHERE report_id = ?", [(r,) for r in report_ids])

    def __len__(self) -> int:
        with self.state.lock:
            return self.state.conn.execute("SELECT count(*) FROM queue").fetchone()[0]

    def total_bytes(self) -> int:
        with self.state.lock:
            return self.state.conn.execute("SELECT coalesce(sum(size), 0) FROM queue").fetchone()[0]

    def report_ids(self) -> list[str]:
        with self.state.lock:
            return [r[0] for r in self.state.conn.execute("SELECT report_id FROM queue ORDER BY seq")]
