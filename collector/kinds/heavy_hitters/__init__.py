"""The heavy_hitters kind, collector side: reports validated by the kind's codec (``parse_payload``), stored in the
kind's own tables as mergeable per-day aggregates (:mod:`.store`, its migrations), and decoded on request.

The HTTP answers (the estimate, its problems) are :mod:`.api`; a report's data from a database or a running
collector's admin API is built here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import estimators
from client_sdk.errors import PayloadError
from client_sdk.kinds.heavy_hitters import parse_payload, report_cell
from estimators.errors import SourceError
from estimators.kinds.heavy_hitters import empty_aggregate
from estimators.kinds.heavy_hitters.aggregate import payload_cells
from estimators.kinds.heavy_hitters.kind import HEAVY_HITTERS_ESTIMATES
from estimators.window import ReportData, finite_json

from ...storage import CampaignVersion, KindMigrations, StorageBase
from ..base import Accepted, CollectorKind, ReportItem, Window, register_collector_kind
from .store import KIND, MIGRATIONS, HeavyHittersStore

if TYPE_CHECKING:
    from flask import Response

    from ...archive_forms import ArchiveForm

# Function-level imports: the web stack (the request's storage, the Flask views of .api) only when a request is
# answered: `ldp-telemetry report --db` loads the kinds without Flask, as collector/kinds/local.py says.


class HeavyHittersCampaigns(CollectorKind):
    "Frequent strings of an unknown dictionary: the reports' codec, the kind's own tables, the decoders"

    name = KIND

    def migrations(self) -> KindMigrations:
        return MIGRATIONS

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        "Check each payload against its campaign's parameters, refuse repeated ids, store the rest in one transaction"
        from ...db import get_storage

        return accept(get_storage(), items, day)

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        from . import api

        return api.estimate_response(campaign)

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        return ReportData(window_estimate(storage, campaign, window.since, window.until, window.confidence),
                          campaign.spec.to_dict(), window.since, window.until)

    def archive_form(self, spec: Any) -> ArchiveForm:
        "The per-day count tables as (grp, cell, total) rows (``.archive``)"
        from .archive import HEAVY_HITTERS_ARCHIVE

        return HEAVY_HITTERS_ARCHIVE

    def report_data_from_aggregates(self, spec: Any, days: list[tuple[str, Any]], window: Window) -> ReportData:
        "The decode of the days' count tables merged, as from the database"
        total = empty_aggregate(spec.params)
        for _, aggregate in days:
            total = total.merge(aggregate)
        return ReportData(estimate_json(spec, total, window.confidence), spec.to_dict(), window.since, window.until)


def accept(storage: StorageBase, items: Sequence[ReportItem], day: str) -> Accepted:
    """The reports of one POST /v1/reports batch for heavy_hitters campaigns (see accept_reports).  Per campaign
    version the payloads are checked together (``payload_cells``, the estimator's ``add()`` code); only a version
    with a bad payload (or one of the older list form) is parsed report by report, to reject each bad one by its
    field"""
    outcome = Accepted()
    by_version: dict[str, list[ReportItem]] = {}
    for item in items:
        by_version.setdefault(item[2].fingerprint, []).append(item)
    valid: dict[str, tuple[CampaignVersion, list[str], np.ndarray]] = {}  # per version: ids, cells
    batch_ids: set[str] = set()
    for fingerprint, group in by_version.items():
        campaign = group[0][2]
        params = campaign.spec.params
        cells = payload_cells(params, [report["payload"] for _, report, _ in group])
        if cells is None:
            keep, parsed_cells = [], []
            for position, (index, report, _) in enumerate(group):
                try:
                    parsed = parse_payload(params, report["payload"])
                except PayloadError as exc:
                    outcome.rejected.append((index, report["report_id"], exc.field, exc.reason))
                else:
                    keep.append(position)
                    parsed_cells.append(report_cell(params, parsed))
            group = [group[position] for position in keep]
            cells = np.array(parsed_cells, dtype=np.int64)
        ids = [report["report_id"] for _, report, _ in group]
        unique = set(ids)
        if len(unique) == len(ids) and batch_ids.isdisjoint(unique):  # the usual batch: no id repeated
            batch_ids |= unique
            valid[fingerprint] = (campaign, ids, cells)
            continue
        rows = []
        for position, report_id in enumerate(ids):
            if report_id in batch_ids:
                outcome.duplicate += 1
                continue
            batch_ids.add(report_id)
            rows.append(position)
        valid[fingerprint] = (campaign, [ids[i] for i in rows], cells[rows])
    store = HeavyHittersStore(storage)
    with storage.transaction():
        seen = store.seen(sorted(batch_ids))
        for campaign, ids, cells in valid.values():
            if not ids:
                continue
            if seen.isdisjoint(ids):  # the usual batch: none stored before
                store.add(campaign, day, ids, cells)
                outcome.accepted += len(ids)
                continue
            fresh = [position for position, report_id in enumerate(ids) if report_id not in seen]
            outcome.duplicate += len(ids) - len(fresh)
            if fresh:
                store.add(campaign, day, [ids[i] for i in fresh], cells[fresh])
                outcome.accepted += len(fresh)
    return outcome


def window_estimate(storage: StorageBase, campaign: CampaignVersion, since: str | None, until: str | None,
                    confidence: float) -> dict:
    "The estimate JSON of the version's reports in [since, until]; SourceError when there are none"
    store = HeavyHittersStore(storage)
    return estimate_json(campaign.spec, store.aggregate(campaign, store.days(campaign, since, until)), confidence)


def estimate_json(spec: Any, aggregate: Any, confidence: float) -> dict:
    "The estimate JSON of a merged aggregate; SourceError when it holds no reports"
    try:
        estimate = HEAVY_HITTERS_ESTIMATES.estimate(spec, aggregate, confidence)
    except estimators.NoReports:
        raise SourceError(f"campaign {spec.name!r} has no reports in this window") from None
    return dict(finite_json(estimate.to_json()))


HEAVY_HITTERS = register_collector_kind(HeavyHittersCampaigns())
