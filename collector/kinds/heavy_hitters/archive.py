"""The heavy_hitters kind's archive form: its per-day count tables as Parquet rows, re-aggregated by addition.

The kind keeps no report one by one (``.store``: a report id, its day, and the day's count table), so a day file
holds the day's aggregate: one row per non-zero cell, ``(grp, cell, total)`` with ``cell`` = row * columns + column
of the group's table (PEM's (hash, y) report counts, SFP's sketch sums), and one row per group with reports,
``(grp, null, reports)``: the group's report count.  A re-aggregation sums the rows of each (day, group, cell); what
Spark returns is the store's aggregate of every day, integer for integer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from client_sdk.errors import PayloadError
from estimators.kinds.heavy_hitters import PemAggregate, SfpAggregate, aggregate_json, empty_aggregate

from ...archive_forms import ArchiveForm
from ...errors import ArchiveError
from ...storage import CampaignVersion, StorageBase
from .store import HeavyHittersStore

COLUMNS = ("grp", "cell", "total")


class HeavyHittersArchive(ArchiveForm):
    "A day's count table as (grp, cell, total) rows; cell null: the group's report count"

    columns = COLUMNS

    def schema(self) -> Any:
        # pyarrow: the optional archive extra, imported where used
        import pyarrow as pa

        return pa.schema([pa.field("grp", pa.int32(), nullable=False), pa.field("cell", pa.int64()),
                          pa.field("total", pa.int64(), nullable=False)])

    def days(self, storage: StorageBase, campaign: CampaignVersion, since: str | None,
             until: str | None) -> list[tuple[str, int]]:
        store = HeavyHittersStore(storage)
        out = []
        for day in store.days(campaign, since, until):
            reports = int(store.aggregate(campaign, [day]).counts.sum())
            if reports:
                out.append((day, reports))
        return out

    def day_chunks(self, storage: StorageBase, campaign: CampaignVersion, day: str) -> Iterator[dict[str, list]]:
        aggregate = HeavyHittersStore(storage).aggregate(campaign, [day])
        flat = aggregate.cells.reshape(aggregate.params.groups, -1)
        groups, cells = np.nonzero(flat)
        counted = np.flatnonzero(aggregate.counts)
        yield {"grp": groups.tolist() + counted.tolist(),
               "cell": cells.tolist() + [None] * len(counted),
               "total": flat[groups, cells].tolist() + aggregate.counts[counted].tolist()}

    def aggregate_batch(self, spec: Any, days: Sequence[str], columns: dict[str, list]) -> dict[str, Any]:
        params = spec.params
        size = empty_aggregate(params).cells[0].size
        by_day: dict[str, list[tuple[int, int | None, int]]] = {}
        for day, row in zip(days, zip(*(columns[name] for name in COLUMNS))):
            by_day.setdefault(day, []).append(row)
        out = {}
        for day, rows in by_day.items():
            aggregate = empty_aggregate(params)
            flat = aggregate.cells.reshape(params.groups, -1)
            for group, cell, total in rows:
                if not 0 <= group < params.groups or (cell is not None and not 0 <= cell < size):
                    raise ArchiveError(f"day {day}: row ({group}, {cell}) is outside the campaign's tables")
                if cell is None:
                    aggregate.counts[group] += total
                else:
                    flat[group, cell] += total
            out[day] = aggregate
        return out

    def empty(self, spec: Any) -> PemAggregate | SfpAggregate:
        return empty_aggregate(spec.params)

    def reports(self, aggregate: Any) -> int:
        return int(aggregate.counts.sum())

    def day_json(self, aggregate: Any) -> dict:
        return {"n": self.reports(aggregate), "aggregate": aggregate.to_json()}

    def day_from_json(self, spec: Any, entry: dict) -> PemAggregate | SfpAggregate:
        try:
            return aggregate_json(spec.params, entry["aggregate"])
        except PayloadError as exc:
            raise ArchiveError(f"day {entry.get('day')}: the aggregate's {exc.field} {exc.reason}") from None


HEAVY_HITTERS_ARCHIVE = HeavyHittersArchive()
