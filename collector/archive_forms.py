"""How a campaign kind's stored data goes to the Parquet archive and comes back as per-day aggregates on Spark.

Each kind answers :meth:`collector.kinds.CollectorKind.archive_form` with an :class:`ArchiveForm`; the exporter
(``collector.archive``), the Spark job (``collector.spark_aggregate``) and the aggregate file call it and never ask
which kind a campaign is.  :class:`PayloadArchive` is the form of campaigns stored as rows and per-day aggregates
(the local kind): one ``payload`` column of tagged payloads, re-aggregated by ``estimators.aggregate``.

A form says: the day files' columns (``schema``), the days with reports and their report counts (``days``), a day's
rows in chunks (``day_chunks``), the aggregate of a batch of rows (``aggregate_batch``, run in Spark's tasks), an
aggregate as the aggregate file's JSON and back (``day_json``, ``day_from_json``), the empty aggregate (``empty``)
and the reports an aggregate counts (``reports``).
Aggregates merge with their own ``merge``.  pyarrow is imported by the methods that need it (the archive extra).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import estimators

from .errors import ArchiveError
from .report_codec import decode_payload, untagged

if TYPE_CHECKING:
    from client_sdk.spec import Spec

    from .storage import CampaignVersion, StorageBase


class ArchiveForm:
    "One kind's archive columns and re-aggregation (see the module's docstring)"

    columns: tuple[str, ...] = ()

    def schema(self) -> Any:
        "The pyarrow schema of a day file"
        raise NotImplementedError

    def days(self, storage: StorageBase, campaign: CampaignVersion, since: str | None,
             until: str | None) -> list[tuple[str, int]]:
        "(day, reports) of every day in [since, until] with reports, in day order"
        raise NotImplementedError

    def day_chunks(self, storage: StorageBase, campaign: CampaignVersion, day: str) -> Iterator[dict[str, list]]:
        "A day's rows, a chunk at a time, as columns (name: values)"
        raise NotImplementedError

    def check_written(self, campaign: CampaignVersion, day: str, rows: int, reports: int) -> None:
        "ArchiveError if a day file of ``rows`` rows cannot hold the day's ``reports`` (here: anything can)"

    def aggregate_batch(self, spec: Spec, days: Sequence[str], columns: dict[str, list]) -> dict[str, Any]:
        "The aggregate of each day's rows of one batch (ArchiveError for rows this form never writes)"
        raise NotImplementedError

    def empty(self, spec: Spec) -> Any:
        raise NotImplementedError

    def reports(self, aggregate: Any) -> int:
        "The reports an aggregate counts"
        raise NotImplementedError

    def day_json(self, aggregate: Any) -> dict:
        "The members of one day's entry in the aggregate file (besides ``day``)"
        raise NotImplementedError

    def day_from_json(self, spec: Spec, entry: dict) -> Any:
        raise NotImplementedError


class PayloadArchive(ArchiveForm):
    """Reports stored one row each: the ``payload`` column holds the tagged bytes every backend keeps
    (``collector.report_codec``); a day's aggregate is ``estimators.aggregate`` of its decoded payloads"""

    columns = ("payload",)

    def schema(self) -> Any:
        # pyarrow: the optional archive extra, imported where used
        import pyarrow as pa

        return pa.schema([pa.field("payload", pa.binary(), nullable=False)])

    def days(self, storage: StorageBase, campaign: CampaignVersion, since: str | None,
             until: str | None) -> list[tuple[str, int]]:
        return [(day, aggregate.n) for day, aggregate in storage.aggregates_by_day(campaign, since, until)
                if aggregate.n]

    def day_chunks(self, storage: StorageBase, campaign: CampaignVersion, day: str) -> Iterator[dict[str, list]]:
        for chunk in storage.tagged_payload_chunks(campaign, day):
            yield {"payload": chunk}

    def check_written(self, campaign: CampaignVersion, day: str, rows: int, reports: int) -> None:
        "One row per report: the aggregates count every stored report in the same transaction"
        if rows != reports:
            raise ArchiveError(f"{campaign.name} v{campaign.version} {day}: {rows} reports stored, {reports} "
                               "counted by the aggregates")

    def aggregate_batch(self, spec: Spec, days: Sequence[str], columns: dict[str, list]) -> dict[str, Any]:
        by_day: dict[str, list[Any]] = {}
        for day, stored in zip(days, columns["payload"]):
            by_day.setdefault(day, []).append(decode_payload(spec.mechanism, untagged(stored)))
        return {day: estimators.aggregate(spec, payloads) for day, payloads in by_day.items()}

    def empty(self, spec: Spec) -> Any:
        return estimators.Aggregate.empty(spec)

    def reports(self, aggregate: Any) -> int:
        return int(aggregate.n)

    def day_json(self, aggregate: Any) -> dict:
        return {"n": aggregate.n, "counts": aggregate.to_dict()["counts"]}

    def day_from_json(self, spec: Spec, entry: dict) -> Any:
        return estimators.Aggregate.from_dict({"mechanism": spec.mechanism, "fingerprint": spec.fingerprint,
                                               "n": entry["n"], "counts": entry["counts"]})


PAYLOAD_ARCHIVE = PayloadArchive()
