"""The release ledger: every release of every campaign, with what it spends per device, and the budget it may not pass.

A release is what leaves the collector about the devices' data:

* a distributed campaign's batch, recorded by the leader when it stores the batch's release (``collect``);
* a shuffled campaign's batch, recorded when the collector stores it (``POST /v1/shuffled-batches``): its charge
  is the batch's amplified guarantee at its size, ``estimators.composition.shuffled_release(epsilon0, size,
  delta)`` (Feldman, McMillan, Talwar 2021, Theorem 3.2, at the spec's delta or ``DEFAULT_DELTA``), one charge
  per batch: each device's report is in one batch, and a batch is (epsilon, delta)-DP for every device in it;
* a local campaign's window, recorded when the analyst publishes it (``POST /v1/campaigns/NAME/publish``,
  ``ldp-telemetry campaign publish NAME --window START:END``).  Every estimate the collector serves stays
  available to an admin key; publishing is the analyst's statement that a window's figures leave the team, and the
  ledger counts it.  A local report is epsilon-DP on its own, so what a device spends is one charge per report it
  can have made in the window: one per UTC day under the SDK's default policy (``ReportPolicy``, one report per
  campaign period), counted once per day however many published windows cover it (a second window over the
  same days re-publishes the same reports: post-processing, nothing more).

Each row holds the release's charge (``CampaignKind.ledger_charge``: what the device's own ledger charges per
report), its number of charges, and its mechanism (``estimators.release_ledger.mechanism_of``) for the tight
composition.  A release that would take the charges' sums past the spec's ``budget`` is refused,
:class:`BudgetExhausted` (409 ``budget-exhausted`` at the HTTP edge), by ``client_sdk.budget``'s rule, the one the
devices stop at.  The ledger covers a campaign's name across its versions: a device keeps reporting to the new
version, and the budget checked is that of the version released.

The table is registered with the storage layer's migrations (``collector.storage.register_migrations``, under the
name ``release_ledger``), so both backends create it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from client_sdk.budget import Budget, refusal
from client_sdk.errors import LDPError
from client_sdk.kinds import kind_of
from client_sdk.kinds.shuffle_params import DEFAULT_DELTA, shuffle_rule

from .storage import CampaignVersion, StorageBase
from .storage.kind_migrations import register_migrations

BUDGET_EXHAUSTED = "budget-exhausted"  # the problem type of a refused release
MAX_WINDOW_DAYS = 3660
LEDGER = "release_ledger"  # its migrations' name in kind_migrations
_TABLE = """CREATE TABLE IF NOT EXISTS release_ledger (campaign TEXT NOT NULL, release TEXT NOT NULL,
    version INTEGER NOT NULL, fingerprint TEXT NOT NULL, source TEXT NOT NULL, charges INTEGER NOT NULL,
    epsilon DOUBLE PRECISION NOT NULL, delta DOUBLE PRECISION NOT NULL, mechanism TEXT NOT NULL,
    days TEXT NOT NULL, recorded_day TEXT NOT NULL, PRIMARY KEY (campaign, release))"""


def create_table(conn: Any, dialect: str) -> None:
    "Migration 1: the ledger's one table (the same DDL in both dialects)"
    conn.execute(_TABLE)


MIGRATIONS = register_migrations(LEDGER, ((1, create_table),))


class LedgerError(LDPError):
    "A release the ledger will not record: its problem type (``slug``), detail and field"

    def __init__(self, slug: str, detail: str, field: str, extra: dict | None = None) -> None:
        super().__init__(detail)
        self.slug, self.detail, self.field, self.extra = slug, detail, field, extra or {}


class BudgetExhausted(LedgerError):
    "The release would take a device's spending past the campaign's budget"

    def __init__(self, detail: str, extra: dict) -> None:
        super().__init__(BUDGET_EXHAUSTED, detail, "budget", extra)


_MIGRATED: set[str] = set()  # the databases (``storage.location``) this process has brought to the ledger's table


def _ensure_table(storage: StorageBase) -> None:
    """Migrate once per database and process: a database made by a process that had not imported this module (a
    bare ``collector.storage`` user) lacks the table until a ``migrate()`` that knows it"""
    if storage.location not in _MIGRATED:
        storage.migrate()
        _MIGRATED.add(storage.location)


def charge_of(spec: Any) -> tuple[float, float]:
    "What one release of ``spec`` charges a device: its kind's charge for one report (the device's ledger's)"
    epsilon, delta = kind_of(spec).ledger_charge(spec)
    return float(epsilon), float(delta)


def spent(storage: StorageBase, name: str) -> tuple[float, float]:
    "The sums of the charges of every release of campaign ``name`` (the budget's rule)"
    _ensure_table(storage)
    rows = storage._all("SELECT epsilon, delta, charges FROM release_ledger WHERE campaign = ?", (name,))
    epsilon = sum(float(e) * int(c) for e, _, c in rows)  # summed as the device sums: in order, one by one
    delta = sum(float(d) * int(c) for _, d, c in rows)
    return epsilon, delta


def lock(storage: StorageBase, name: str) -> None:
    """Hold the ledger of campaign ``name`` until the caller's transaction ends, so that a check and the record
    after it are one step: of two releases checked at the same moment the second waits and sees the first's row.
    SQLite's transactions already hold the database's write lock from their start (BEGIN IMMEDIATE); PostgreSQL
    takes a transaction-level advisory lock on the campaign's name (its key: the first 8 bytes of a SHA-256)."""
    if storage.dialect == "postgresql":
        digest = hashlib.sha256(f"release_ledger:{name}".encode()).digest()
        storage._one("SELECT pg_advisory_xact_lock(?)", (int.from_bytes(digest[:8], "big", signed=True),))


def check(storage: StorageBase, campaign: CampaignVersion, charges: int = 1,
          charge: tuple[float, float] | None = None) -> None:
    """BudgetExhausted if ``charges`` more releases of ``campaign`` (each of ``charge``, by default the spec's)
    would pass its spec's budget"""
    budget: Budget | None = getattr(campaign.spec, "budget", None)
    if budget is None or charges == 0:
        return
    so_far = spent(storage, campaign.name)
    epsilon, delta = charge_of(campaign.spec) if charge is None else charge
    reason = refusal(budget, so_far, (epsilon * charges, delta * charges))
    if reason is not None:
        raise BudgetExhausted(
            f"campaign {campaign.name!r}: {reason}; nothing was released",
            {"budget": budget.to_json(), "spent": {"epsilon": so_far[0], "delta": so_far[1]},
             "charge": {"epsilon": epsilon * charges, "delta": delta * charges}})


def _record(storage: StorageBase, campaign: CampaignVersion, release: str, source: str, charges: int,
            days: Sequence[str], today: str, charged: tuple[float, float, dict] | None = None) -> bool:
    """Insert one row (False if that release is recorded already); inside the caller's transaction.  ``charged``:
    the release's (epsilon, delta, mechanism) when it is not the spec's (a shuffled batch's)"""
    if charged is None:
        # imported here: the estimators (dp-accounting, scipy) only when a release is recorded
        from estimators.release_ledger import mechanism_of

        epsilon, delta = charge_of(campaign.spec)
        mechanism = mechanism_of(campaign.spec)
    else:
        epsilon, delta, mechanism = charged
    return storage._run(
        "INSERT INTO release_ledger (campaign, release, version, fingerprint, source, charges, epsilon, delta, "
        "mechanism, days, recorded_day) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (campaign.name, release, campaign.version, campaign.fingerprint, source, charges, epsilon, delta,
         json.dumps(mechanism, sort_keys=True), json.dumps(list(days)), today)) > 0


def record_batch(storage: StorageBase, campaign: CampaignVersion, batch: str, today: str) -> bool:
    "A distributed batch's release (call in the transaction that stores it): one charge"
    return _record(storage, campaign, f"batch:{campaign.fingerprint}:{batch}", "batch", 1, [batch], today)


@lru_cache(maxsize=256)
def _amplified(epsilon0: float, size: int, delta: float) -> tuple[float, float]:
    # scipy: only once a shuffled batch is recorded
    from estimators.composition import shuffled_release

    return shuffled_release(epsilon0, size, delta).guarantee()


def shuffled_charge(campaign: CampaignVersion, size: int) -> tuple[float, float, dict]:
    "A shuffled batch of ``size`` reports: its amplified (epsilon, delta) and the mechanism row that states it"
    spec = campaign.spec
    epsilon, delta = _amplified(float(spec.epsilon), size, float(spec.delta) if spec.delta else DEFAULT_DELTA)
    return epsilon, delta, {"type": "approx", "epsilon": epsilon, "delta": delta,
                            "shuffled": {"epsilon0": float(spec.epsilon), "batch_size": size}}


def shuffled_release_id(campaign: CampaignVersion, batch_id: str) -> str:
    return f"shuffled:{campaign.fingerprint}:{batch_id}"


def check_shuffled_batch(storage: StorageBase, campaign: CampaignVersion, batch_id: str, size: int) -> None:
    "BudgetExhausted if a new shuffled batch of ``size`` reports would pass the budget (a recorded one passes)"
    _ensure_table(storage)
    if storage._one("SELECT 1 FROM release_ledger WHERE campaign = ? AND release = ?",
                    (campaign.name, shuffled_release_id(campaign, batch_id))) is None:
        check(storage, campaign, 1, shuffled_charge(campaign, size)[:2])


def record_shuffled_batch(storage: StorageBase, campaign: CampaignVersion, batch_id: str, size: int,
                          today: str) -> bool:
    """A shuffled batch's release, one charge of its amplified guarantee at ``size``, checked against the budget
    under the ledger's lock (:func:`lock`): call it in the transaction that stores the batch's reports, so that
    BudgetExhausted rolls them back.  False if the batch was recorded before (a resend: never refused).  The table
    must exist (:func:`check_shuffled_batch` before the transaction migrates it)"""
    lock(storage, campaign.name)
    release = shuffled_release_id(campaign, batch_id)
    if storage._one("SELECT 1 FROM release_ledger WHERE campaign = ? AND release = ?", (campaign.name, release)):
        return False
    charged = shuffled_charge(campaign, size)
    check(storage, campaign, 1, charged[:2])
    return _record(storage, campaign, release, "shuffled", 1, [today], today, charged)


def window_days(window: str) -> list[str]:
    "The UTC days of ``START:END`` (or one day); LedgerError naming ``window``"
    start, _, end = window.partition(":")
    try:
        first = dt.date.fromisoformat(start)
        last = dt.date.fromisoformat(end or start)
    except ValueError:
        raise LedgerError("invalid-field", "must be START:END, two UTC days YYYY-MM-DD", "window") from None
    count = (last - first).days + 1
    if not 1 <= count <= MAX_WINDOW_DAYS:
        raise LedgerError("invalid-field", f"must end on or after its start, at most {MAX_WINDOW_DAYS} days",
                          "window")
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(count)]


def publish_window(storage: StorageBase, campaign: CampaignVersion, window: str, today: str) -> dict:
    """Record the publication of a local campaign's window (idempotent for the same window): one charge per day
    no earlier publication covers; BudgetExhausted beyond the budget, LedgerError for a campaign whose releases are
    its batches (recorded at collection)"""
    if kind_of(campaign.spec).batch_of(campaign.spec, 0.0) is not None or shuffle_rule(campaign.spec) is not None:
        raise LedgerError("releases-are-batches", f"campaign {campaign.name!r} releases its batches: each is "
                          "recorded when it is collected, not published", "name")
    days = window_days(window)
    release = f"window:{days[0]}:{days[-1]}"
    _ensure_table(storage)
    with storage.transaction():
        lock(storage, campaign.name)
        covered: set[str] = set()
        for (text,) in storage._all("SELECT days FROM release_ledger WHERE campaign = ?", (campaign.name,)):
            covered.update(json.loads(text))
        new = [day for day in days if day not in covered]
        known = storage._one("SELECT 1 FROM release_ledger WHERE campaign = ? AND release = ?",
                             (campaign.name, release))
        if known is None:
            check(storage, campaign, len(new))  # under the lock taken above
            _record(storage, campaign, release, "window", len(new), new, today)
    return {"campaign": campaign.name, "release": release, "charges": 0 if known else len(new)}


def releases(storage: StorageBase, name: str) -> list[dict]:
    "Every recorded release of campaign ``name``, in the order recorded"
    _ensure_table(storage)
    rows = storage._all("SELECT release, version, fingerprint, source, charges, epsilon, delta, mechanism, days, "
                        "recorded_day FROM release_ledger WHERE campaign = ? ORDER BY recorded_day, release", (name,))
    keys = ("release", "version", "fingerprint", "source", "charges", "epsilon", "delta", "mechanism", "days",
            "recorded_day")
    out = [dict(zip(keys, row)) for row in rows]
    for item in out:
        item["mechanism"], item["days"] = json.loads(item["mechanism"]), json.loads(item["days"])
    return out


def budget_view(storage: StorageBase, campaign: CampaignVersion) -> dict:
    """What a device that entered every release of the campaign has spent (basic and tight), what remains of the
    budget of ``campaign``'s version, and the releases: the answer of ``GET /v1/campaigns/NAME/budget``"""
    # imported here: the composition (dp-accounting) only where the figures are asked for
    from estimators.release_ledger import LedgerRow, ledger_figures

    items = releases(storage, campaign.name)
    rows = [LedgerRow(i["release"], float(i["epsilon"]), float(i["delta"]), int(i["charges"]), i["mechanism"])
            for i in items]
    figures = ledger_figures(rows, getattr(campaign.spec, "budget", None))
    return {"campaign": campaign.name, "version": campaign.version, **figures, "ledger": items,
            "per_device": "a device whose data entered every release listed (one report per release's charge)"}
