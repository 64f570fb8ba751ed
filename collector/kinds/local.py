"""The local-DP kind, collector side: reports checked and aggregated at ingestion by the campaign's server
mechanism, stored as rows and per-day aggregates (``collector.storage``), estimated from merged aggregates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import estimators
from estimators.errors import CandidatesRequired, SourceError
from estimators.kinds.local import LOCAL_ESTIMATES
from estimators.mechanisms import ServerMechanism, mechanism_for
from estimators.window import DailyResult, ReportData, finite_json

from ..errors import Problem
from ..storage import CampaignVersion, KindMigrations, StorageBase
from .base import ApiGet, CollectorKind, Window, register_collector_kind
from .local_shuffled import MIGRATIONS, with_shuffle_block

if TYPE_CHECKING:
    from flask import Response


class LocalCampaigns(CollectorKind):
    "Local differential privacy: rows and aggregates in the collector's own storage"

    name = "local"

    def migrations(self) -> KindMigrations | None:
        "The batches shuffled campaigns' shufflers forwarded (``collector.kinds.local_shuffled``)"
        return MIGRATIONS

    def server_mechanism(self, spec: Any) -> ServerMechanism | None:
        return mechanism_for(spec)

    def creation_notes(self, campaign: CampaignVersion) -> list[str]:
        try:
            mechanism_for(campaign.spec).check_estimable()
        except CandidatesRequired as exc:
            return [f"{exc} (until then its reports are stored, not estimated)"]
        return []

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        "De-biased estimate from the stored aggregates, over [since, until] or per day (``granularity``)"
        # the web stack here only: `ldp-telemetry report --db` loads the kinds without Flask (+0.2 s of start-up)
        from flask import current_app, jsonify, request

        from ..api.args import confidence_arg, day_arg, int_arg
        from ..db import get_storage
        from ..problems import invalid

        _require_estimable(campaign)
        confidence = confidence_arg()
        since, until = day_arg("since"), day_arg("until")
        if since and until and since > until:
            raise invalid("since", "must not be after until")
        granularity = request.args.get("granularity", "total")
        if granularity not in ("total", "day"):
            raise invalid("granularity", "must be 'total' or 'day'")
        storage = get_storage()
        window = {"version": campaign.version, "since": since, "until": until}
        if granularity == "total":
            aggregate = storage.read_aggregate(campaign, since, until)
            result = with_shuffle_block(storage, campaign, _estimate(campaign, aggregate, confidence), since, until)
            return jsonify({**result, "window": window})
        days = storage.aggregates_by_day(campaign, since, until)
        limit = int(current_app.config["MAX_ESTIMATE_DAYS"])
        if len(days) > limit:
            raise invalid("granularity", f"window has {len(days)} days; per-day estimates answer at most {limit}")
        if not days:
            raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                          slug="no-reports", title="No reports", field="since")
        top = int_arg("top")
        if top is not None:  # slim days: the top values of the window, and only the fields a per-day plot needs
            return jsonify({"campaign": campaign.name, "version": campaign.version, "window": window, "top": top,
                            "days": _slim_days(campaign, days, confidence, top)})
        return jsonify({"campaign": campaign.name, "version": campaign.version, "window": window,
                        "days": [{"day": day, **_estimate(campaign, agg, confidence)} for day, agg in days]})

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        try:
            mechanism_for(campaign.spec).check_estimable()
        except CandidatesRequired as exc:
            raise SourceError(str(exc)) from None
        days = storage.aggregates_by_day(campaign, window.since, window.until)
        total = estimators.Aggregate.empty(campaign.spec)
        for _, aggregate in days:
            total = total.merge(aggregate)
        try:
            result = LOCAL_ESTIMATES.estimate_json(campaign.spec, total, window.confidence)
        except estimators.NoReports:
            raise SourceError(f"campaign {campaign.name!r} has no reports in this window") from None
        per_day = LOCAL_ESTIMATES.per_period(campaign.spec, days, window.confidence) if window.daily else []
        result = with_shuffle_block(storage, campaign, result, window.since, window.until)
        return ReportData(result, campaign.spec.to_dict(), window.since, window.until, per_day)

    def report_data_from_api(self, get: ApiGet, base: str, resource: Any, spec_json: dict | None,
                             window: Window, daily_top: int | None) -> ReportData:
        "The collector's /estimate (the same function made it), and per day only when asked"
        params: dict[str, Any] = {key: value for key, value in (("since", window.since), ("until", window.until))
                                  if value}
        params["confidence"] = window.confidence
        result = get(base + "/estimate", params)
        result.pop("window", None)
        days: list = []
        if window.daily:
            day_params = {**params, "granularity": "day", **({"top": daily_top} if daily_top else {})}
            days = get(base + "/estimate", day_params).get("days", [])
        per_day = [DailyResult(day.pop("day"), day) for day in days] if len(days) > 1 else []
        return ReportData(result, spec_json, window.since, window.until, per_day)


SLIM_FIELDS = ("kind", "n", "confidence", "mean", "std_error", "ci_low", "ci_high")
SLIM_ROW_FIELDS = ("value", "estimate", "std_error", "ci_low", "ci_high")


def _slim_days(campaign: CampaignVersion, days: list, confidence: float, top: int) -> list[dict]:
    "Per day: n, and the estimate, SE and CI of the ``top`` values largest over the whole window (or the mean)"
    total = days[0][1]
    for _, aggregate in days[1:]:
        total = total.merge(aggregate)
    keep = None
    window = _estimate_object(campaign, total, confidence)
    if isinstance(window, estimators.FrequencyEstimate):  # rows straight from the arrays, never the d-row dict
        keep = sorted(sorted(range(len(window.estimates)), key=lambda i: -window.estimates[i])[:top])
    out = []
    for day, aggregate in days:
        if keep is None:
            full = _estimate(campaign, aggregate, confidence)
            slim = {"day": day, **{k: full[k] for k in SLIM_FIELDS if k in full}}
            rows = full.get("values")
            if isinstance(rows, list):
                ranked = sorted(rows, key=lambda row: -(row.get("estimate") or 0.0))[:top]
                slim["values"] = [{k: row.get(k) for k in SLIM_ROW_FIELDS} for row in ranked]
        else:
            result = _estimate_object(campaign, aggregate, confidence)
            slim = {"day": day, "kind": "frequency", "n": int(result.n), "confidence": result.confidence,
                    "values": [dict(zip(SLIM_ROW_FIELDS, (result.values[i], float(result.estimates[i]),
                                                         float(result.std_errors[i]), float(result.ci_low[i]),
                                                         float(result.ci_high[i])))) for i in keep]}
        out.append(finite_json(slim))
    return out


def _estimate_object(campaign: CampaignVersion, aggregate: estimators.Aggregate, confidence: float) -> Any:
    try:
        return estimators.estimate_aggregate(campaign.spec, aggregate, confidence=confidence)
    except estimators.NoReports:
        raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since") from None


def _require_estimable(campaign: CampaignVersion) -> None:
    "409 for a Bloom-filter RAPPOR campaign without candidates: there is nothing to decode against"
    try:
        mechanism_for(campaign.spec).check_estimable()
    except CandidatesRequired as exc:
        raise Problem(409, f"{exc} (version {campaign.version}; post the spec again with them)",
                      slug="candidates-required", title="Candidates required", field=exc.field) from None


def _estimate(campaign: CampaignVersion, aggregate: estimators.Aggregate, confidence: float) -> dict:
    try:
        return LOCAL_ESTIMATES.estimate_json(campaign.spec, aggregate, confidence)
    except estimators.NoReports:
        raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since") from None


LOCAL = register_collector_kind(LocalCampaigns())
