"""A report's data from a collector: its database (``--db``) or its HTTP API (``--url``, admin key).

:func:`report_data_from_db` and :func:`report_data_from_url` return the :class:`~estimators.window.ReportData`
that the renderers take; ``ldp-telemetry report`` and the demo call them and hold none of this logic.  The
estimate itself is made by :func:`estimators.window.window_estimate`, the function the ``/estimate``
endpoint calls too.  The HTTP API is read through :class:`collector.admin_client.AdminClient`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import estimators
from estimators.errors import SourceError
from estimators.window import (
    DailyResult,
    ReportData,
    daily_estimates,
    daily_releases,
    in_window,
    is_distributed_spec,
    releases_estimate,
    window_estimate,
)

from .admin_client import AdminClient, campaign_path
from .archive import ArchiveError, read_aggregate_file
from .distributed.store import DistStore
from .errors import AdminApiError
from .storage import CampaignNotFound, is_database_url, open_storage

HTTP_TIMEOUT_SECONDS = 60


def report_data_from_db(path: Path | str, campaign: str, *, since: str | None = None, until: str | None = None,
                        confidence: float = 0.95, daily: bool = True) -> ReportData:
    "The estimate, spec and (if ``daily``) per-day estimates of ``campaign`` from a collector database"
    if not is_database_url(path) and not Path(path).is_file():
        raise SourceError(f"no database at {path}")
    with open_storage(path) as storage:
        try:
            version = storage.get_campaign(campaign)
        except CampaignNotFound:
            raise SourceError(f"unknown campaign {campaign!r}") from None
        if is_distributed_spec(version.spec):
            releases = [r for r in DistStore(storage).releases(campaign) if r.get("fingerprint") ==
                        version.spec.fingerprint]
            return _distributed_data(version.spec, version.spec.to_dict(), releases, since, until, confidence, daily)
        days = storage.aggregates_by_day(version, since, until)
    total = estimators.Aggregate.empty(version.spec)
    for _, aggregate in days:
        total = total.merge(aggregate)
    try:
        result = window_estimate(version.spec, total, confidence)
    except estimators.NoReports:
        raise SourceError(f"campaign {campaign!r} has no reports in this window") from None
    per_day = daily_estimates(version.spec, days, confidence) if daily else []
    return ReportData(result, version.spec.to_dict(), since, until, per_day)


def report_data_from_aggregate_file(path: Path | str, campaign: str, *, since: str | None = None,
                                    until: str | None = None, confidence: float = 0.95,
                                    daily: bool = True) -> ReportData:
    "The same from an aggregate file (``collector.archive``, as ``ldp-telemetry spark aggregate`` writes it)"
    try:
        loaded = read_aggregate_file(path)
    except ArchiveError as exc:
        raise SourceError(str(exc)) from None
    if loaded.spec.name != campaign:
        raise SourceError(f"{path} holds campaign {loaded.spec.name!r}, not {campaign!r}")
    days = loaded.window(since, until)
    try:
        result = window_estimate(loaded.spec, loaded.total(since, until), confidence)
    except estimators.NoReports:
        raise SourceError(f"campaign {campaign!r} has no reports in this window") from None
    per_day = daily_estimates(loaded.spec, days, confidence) if daily else []
    return ReportData(result, loaded.spec.to_dict(), since, until, per_day)


def report_data_from_url(url: str, token: str, campaign: str, *, since: str | None = None,
                         until: str | None = None, confidence: float = 0.95, daily: bool = True,
                         daily_top: int | None = None) -> ReportData:
    """The estimate, spec and per-day estimates of ``campaign`` from a running collector's HTTP API (admin key).

    Per-day estimates cost one request of O(days * d): they are asked for only with ``daily``, and with
    ``daily_top=K`` slim (the K values largest over the window, the fields a per-day figure needs)."""
    base = campaign_path(campaign)
    params: dict[str, Any] = {key: value for key, value in (("since", since), ("until", until)) if value}
    params["confidence"] = confidence
    with AdminClient(url, token, timeout=HTTP_TIMEOUT_SECONDS) as client:
        return _data_from_api(client, base, campaign, params, since, until, confidence, daily, daily_top)


def _data_from_api(client: AdminClient, base: str, campaign: str, params: dict[str, Any], since: str | None,
                   until: str | None, confidence: float, daily: bool, daily_top: int | None) -> ReportData:
    spec = _get_json(client, base, {}, campaign)
    spec_json = _spec_of(spec)
    if is_distributed_spec(spec_json):  # the leader's releases, estimated here as from a database
        answer = _get_json(client, base + "/releases", {}, campaign)
        releases = answer.get("releases", []) if isinstance(answer, dict) else answer
        fingerprint = (spec_json or {}).get("fingerprint") or (spec if isinstance(spec, dict) else {}).get(
            "fingerprint")
        releases = [r for r in releases if not fingerprint or r.get("fingerprint") == fingerprint]
        return _distributed_data(spec_json, spec_json, releases, since, until, confidence, daily)
    result = _get_json(client, base + "/estimate", params, campaign)
    result.pop("window", None)
    days: list = []
    if daily:
        day_params = {**params, "granularity": "day", **({"top": daily_top} if daily_top else {})}
        days = _get_json(client, base + "/estimate", day_params, campaign).get("days", [])
    per_day = [DailyResult(day.pop("day"), day) for day in days] if len(days) > 1 else []
    return ReportData(result, _spec_of(spec), since, until, per_day)


def _distributed_data(spec: Any, spec_json: dict | None, releases: list[dict], since: str | None,
                      until: str | None, confidence: float, daily: bool) -> ReportData:
    "A distributed campaign's report data: the releases of the window added up, one estimate per batch"
    chosen = in_window(releases, since, until)
    try:
        result = releases_estimate(spec, chosen, confidence)
    except estimators.NoReports:
        raise SourceError(f"campaign {(spec_json or {}).get('name', '')!r} has no release in this window: collect "
                          "a batch first (ldp-telemetry campaign collect)") from None
    except ValueError as exc:  # a release that is not the spec's (ReleaseMismatch) or malformed
        raise SourceError(f"cannot estimate from the releases: {exc}") from None
    per_batch = daily_releases(spec, chosen, confidence) if daily else []
    return ReportData(result, spec_json, since, until, per_batch)


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
