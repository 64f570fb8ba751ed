"""A report's data from a collector: its database (``--db``) or its HTTP API (``--url``, admin key).

:func:`report_data_from_db` and :func:`report_data_from_url` return the :class:`~estimators.window.ReportData`
that the renderers take; ``ldp-telemetry report`` and the demo call them and hold none of this logic.  The
estimate itself is made by :func:`estimators.window.window_estimate`, the function the ``/estimate``
endpoint calls too; the release ledger's figures (``collector.release_ledger.budget_view``) go with it at
``budget``.  The HTTP API is read through :class:`collector.admin_client.AdminClient`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client_sdk.errors import SpecError
from estimators.errors import SourceError
from estimators.window import ReportData

from .admin_client import AdminClient, campaign_path
from .errors import AdminApiError
from .kinds import Window, collector_kind
from .release_ledger import budget_view
from .storage import CampaignNotFound, is_database_url, open_storage

HTTP_TIMEOUT_SECONDS = 60


def report_data_from_db(path: Path | str, campaign: str, *, since: str | None = None, until: str | None = None,
                        confidence: float = 0.95, daily: bool = True) -> ReportData:
    "The estimate, spec and (if ``daily``) per-day estimates of ``campaign`` from a collector database"
    if not is_database_url(path) and not Path(path).is_file():
        raise SourceError(f"no database at {path}")
    window = Window(since, until, confidence, daily)
    with open_storage(path) as storage:
        try:
            version = storage.get_campaign(campaign)
        except CampaignNotFound:
            raise SourceError(f"unknown campaign {campaign!r}") from None
        data = collector_kind(version.spec).report_data_from_db(storage, version, window)
        return with_budget(data, budget_view(storage, version))  # what a device has spent, what remains


def report_data_from_aggregate_file(path: Path | str, campaign: str, *, since: str | None = None,
                                    until: str | None = None, confidence: float = 0.95,
                                    daily: bool = True) -> ReportData:
    "The same from an aggregate file (``collector.archive``, as ``ldp-telemetry spark aggregate`` writes it)"
    # imported here: `report --db` does not load the archive reader
    from .archive import ArchiveError, read_aggregate_file

    try:
        loaded = read_aggregate_file(path)
    except ArchiveError as exc:
        raise SourceError(str(exc)) from None
    if loaded.spec.name != campaign:
        raise SourceError(f"{path} holds campaign {loaded.spec.name!r}, not {campaign!r}")
    window = Window(since, until, confidence, daily)
    return collector_kind(loaded.spec).report_data_from_aggregates(loaded.spec, loaded.window(since, until), window)


def report_data_from_url(url: str, token: str, campaign: str, *, since: str | None = None,
                         until: str | None = None, confidence: float = 0.95, daily: bool = True,
                         daily_top: int | None = None) -> ReportData:
    """The estimate, spec and per-day estimates of ``campaign`` from a running collector's HTTP API (admin key).

    Per-day estimates cost one request of O(days * d): they are asked for only with ``daily``, and with
    ``daily_top=K`` slim (the K values largest over the window, the fields a per-day figure needs)."""
    base = campaign_path(campaign)
    window = Window(since, until, confidence, daily)
    with AdminClient(url, token, timeout=HTTP_TIMEOUT_SECONDS) as client:

        def get(path: str, params: dict) -> Any:
            return _get_json(client, path, params, campaign)

        resource = get(base, {})
        spec_json = _spec_of(resource)
        try:
            kind = collector_kind(spec_json or {})
        except SpecError as exc:
            raise SourceError(f"campaign {campaign!r}: {exc}") from None
        data = kind.report_data_from_api(get, base, resource, spec_json, window, daily_top)
        return with_budget(data, get(base + "/budget", {}))  # the release ledger's figures


def _spec_of(campaign: Any) -> dict | None:
    "The spec inside a campaign resource (its ``spec`` member), or the resource itself if it is the spec"
    if not isinstance(campaign, dict):
        return None
    inner = campaign.get("spec")
    return inner if isinstance(inner, dict) else {k: v for k, v in campaign.items() if k != "versions"}


def _get_json(client: AdminClient, path: str, params: dict, campaign: str) -> Any:
    "GET ``path``; the admin client's errors as SourceErrors that name the campaign where they can"
    try:
        return client.get(path, params=params)
    except AdminApiError as exc:
        if exc.status == 404 and str(exc.problem.get("type", "")).endswith(":no-reports"):
            raise SourceError(f"campaign {campaign!r} has no reports in this window") from None
        if exc.status == 404:
            raise SourceError(f"unknown campaign {campaign!r}") from None
        if exc.status in (401, 403):
            raise SourceError(f"the collector refused the token (HTTP {exc.status})") from None
        raise SourceError(str(exc)) from None


def with_budget(data: ReportData, view: Any) -> ReportData:
    """``data`` with the release ledger's figures at ``budget`` when the campaign has a budget or a release (a report
    of a campaign with neither reads the same from the database, the API and an archive file)"""
    if isinstance(view, dict) and (view.get("ledger") or view.get("budget") is not None):
        data.result["budget"] = view
    return data
