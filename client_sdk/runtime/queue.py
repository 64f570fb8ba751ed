"""The persistent report queue: perturbed reports wait here, on disk, until the collector acknowledges them.

Reports are stored exactly as they will be sent (JSON text with their report_id), so a retry resends the same
perturbed report and never draws a new one.  A report leaves the queue in two ways only: the collector
acknowledged it or rejected it by name (``remove``), or a limit on count, bytes or age dropped it (oldest first;
each drop is counted in the state file's ``counters`` and logged without the report's content).

Cost per ``put`` does not grow with the queue: the count and bytes are running totals kept by triggers, the
age limit uses an index on ``created``, and the count/byte limits read only the rows they drop.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from .state_file import StateFile

logger = logging.getLogger("client_sdk")

DROP_COUNTERS = ("dropped_age_limit", "dropped_count_limit", "dropped_bytes_limit")


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
    "FIFO of reports in the state file (the table is created by :class:`StateFile`)"

    def __init__(self, state: StateFile, limits: QueueLimits | None = None) -> None:
        self.state = state
        self.limits = limits or QueueLimits()
        self.last_count = 0  # queued reports after the last put (saves a read per record)
        self.last_totals = (0, 0)  # what the last totals() read

    def put(self, report: dict[str, Any], now: float) -> int:
        "Append a report; returns how many old reports the limits dropped"
        text = json.dumps(report, separators=(",", ":"))
        with self.state.transaction() as conn:
            conn.execute("INSERT INTO queue (report_id, campaign, body, size, created) VALUES (?, ?, ?, ?, ?)",
                         (report["report_id"], report["campaign"], text, len(text.encode()), now))
            return self.enforce_limits(now)

    def enforce_limits(self, now: float) -> int:
        "Drop expired reports, then the oldest until count and bytes fit; each drop is counted by its reason"
        drops = dict.fromkeys(DROP_COUNTERS, 0)
        with self.state.transaction() as conn:
            drops["dropped_age_limit"] = conn.execute("DELETE FROM queue WHERE created < ?",
                                                      (now - self.limits.max_age_seconds,)).rowcount
            count, size = conn.execute("SELECT reports, bytes FROM queue_totals WHERE id = 1").fetchone()
            excess = count - self.limits.max_reports
            if excess > 0:
                drops["dropped_count_limit"] = conn.execute(
                    "DELETE FROM queue WHERE seq IN (SELECT seq FROM queue ORDER BY seq LIMIT ?)", (excess,)).rowcount
                count, size = conn.execute("SELECT reports, bytes FROM queue_totals WHERE id = 1").fetchone()
            if size > self.limits.max_bytes:
                last, freed, dropped = None, 0, 0
                for seq, row_size in conn.execute("SELECT seq, size FROM queue ORDER BY seq"):
                    last, freed, dropped = seq, freed + row_size, dropped + 1
                    if size - freed <= self.limits.max_bytes:
                        break
                conn.execute("DELETE FROM queue WHERE seq <= ?", (last,))
                drops["dropped_bytes_limit"] = dropped
                count -= dropped
            for name, amount in drops.items():
                if amount:
                    self.state.add_to_counter(name, amount)
        self.last_count = count
        total = sum(drops.values())
        if total:
            logger.warning("report queue limits dropped %d old reports (%s)", total,
                           ", ".join(f"{k}={v}" for k, v in drops.items() if v))
        return total

    def peek(self, max_reports: int, max_bytes: int, campaign: str | None = None) -> list[QueuedReport]:
        "The oldest reports (of ``campaign`` if given): at most ``max_reports`` and ``max_bytes`` (always one)"
        with self.state.lock:
            if campaign is None:
                rows = self.state.conn.execute("SELECT report_id, campaign, body, size FROM queue ORDER BY seq "
                                               "LIMIT ?", (max_reports,)).fetchall()
            else:
                rows = self.state.conn.execute("SELECT report_id, campaign, body, size FROM queue WHERE campaign = ? "
                                               "ORDER BY seq LIMIT ?", (campaign, max_reports)).fetchall()
        out: list[QueuedReport] = []
        total = 0
        for report_id, name, body, size in rows:
            if out and total + size + 1 > max_bytes:
                break
            out.append(QueuedReport(report_id, name, body))
            total += size + 1
        return out

    def campaigns(self) -> list[str]:
        "Campaigns with queued reports"
        with self.state.lock:
            return [r[0] for r in self.state.conn.execute("SELECT DISTINCT campaign FROM queue")]

    def remove(self, report_ids: list[str], counters: dict[str, int] | None = None) -> None:
        """Delete acknowledged reports: one statement per 500 ids (a single statement is its own transaction),
        committed without an fsync (a removal lost in a power cut resends reports the collector already has).
        ``counters`` (the collector's rejections by reason) are added in the same transaction: a rejected report is
        counted exactly when it leaves the queue"""
        chunks = [report_ids[start:start + 500] for start in range(0, len(report_ids), 500)]
        counted = {name: amount for name, amount in (counters or {}).items() if amount}
        alone = len(chunks) == 1 and not counted
        with self.state.without_fsync(), self.state.lock if alone else self.state.transaction():
            for chunk in chunks:
                self.state.conn.execute(f"DELETE FROM queue WHERE report_id IN ({','.join('?' * len(chunk))})",
                                        chunk)
            for name, amount in counted.items():
                self.state.add_to_counter(name, amount)

    def drop_expired(self, now: float) -> int:
        """Drop reports older than the age limit, counted in the same transaction (one indexed read unless
        something expired)"""
        cutoff = now - self.limits.max_age_seconds
        with self.state.lock:
            oldest = self.state.conn.execute("SELECT min(created) FROM queue").fetchone()[0]
        if oldest is None or oldest >= cutoff:
            return 0
        with self.state.transaction() as conn:
            dropped = conn.execute("DELETE FROM queue WHERE created < ?", (cutoff,)).rowcount
            if dropped:
                self.state.add_to_counter("dropped_age_limit", dropped)
        if dropped:
            logger.warning("report queue limits dropped %d old reports (dropped_age_limit=%d)", dropped, dropped)
        return dropped

    def clear(self) -> int:
        "Delete every queued report (the user switched uploading off); returns how many"
        with self.state.transaction() as conn:
            return conn.execute("DELETE FROM queue").rowcount

    def __len__(self) -> int:
        return self.totals()[0]

    def total_bytes(self) -> int:
        return self.totals()[1]

    def totals(self) -> tuple[int, int]:
        "Queued reports and their bytes (running totals: one indexed read)"
        with self.state.lock:
            count, size = self.state.conn.execute("SELECT reports, bytes FROM queue_totals WHERE id = 1").fetchone()
        self.last_totals = (count, size)
        return count, size

    def report_ids(self) -> list[str]:
        with self.state.lock:
            return [r[0] for r in self.state.conn.execute("SELECT report_id FROM queue ORDER BY seq")]
