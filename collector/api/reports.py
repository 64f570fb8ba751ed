"""Report ingestion: ``POST /v1/reports`` with a batch of perturbed reports.

Each report is ``{"report_id": <uuid4>, "campaign": <name>, "fingerprint": <spec fingerprint>, "payload": ...}``.
The fingerprint picks the campaign version; the version's mechanism checks the payload (``check_payload``).
Valid reports are stored and added to their aggregates in one transaction; invalid ones are listed back with the
field and the reason; report ids already stored (or repeated in the batch) count as duplicates.  The answer is
200 with the three counts whenever the batch itself was readable (partial success, as OTLP/HTTP does).

Per report the Python work is one dict check and one regex match; the payloads of a campaign version are checked
together (vectorised where the mechanism has ``bulk_columns``) and aggregated with ``estimators.aggregate``.  Only
if one of them fails are the reports checked again one by one with ``check_payload``, to reject each bad one by
name and keep the rest.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify

import estimators
from client_sdk.errors import PayloadError
from client_sdk.kinds.shuffle_params import shuffle_rule
from client_sdk.spec import NAME_PATTERN
from estimators.mechanisms import ServerMechanism

from ..auth import max_batch_reports, rate_rule, require, too_many
from ..cors import browser_route
from ..db import get_storage
from ..kinds import CollectorKind, ReportItem, collector_kind
from ..kinds.local_rejections import count_rejections
from ..problems import Problem, invalid
from ..storage import ApiKey, CampaignVersion, RateLimited, ReportGroup, StorageBase
from .body import count_items, parse_json, read_body
from .campaigns import today

blueprint = Blueprint("reports", __name__)
logger = logging.getLogger("collector")

REPORT_FIELDS = frozenset(("report_id", "campaign", "fingerprint", "payload"))
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
FINGERPRINT = re.compile(r"[0-9a-f]{32}")
# JSON items (count_items) per report: a report has about 13 ([, {, ',' and ':'); the rest is headroom.
ITEMS_PER_REPORT = 16


class _Lookup:
    "Campaign versions by (name, fingerprint): cached for the process (versions are immutable), misses per request"

    def __init__(self) -> None:
        cache = current_app.extensions.setdefault("ldp_campaign_cache", {})
        self.cache: dict[tuple[str, str], tuple[CampaignVersion, ServerMechanism | None]] = cache
        self.missing: dict[tuple[str, str], tuple[str, str]] = {}
        self.closed: dict[str, str] | None = None  # read once per request: closing is not cached
        self.day = today()

    def ended(self, campaign: CampaignVersion) -> str | None:
        "Why the campaign takes no more reports (closed or past its spec's expiry day), or None"
        if self.closed is None:
            self.closed = get_storage().closed_campaigns()
        if campaign.name in self.closed:
            return f"campaign is closed (since {self.closed[campaign.name]}); it takes no more reports"
        if campaign.spec.expired_on(self.day):
            return f"campaign expired (its last day was {campaign.spec.expires}); it takes no more reports"
        return None

    def find(self, name: str, fingerprint: str) -> tuple[CampaignVersion, ServerMechanism | None] | tuple[str, str]:
        "The version and its mechanism (None for a kind that takes its own reports), or (field, reason) why not"
        key = (name, fingerprint)
        found = self.cache.get(key) or self.missing.get(key)
        if found is not None:
            return found
        # Checked before any query: a lone surrogate cannot even be bound as an SQLite parameter.
        if not NAME_PATTERN.fullmatch(name):
            self.missing[key] = ("campaign", "must be a campaign name")
            return self.missing[key]
        if not FINGERPRINT.fullmatch(fingerprint):
            self.missing[key] = ("fingerprint", "must be 32 lower-case hex digits")
            return self.missing[key]
        storage = get_storage()
        campaign = storage.find_version(name, fingerprint)
        if campaign is not None:  # a kind without a server mechanism (distributed) checks its reports itself
            mechanism = collector_kind(campaign.spec).server_mechanism(campaign.spec)
            if mechanism is not None:  # the mechanism's own (equal) spec object: mechanism_for finds it by identity
                campaign = dataclasses.replace(campaign, spec=mechanism.spec)
            self.cache[key] = (campaign, mechanism)
            return self.cache[key]
        known = bool(storage.campaign_versions(name))
        reason = ("fingerprint", "matches no version of this campaign") if known else ("campaign", "unknown campaign")
        self.missing[key] = reason
        return reason


@blueprint.post("/v1/reports")
@browser_route
@require("ingest", "admin", take_token=False)
def ingest() -> Response:
    "Validate and store a batch of reports"
    config = current_app.config
    limit = max_batch_reports(g.api_key)
    raw = read_body(int(config["MAX_BODY_BYTES"]))
    max_items = ITEMS_PER_REPORT * (limit + 1)
    if count_items(raw) > max_items:  # bounds the parsing work before json.loads builds anything
        raise Problem(413, f"body holds more than {max_items} JSON items ({ITEMS_PER_REPORT} per report for at most "
                           f"{limit} reports)", field="body", max_reports=limit)
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise invalid("body", 'must be a JSON object {"reports": [...]}')
    unknown = sorted(set(body) - {"reports"})
    if unknown:
        raise invalid(str(unknown[0])[:100], "unknown field; the body has only 'reports'")
    reports = body.get("reports")
    if not isinstance(reports, list) or not reports:
        raise invalid("reports", "must be a non-empty list of reports")
    if len(reports) > limit:
        raise Problem(413, f"batch of {len(reports)} reports exceeds the limit of {limit}", field="reports",
                      max_reports=limit)  # the key's limit (smaller for public keys): a client may send that many
    return jsonify(store_reports(reports))


def store_reports(reports: list, *, shuffled: bool = False,
                  record_batch: Callable[[StorageBase, int], None] | None = None) -> dict:
    """Validate and store a non-empty list of reports: the answer's counts and errors.  ``shuffled``: the list is
    one batch a shuffler forwarded (``collector.api.shuffled``), whose campaign's trust is ``shuffled``; otherwise
    a shuffled campaign's reports are refused (they reach the collector only through its shuffler).
    ``record_batch(storage, stored)`` runs in the transaction that stores them (on ``storage``, its connection),
    with how many are stored (now or before): what it raises stores none of them"""
    known: dict[int, str] = {}  # batch index -> its campaign, for the reports whose campaign this key may use
    indexed_groups, rejected, duplicates, others = _validate(reports, known, check_payloads=False, shuffled=shuffled)
    if not all(_check_and_aggregate(group) for group, _ in indexed_groups):
        # a payload failed its group's check: check them one by one, to reject each bad report by name
        indexed_groups, rejected, duplicates, others = _validate(reports, known, shuffled=shuffled)
        for group, indices in indexed_groups:
            _aggregate(group, indices, rejected)
    groups = [group for group, _ in indexed_groups if group.report_ids]
    within = None if record_batch is None else (
        lambda storage, result: record_batch(storage, result.accepted + result.duplicate + duplicates))
    try:
        result = get_storage().insert_reports(groups, today(), key_hash=g.api_key.key_hash,
                                              rate=rate_rule(g.api_key), now=time.time(), within=within)
    except RateLimited as limited:
        raise too_many(limited.retry_after) from None
    accepted, duplicate = result.accepted, duplicates + result.duplicate
    for kind, items in _by_kind(others).items():  # after the rows' transaction (which took the rate token)
        outcome = kind.accept_reports(items, today())  # each kind in its own store's transaction
        accepted, duplicate = accepted + outcome.accepted, duplicate + outcome.duplicate
        rejected = sorted(rejected + [_reject(*error) for error in outcome.rejected], key=lambda e: e["index"])
    count_rejections(get_storage(), [(known[error["index"]], error["field"]) for error in rejected
                                     if error["index"] in known])
    current_app.extensions["ldp_metrics"].count_reports(accepted, duplicate, len(rejected))
    return {"accepted": accepted, "duplicate": duplicate, "rejected": len(rejected), "errors": rejected}


def _by_kind(items: list[ReportItem]) -> dict[CollectorKind, list[ReportItem]]:
    "The reports that no server mechanism takes, by their campaign's kind (in batch order)"
    kinds: dict[CollectorKind, list[ReportItem]] = {}
    lists: dict[int, list[ReportItem]] = {}  # by campaign version object: its kind looked up once per batch
    for item in items:
        found = lists.get(id(item[2]))
        if found is None:
            found = lists[id(item[2])] = kinds.setdefault(collector_kind(item[2].spec), [])
        found.append(item)
    return kinds


def _validate(reports: list, known: dict[int, str], *, check_payloads: bool = True, shuffled: bool = False
              ) -> tuple[list[tuple[ReportGroup, list[int]]], list[dict], int, list[ReportItem]]:
    """Groups of valid reports by campaign version (with their batch indices), the rejections, the duplicate count,
    and the reports of kinds without a server mechanism (checked by their kind's ``accept_reports``); without
    ``check_payloads`` the mechanisms' payloads are left to ``_check_and_aggregate``.  ``known`` gets the
    campaign name of each report whose campaign this key may use (by batch index)"""
    lookup = _Lookup()
    key = g.api_key
    others: list[ReportItem] = []
    groups: dict[tuple[str, str], tuple[ReportGroup, list[int]]] = {}
    # per (campaign, fingerprint) of this batch: the version, its mechanism, why it takes no reports (or None)
    # and its group, looked up once per batch instead of once per report
    resolved: dict[tuple[str, str], tuple] = {}
    rejected: list[dict] = []
    seen: set[str] = set()
    duplicates = 0
    uuid4 = UUID4.fullmatch
    for index, report in enumerate(reports):
        if type(report) is not dict or report.keys() != REPORT_FIELDS:
            rejected.append(_shape_error(index, report))
            continue
        report_id, name, fingerprint = report["report_id"], report["campaign"], report["fingerprint"]
        if type(report_id) is not str or not uuid4(report_id):
            rejected.append(_reject(index, None, "report_id", "must be a lower-case UUID version 4 string"))
            continue
        if type(name) is not str or type(fingerprint) is not str:
            field = "campaign" if type(name) is not str else "fingerprint"
            rejected.append(_reject(index, report_id, field, "must be a string"))
            continue
        target = resolved.get((name, fingerprint))
        if target is None:
            target = resolved[(name, fingerprint)] = _resolve(lookup, key, name, fingerprint, groups, shuffled)
        campaign, mechanism, refusal, entry = target
        if campaign is not None:
            known[index] = campaign.name
        if refusal is not None:
            rejected.append(_reject(index, report_id, *refusal))
            continue
        if mechanism is None:
            if report_id in seen:
                duplicates += 1
                continue
            seen.add(report_id)
            others.append((index, report, campaign))
            continue
        payload = report["payload"]
        if check_payloads or report_id in seen:  # a repeated id is a duplicate only if its payload is valid
            try:
                mechanism.check_payload(payload)
            except PayloadError as exc:
                rejected.append(_reject(index, report_id, exc.field, exc.reason))
                continue
            except Exception as exc:  # noqa: BLE001 (a malformed payload must never become a 500)
                logger.debug("check_payload raised %s", type(exc).__name__)
                rejected.append(_reject(index, report_id, "payload", "has the wrong shape for this campaign"))
                continue
            if report_id in seen:
                duplicates += 1
                continue
        seen.add(report_id)
        entry[0].report_ids.append(report_id)
        entry[0].payloads.append(payload)
        entry[1].append(index)
    return [entry for entry in groups.values() if entry[1]], rejected, duplicates, others


def _resolve(lookup: _Lookup, key: ApiKey, name: str, fingerprint: str,
             groups: dict[tuple[str, str], tuple[ReportGroup, list[int]]], shuffled: bool = False) -> tuple:
    """(version, mechanism, refusal, group) for a campaign and fingerprint: refusal is (field, reason) when the
    reports cannot be taken (outside the key's scope, unknown, closed, expired, or sent other than as its trust
    model says: a shuffled campaign's only in a shuffler's batch); group is where its valid local reports go"""
    if not key.may_use(name):  # checked first: a scoped key learns nothing about other campaigns
        return None, None, ("campaign", f"this key is not scoped to campaign {name[:100]!r}"), None
    found = lookup.find(name, fingerprint)
    if isinstance(found[0], str):
        return None, None, found, None
    campaign, mechanism = found
    ended = lookup.ended(campaign)
    if ended is not None:
        return campaign, mechanism, ("campaign", ended), None
    if (shuffle_rule(campaign.spec) is not None) != shuffled:
        reason = ("is shuffled: its reports reach the collector only in its shuffler's batches" if not shuffled
                  else "is not shuffled: a shuffler's batch holds only reports of a shuffled campaign")
        return campaign, mechanism, ("campaign", reason), None
    entry = groups.get((campaign.name, campaign.fingerprint))
    if entry is None and mechanism is not None:
        entry = groups[(campaign.name, campaign.fingerprint)] = (ReportGroup(campaign, [], [], []), [])
    return campaign, mechanism, None, entry


def _check_and_aggregate(group: ReportGroup) -> bool:
    """Check the group's payloads in one pass (vectorised where the mechanism has ``bulk_columns``, else
    ``check_payload`` each) and compute its aggregate; False if any payload fails"""
    spec = group.campaign.spec
    try:
        group.aggregate = estimators.aggregate(spec, group.payloads)  # checks each payload (small: in Python)
    except Exception as exc:  # noqa: BLE001 (PayloadError, or a malformed payload: both are checked one by one)
        logger.debug("checking a group of payloads raised %s", type(exc).__name__)
        return False
    return True


def _aggregate(group: ReportGroup, indices: list[int], rejected: list[dict]) -> None:
    """Compute the group's aggregate.

    ``check_payload`` should have refused anything the aggregation cannot read; if it let one through, that
    report (found by aggregating one report at a time) is rejected by name and the rest of the batch is kept."""
    spec = group.campaign.spec
    try:
        # every payload passed check_payload in _validate: parse without checking again
        group.aggregate = estimators.aggregate(spec, estimators.parse_payloads(spec, group.payloads, checked=True))
        return
    except Exception as exc:  # noqa: BLE001 (a malformed payload must never become a 500)
        logger.warning("aggregating a batch raised %s; isolating the reports", type(exc).__name__)
    keep = []
    for position, payload in enumerate(group.payloads):
        try:
            estimators.aggregate(spec, [payload])
        except Exception:  # noqa: BLE001
            rejected.append(_reject(indices[position], group.report_ids[position], "payload",
                                    "cannot be read for this campaign"))
        else:
            keep.append(position)
    group.report_ids = [group.report_ids[i] for i in keep]
    group.payloads = [group.payloads[i] for i in keep]
    group.aggregate = estimators.aggregate(spec, group.payloads) if group.payloads else None
    rejected.sort(key=lambda error: error["index"])


def _shape_error(index: int, report: Any) -> dict:
    if type(report) is not dict:
        return _reject(index, None, "", "must be an object with report_id, campaign, fingerprint, payload")
    report_id = report.get("report_id") if isinstance(report.get("report_id"), str) else None
    missing = sorted(REPORT_FIELDS - set(report))
    if missing:
        return _reject(index, report_id, missing[0], "is required")
    extra = sorted(str(k) for k in set(report) - REPORT_FIELDS)
    return _reject(index, report_id, extra[0][:100], "unknown field; a report has report_id, campaign, "
                                                     "fingerprint, payload")


def _reject(index: int, report_id: str | None, field: str, reason: str) -> dict:
    path = f"reports[{index}]" + (f".{field}" if field else "")
    safe_id = report_id if report_id is not None and UUID4.fullmatch(report_id) else None
    return {"index": index, "report_id": safe_id, "field": path, "reason": reason}
