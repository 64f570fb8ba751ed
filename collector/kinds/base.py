"""The registry of campaign kinds, collector side: how a kind's campaigns are created, listed, take reports and are
estimated, each with its own store.

Each kind registers one :class:`CollectorKind` (:func:`register_collector_kind`) under the name its device side
registered in :mod:`client_sdk.kinds`.  The blueprints (``collector.api``), ``collector.reporting`` and the CLI
look a campaign's kind up with :func:`collector_kind` and call it; none of them asks which kind it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

from client_sdk.kinds import Registry

from ..storage.kind_migrations import register_migrations

if TYPE_CHECKING:
    from flask import Response

    from estimators.mechanisms import ServerMechanism
    from estimators.window import ReportData

    from ..archive_forms import ArchiveForm
    from ..storage import CampaignVersion, KindMigrations, StorageBase

ApiGet = Callable[[str, dict], Any]  # GET a path of the admin API with query parameters, its JSON
# (index in the POST /v1/reports batch, the report, its campaign version)
ReportItem = tuple[int, dict, "CampaignVersion"]


@dataclass
class Accepted:
    "What a kind's :meth:`CollectorKind.accept_reports` did with its reports of one batch"

    accepted: int = 0
    duplicate: int = 0
    rejected: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index, report id, field, reason)


@dataclass(frozen=True)
class Peers:
    "Where a kind that provisions its campaigns on other aggregators first reaches them (the CLI's options)"

    helper_url: str | None = None
    peer_token: str | None = None


@dataclass(frozen=True)
class Window:
    "The window and confidence a report asks for"

    since: str | None
    until: str | None
    confidence: float
    daily: bool


class CollectorKind:
    """One campaign kind's collector side; the defaults are those of a kind stored like local campaigns.

    Reports of a kind whose :meth:`server_mechanism` is not None are checked, aggregated and stored by the
    ingest blueprint with the storage's rows and aggregates; the others are handed to :meth:`accept_reports`."""

    name: ClassVar[str] = ""

    def listing_cache_key(self, campaign: CampaignVersion) -> tuple | None:
        """What the campaign listing's cached body depends on beyond the campaign's row (nothing here: the row
        alone makes its entry); None when its entry cannot be cached"""
        return ()

    def migrations(self) -> KindMigrations | None:
        """The migrations of the kind's own tables (``collector.storage.register_migrations``), registered with the
        kind and applied by every storage's ``migrate()``; None for a kind without tables of its own"""
        return None

    def create_campaign(self, storage: StorageBase, body: dict, day: str) -> tuple[CampaignVersion, bool]:
        "POST /v1/campaigns: the new (or identical existing) version"
        return storage.create_campaign(body, day)

    def provision_campaign(self, storage: StorageBase, body: dict, day: str,
                           peers: Peers) -> tuple[CampaignVersion, bool, dict]:
        """``ldp-telemetry campaign create --db``: the new (or identical existing) version in ``storage``, provisioned
        first wherever the kind's campaigns must be (with ``peers``), and the members the command's output carries
        beyond the campaign's; ProvisionError when that cannot be done"""
        campaign, created = storage.create_campaign(body, day)
        return campaign, created, {}

    def creation_notes(self, campaign: CampaignVersion) -> list[str]:
        "One-line notes for whoever created ``campaign`` (e.g. that its reports cannot be estimated yet)"
        return []

    def api_fields(self, campaign: CampaignVersion) -> dict:
        "Members the campaign's API form carries beyond the spec (a distributed campaign's aggregators)"
        return {}

    def progress_route(self, campaign: CampaignVersion) -> str | None:
        "The leader's route of the progress of the campaign's batches (the dashboard shows it), None without batches"
        return None

    def server_mechanism(self, spec: Any) -> ServerMechanism | None:
        "The mechanism that checks and aggregates its payloads at ingestion, or None (see accept_reports)"
        return None

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        "Check and store the reports of a POST /v1/reports batch that no server mechanism takes"
        raise NotImplementedError

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        "GET /v1/campaigns/<name>/estimate"
        raise NotImplementedError

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        "A report's data from the collector's database"
        raise NotImplementedError

    def archive_form(self, spec: Any) -> ArchiveForm | None:
        """How the kind's stored data goes to Parquet and Spark re-aggregates it, or None when the campaign keeps
        nothing to archive: here, one row per stored report of a campaign whose devices randomize"""
        # imported here: the registry is loaded by every command, the archive and the device kinds by export only
        from client_sdk.errors import SpecError
        from client_sdk.kinds import kind_of

        from ..archive_forms import PAYLOAD_ARCHIVE

        try:
            kind_of(spec).require_randomizer(spec)  # a distributed campaign's stored shares are not its reports
        except SpecError:
            return None
        return PAYLOAD_ARCHIVE

    def report_data_from_aggregates(self, spec: Any, days: list[tuple[str, Any]], window: Window) -> ReportData:
        """A report's data from per-day aggregates (an aggregate file: ``ldp-telemetry report --aggregate``), those
        of :meth:`archive_form`, the window's days only; SourceError when they cannot be estimated"""
        # imported here: estimators load numpy (+250 ms), which a collector kind's import does not need
        import estimators
        from estimators.errors import SourceError
        from estimators.window import ReportData, daily_estimates, window_estimate

        total = estimators.Aggregate.empty(spec)
        for _, aggregate in days:
            total = total.merge(aggregate)
        try:
            estimators.mechanism_for(spec).check_estimable()
            result = window_estimate(spec, total, window.confidence)
        except estimators.CandidatesRequired as exc:
            raise SourceError(str(exc)) from None
        except estimators.NoReports:
            raise SourceError(f"campaign {spec.name!r} has no reports in this window") from None
        per_day = daily_estimates(spec, days, window.confidence) if window.daily else []
        return ReportData(result, spec.to_dict(), window.since, window.until, per_day)

    def report_data_from_api(self, get: ApiGet, base: str, resource: Any, spec_json: dict | None,
                             window: Window, daily_top: int | None) -> ReportData:
        """A report's data from a running collector's admin API: ``get(path, params)`` reads it (errors as
        SourceErrors), ``base`` is the campaign's path, ``resource`` what GET ``base`` answered.  Here: the
        campaign's ``/estimate`` for the window, for a kind whose estimate answers the whole report"""
        # imported here: estimators.window loads numpy, which a collector kind's import does not need
        from estimators.window import ReportData

        params: dict[str, Any] = {key: value for key, value in (("since", window.since), ("until", window.until))
                                  if value}
        params["confidence"] = window.confidence
        result = get(base + "/estimate", params)
        result.pop("window", None)
        return ReportData(result, spec_json, window.since, window.until)


_KINDS = Registry("collector side")


def register_collector_kind(kind: CollectorKind) -> CollectorKind:
    """Register the collector side of a kind whose device side is registered (client_sdk.kinds.register_kind), with
    the migrations of its tables"""
    migrations = kind.migrations()
    if migrations is not None:
        register_migrations(migrations.kind, migrations.steps)
    return cast(CollectorKind, _KINDS.register(kind))


def unregister_collector_kind(name: str) -> None:
    _KINDS.unregister(name)


def collector_kind(spec: Any) -> CollectorKind:
    "The collector side of a spec's kind (a Spec or its JSON; its ``trust``); SpecError('trust') for none"
    return cast(CollectorKind, _KINDS.of(spec))
