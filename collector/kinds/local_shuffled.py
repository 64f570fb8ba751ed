"""Shuffled local campaigns, collector side: the batches their shuffler forwarded, and the guarantee of each.

A shuffled campaign (``"trust": "shuffled"``) is a local one whose reports reach the collector only in a
shuffler's batches (``POST /v1/shuffled-batches``, ``collector.api.shuffled``).  Its reports are stored as any
local campaign's; the table ``shuffled_batches`` holds per batch its random id (the shuffler's, so a resent batch
is recorded once), campaign version, UTC day and size: nothing per report, nothing about any request of a device
(the collector never sees one).  Each report is one of ``size`` shuffled epsilon0-LDP reports, so its batch's
central guarantee is ``estimators.shuffle.amplification(epsilon0, size, delta)``: :func:`shuffle_block` lists it
per batch size beside epsilon0, with the closed form.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from client_sdk.kinds.shuffle_params import DEFAULT_DELTA

from ..storage import CampaignVersion, StorageBase
from ..storage.kind_migrations import KindMigrations
from .local_rejections import create_rejections

KIND = "local"  # the local kind owns these tables (its migrations are recorded under this name)

_TABLE = """CREATE TABLE IF NOT EXISTS shuffled_batches (batch_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
fingerprint TEXT NOT NULL, day TEXT NOT NULL, size INTEGER NOT NULL)"""
_INDEX = "CREATE INDEX IF NOT EXISTS shuffled_batches_version ON shuffled_batches (campaign, fingerprint)"


def _create(conn: Any, dialect: str) -> None:
    conn.execute(_TABLE)
    conn.execute(_INDEX)


MIGRATIONS = KindMigrations(KIND, ((1, _create), (2, create_rejections)))  # 2: local_rejections


def record_batch(storage: StorageBase, batch_id: str, campaign: CampaignVersion, day: str, size: int) -> bool:
    "Record a forwarded batch once (a resent one is not recorded again); True if it is new; in a transaction"
    return storage._run("INSERT INTO shuffled_batches (batch_id, campaign, fingerprint, day, size) "
                        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (batch_id, campaign.name, campaign.fingerprint, day, size)) > 0


def batch_sizes(storage: StorageBase, campaign: CampaignVersion, since: str | None = None,
                until: str | None = None) -> dict[int, int]:
    "How many batches of each size the version's shuffler forwarded in the window: {size: batches}"
    rows = storage._all("SELECT size, day FROM shuffled_batches WHERE campaign = ? AND fingerprint = ?",
                        (campaign.name, campaign.fingerprint))
    out: dict[int, int] = {}
    for size, day in rows:
        if (since is None or day >= since) and (until is None or day <= until):
            out[int(size)] = out.get(int(size), 0) + 1
    return dict(sorted(out.items()))


@lru_cache(maxsize=1024)
def _amplification(epsilon0: float, size: int, delta: float) -> dict:
    # scipy: only once a shuffled campaign is estimated
    from estimators.shuffle import amplification

    return amplification(epsilon0, size, delta).describe()


def shuffle_block(spec: Any, sizes: dict[int, int]) -> dict:
    """The ``shuffle`` member of a shuffled campaign's estimate: epsilon0, delta, the batching rule, and per batch
    size the amplified (epsilon, delta) (numerical bound, closed form beside it); ``weakest`` is the smallest
    batch's, the guarantee every report of the window has at least"""
    delta = float(spec.delta) if spec.delta is not None else DEFAULT_DELTA
    epsilon0 = float(spec.epsilon)
    rows = []
    for size, count in sizes.items():
        described = _amplification(epsilon0, size, delta)
        rows.append({"batch_size": size, "batches": count, "epsilon": described["epsilon"],
                     "closed_form_epsilon": described["closed_form_epsilon"],
                     "closed_form_applies": described["closed_form_applies"]})
    # scipy: only once a shuffled campaign is estimated
    from estimators.shuffle import BOUND, CLOSED_FORM, HOLDS_FOR

    shuffle = spec.params.shuffle
    return {"epsilon0": epsilon0, "delta": delta, "shuffle_batch": shuffle.shuffle_batch,
            "short_batch": shuffle.short_batch, "shuffle_timeout": shuffle.shuffle_timeout,
            "batches": rows, "weakest": rows[0] if rows else None, "bound": BOUND, "holds_for": HOLDS_FOR,
            "closed_form": CLOSED_FORM, "relation": "replace-one"}


def with_shuffle_block(storage: StorageBase, campaign: CampaignVersion, result: dict, since: str | None = None,
                       until: str | None = None) -> dict:
    "An estimate's JSON with the ``shuffle`` member when its campaign is shuffled (else as it is)"
    if getattr(campaign.spec.params, "shuffle", None) is None:
        return result
    return {**result, "shuffle": shuffle_block(campaign.spec, batch_sizes(storage, campaign, since, until))}
