"""Values recorded before their campaign's spec reached the device ("held"), kept in the state file until it does.

A fresh device records at start-up, before any round trip to the collector could finish.  Such a value cannot be
perturbed yet (the spec says how), so it waits, *raw*, in the table ``held`` of the device's own state file (mode
0600 in a 0700 directory; it never leaves the device unperturbed): it survives ``close()``, a crash and a restart,
and is perturbed, charged to the ledger and queued when the spec arrives, in the transaction that deletes it.

Bounds: at most ``max_values`` per campaign (a value beyond that is not held: ``spec_unavailable``) and
``max_age_seconds`` (an older one is deleted, counted, the next time the client holds or releases values).  Every
value deleted without being queued is counted by reason in the state file's ``counters`` (``HELD_DROP_COUNTERS``).
Deletions overwrite the row's bytes (``PRAGMA secure_delete``), and once nothing is held the WAL is checkpointed
and truncated, so a released value does not linger in the file's free pages or old WAL frames.

Nothing here runs on a device that holds nothing: the campaigns with held values are read with the spec cache's
read at open (:func:`spec_times_and_held`), and every other statement runs only when something is or was held.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import InvalidValue, InvalidValueType, LDPError
from .state_file import StateFile

HELD_DROP_COUNTERS = ("held_dropped_age", "held_dropped_invalid", "held_dropped_unknown_campaign",
                      "held_dropped_campaign_closed", "held_dropped_upload_disabled")
DEFAULT_MAX_AGE = 7 * 24 * 3600.0


def spec_times_and_held(state: StateFile) -> tuple[dict[str, float], set[str], set[str]]:
    """When each cached spec was fetched, the campaigns with held values and those the collector listed as closed:
    one read at open (the spec cache's, which a file that holds nothing answers exactly as before)"""
    fetched: dict[str, float] = {}
    held: set[str] = set()
    closed: set[str] = set()
    with state.lock:
        rows = state.conn.execute("SELECT campaign, fetched, fingerprint = '' FROM specs "
                                  "UNION ALL SELECT DISTINCT campaign, NULL, 0 FROM held").fetchall()
    for campaign, when, is_closed in rows:
        if when is None:
            held.add(campaign)
        elif is_closed:
            closed.add(campaign)
        else:
            fetched[campaign] = when
    return fetched, held, closed


def encode_value(value: Any) -> str:
    """The JSON a held value is stored as.  Raises for a value no campaign can report (None, NaN, a mapping, an
    object), as ``record`` would with the spec known: ``InvalidValue`` or ``InvalidValueType``"""
    return json.dumps(_plain(value), allow_nan=False, separators=(",", ":"))


def decode_value(text: str) -> Any:
    "The value :func:`encode_value` stored (a tuple comes back as a list); InvalidValue for a damaged row"
    try:
        return _restored(json.loads(text))
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidValue(f"a held value cannot be read back ({exc})") from None


def _plain(value: Any) -> Any:
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if number != number:
            raise InvalidValue("a campaign cannot report NaN")
        return number
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return {"set": [_plain(item) for item in value]}
    raise InvalidValueType(f"no campaign can report a value of type {type(value).__name__}")


def _restored(data: Any) -> Any:
    if isinstance(data, dict):
        return {tuple(item) if isinstance(item, list) else item for item in data["set"]}
    if isinstance(data, list):
        return [_restored(item) for item in data]
    return data


class HeldValues:
    "The table ``held`` of the state file (created by :class:`StateFile`)"

    def __init__(self, state: StateFile, max_values: int = 1000, max_age_seconds: float = DEFAULT_MAX_AGE) -> None:
        if not isinstance(max_values, int) or max_values < 0:
            raise ValueError("max_held must be an integer >= 0 (0: never hold a value)")
        if not max_age_seconds > 0:
            raise ValueError("max_held_age must be a positive number of seconds")
        self.state = state
        self.max_values = max_values
        self.max_age_seconds = max_age_seconds
        self._secure = False

    def hold(self, campaign: str, text: str, now: float) -> bool:
        "Store an encoded value (fsynced, like a record); False when the campaign's hold is full"
        with self.state.transaction() as conn:
            self.expire(now)
            held = conn.execute("SELECT count(*) FROM held WHERE campaign = ?", (campaign,)).fetchone()[0]
            if held >= self.max_values:
                return False
            conn.execute("INSERT INTO held (campaign, value, recorded) VALUES (?, ?, ?)", (campaign, text, now))
        return True

    def oldest(self, campaign: str, limit: int) -> list[tuple[int, str]]:
        "The oldest held values of ``campaign`` (seq, JSON text); call inside the transaction that removes them"
        with self.state.lock:
            return self.state.conn.execute("SELECT seq, value FROM held WHERE campaign = ? ORDER BY seq LIMIT ?",
                                           (campaign, limit)).fetchall()

    def release(self, campaign: str, queue: Callable[[str], str | None], batch: int = 100) -> tuple[list[str], bool]:
        """Hand each held value of ``campaign`` (its JSON text, for :func:`decode_value`), oldest first, to ``queue``
        inside the transaction that deletes it
        (``batch`` values a transaction; the rows are read under its write lock, so a value is released once even
        with two clients on one directory).  ``queue`` returns its outcome's name, or None when the value could not
        be queued (the state file): that transaction rolls back and its values stay held.  The outcomes of the
        committed transactions, and whether every value was released."""
        outcomes: list[str] = []
        while True:
            done: list[str] = []
            try:
                with self.state.transaction():
                    rows = self.oldest(campaign, batch)
                    for _, text in rows:
                        outcome = queue(text)
                        if outcome is None:
                            raise _RollBack
                        done.append(outcome)
                    self.remove([seq for seq, _ in rows])
            except _RollBack:
                return outcomes, False
            outcomes += done
            if len(rows) < batch:
                return outcomes, True

    def remove(self, seqs: list[int]) -> None:
        "Delete released values (inside the transaction that queued them)"
        if seqs:
            with self.state.transaction() as conn:
                self._overwrite_deleted(conn)
                conn.execute(f"DELETE FROM held WHERE seq IN ({','.join('?' * len(seqs))})", seqs)

    def expire(self, now: float) -> int:
        "Delete values older than the age limit, counted as ``held_dropped_age``"
        with self.state.transaction() as conn:
            self._overwrite_deleted(conn)
            dropped = conn.execute("DELETE FROM held WHERE recorded < ?", (now - self.max_age_seconds,)).rowcount
            if dropped:
                self.state.add_to_counter("held_dropped_age", dropped)
        return dropped

    def drop(self, campaigns: Iterable[str] | None, counter: str) -> int:
        "Delete every held value (of ``campaigns`` if given), counted under ``counter``; how many"
        with self.state.transaction() as conn:
            self._overwrite_deleted(conn)
            if campaigns is None:
                dropped = conn.execute("DELETE FROM held").rowcount
            else:
                names = list(campaigns)
                dropped = conn.execute(f"DELETE FROM held WHERE campaign IN ({','.join('?' * len(names))})",
                                       names).rowcount
            if dropped:
                self.state.add_to_counter(counter, dropped)
        return dropped

    def campaigns(self) -> set[str]:
        with self.state.lock:
            return {row[0] for row in self.state.conn.execute("SELECT DISTINCT campaign FROM held")}

    def count(self) -> int:
        with self.state.lock:
            return int(self.state.conn.execute("SELECT count(*) FROM held").fetchone()[0])

    def scrub(self) -> None:
        """Nothing is held any more: copy the WAL into the file and truncate it, so the deleted values' old page
        images leave the WAL too (best effort: another connection reading the file can keep the checkpoint from
        completing; the next one does it)"""
        with self.state.lock:
            self.state.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def _overwrite_deleted(self, conn: Any) -> None:
        "Deleted rows' bytes are overwritten with zeros, not left in the page (set once per connection)"
        if not self._secure:
            conn.execute("PRAGMA secure_delete = ON")
            self._secure = True


class _RollBack(LDPError):
    "Leaves a release's transaction by rolling it back (never escapes :meth:`HeldValues.release`)"
