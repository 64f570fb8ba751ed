"""The on-device privacy ledger: how much epsilon (and delta) each campaign has spent here, and how often it may
report.

Spending adds up by basic composition: k reports under (epsilon, delta) cost (k epsilon, k delta) for a value that
does not change (Dwork and Roth 2014, Theorem 3.16; averaging attacks are why a device must cap its reports).  A
:class:`ReportPolicy` per campaign caps reports per period (by default one per campaign period: a UTC day, or a
distributed campaign's batch) and, optionally, the total epsilon; ``record`` refuses reports beyond it before
anything is queued.  A spec's ``budget`` caps the campaign's charges here by the rule of ``client_sdk.budget`` (the
sums of the charges), the same the collector's release ledger refuses releases by, so both stop at one figure.

A distributed campaign's report names its batch (``client_sdk.distributed.batch_of``: the batch of the campaign's
``window``, a UTC day by default, on this device's clock), and the leader puts it in that batch, so the ledger keys
the report on the batch: at most one per batch, and the batches a device reports to only move forward
(``last_batch``; a clock set back never reaches a batch it has reported to). Each release is (epsilon, delta)-DP
for one report replaced, so one device is one report in it. This assumes one device is one identity: a person with
several devices (or faked ones, Sybils) is out of scope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..budget import Budget
from ..budget import refusal as budget_refusal
from .state_file import StateFile

DAY_SECONDS = 86_400.0


@dataclass(frozen=True)
class ReportPolicy:
    """At most ``max_reports`` per ``period_seconds`` (None: no cap) and ``max_epsilon`` in total (None: no cap).

    ``period_seconds`` None is the campaign's own period (``for_period``): a distributed campaign's batch (its
    ``window``), a repeated campaign's period (its weeks start on Mondays), a UTC day for the others.
    ``period_origin`` is a UTC second one of the periods starts at (0: the epoch, a Thursday)."""

    max_reports: int | None = 1
    period_seconds: float | None = None
    max_epsilon: float | None = None
    period_origin: float = 0.0

    def __post_init__(self) -> None:
        if self.max_reports is not None and (not isinstance(self.max_reports, int) or self.max_reports < 1):
            raise ValueError("max_reports must be a positive integer or None")
        if self.period_seconds is not None and not self.period_seconds > 0:
            raise ValueError("period_seconds must be positive or None")
        if self.max_epsilon is not None and not (self.max_epsilon > 0 and math.isfinite(self.max_epsilon)):
            raise ValueError("max_epsilon must be a positive finite number or None")

    @classmethod
    def unlimited(cls) -> ReportPolicy:
        "No cap at all (simulations and tests; not for devices)"
        return cls(max_reports=None)

    def for_period(self, campaign_period: float, origin: float = 0.0) -> ReportPolicy:
        """This policy with ``campaign_period`` (seconds, starting at the UTC second ``origin`` and every period
        after it) as its period if it names none"""
        if self.period_seconds is not None:
            return self
        return ReportPolicy(self.max_reports, campaign_period, self.max_epsilon, origin)

    @property
    def seconds(self) -> float:
        "The period's length (a UTC day where none is named)"
        return DAY_SECONDS if self.period_seconds is None else self.period_seconds

    def period(self, now: float) -> int:
        "Index of the period ``now`` falls in (UTC days for a day's period), counted from ``period_origin``"
        return int((now - self.period_origin) // self.seconds)


@dataclass(frozen=True)
class Spending:
    "What a campaign has spent on this device"

    campaign: str
    epsilon: float
    reports: int
    delta: float = 0.0
    last_batch: str | None = None  # distributed campaigns: the latest batch reported to


class PrivacyLedger:
    "Epsilon and report counts per campaign, in the state file"

    def __init__(self, state: StateFile) -> None:
        self.state = state  # the tables are created by StateFile

    def refusal(self, campaign: str, epsilon: float, policy: ReportPolicy, now: float,
                batch: str | None = None, *, delta: float = 0.0, budget: Budget | None = None) -> str | None:
        """Why one more report under (``epsilon``, ``delta``) (for ``batch``, if named) would break ``policy`` or
        the campaign's ``budget`` (``client_sdk.budget``: the rule the collector's release ledger applies too), or
        None if allowed"""
        with self.state.lock:
            conn = self.state.conn
            if batch is not None:
                row = conn.execute("SELECT last_batch FROM ledger WHERE campaign = ?", (campaign,)).fetchone()
                if row and row[0] is not None and row[0] >= batch:
                    return f"one report per batch: this device reported to batch {row[0]} (now {batch})"
            if policy.max_reports is not None:
                row = conn.execute("SELECT reports FROM ledger_periods WHERE campaign = ? AND period = ?",
                                   (campaign, policy.period(now))).fetchone()
                if row and row[0] >= policy.max_reports:
                    return f"policy allows {policy.max_reports} report(s) per {policy.seconds:g} s"
            if policy.max_epsilon is not None:
                spent = self.spent(campaign).epsilon
                if spent + epsilon > policy.max_epsilon * (1 + 1e-12):
                    return f"epsilon budget {policy.max_epsilon:g} would be exceeded (spent {spent:g})"
            if budget is not None:
                spending = self.spent(campaign)
                reason = budget_refusal(budget, (spending.epsilon, spending.delta), (epsilon, delta))
                if reason is not None:
                    return reason
        return None

    def charge(self, campaign: str, epsilon: float, policy: ReportPolicy, now: float, *, delta: float = 0.0,
               batch: str | None = None) -> None:
        "Record one report under (``epsilon``, ``delta``), for ``batch`` (call inside the transaction that queues it)"
        with self.state.transaction() as conn:
            conn.execute("INSERT INTO ledger (campaign, epsilon, reports, delta, last_batch) VALUES (?, ?, 1, ?, ?) "
                         "ON CONFLICT(campaign) DO UPDATE SET epsilon = epsilon + excluded.epsilon, "
                         "reports = reports + 1, delta = delta + excluded.delta, "
                         "last_batch = coalesce(excluded.last_batch, last_batch)", (campaign, epsilon, delta, batch))
            period = policy.period(now)
            conn.execute("INSERT INTO ledger_periods (campaign, period, reports) VALUES (?, ?, 1) "
                         "ON CONFLICT(campaign, period) DO UPDATE SET reports = reports + 1", (campaign, period))
            conn.execute("DELETE FROM ledger_periods WHERE campaign = ? AND period < ?", (campaign, period))

    def spent(self, campaign: str) -> Spending:
        with self.state.lock:
            row = self.state.conn.execute("SELECT campaign, epsilon, reports, delta, last_batch FROM ledger "
                                          "WHERE campaign = ?", (campaign,)).fetchone()
        return Spending(*row) if row else Spending(campaign, 0.0, 0)

    def all_spent(self) -> list[Spending]:
        with self.state.lock:
            rows = self.state.conn.execute("SELECT campaign, epsilon, reports, delta, last_batch FROM ledger "
                                           "ORDER BY campaign").fetchall()
        return [Spending(*row) for row in rows]
