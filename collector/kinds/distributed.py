"""The distributed kind (Prio3), collector side: campaigns provisioned to the helper, reports taken by the leader as
input shares with aggregation jobs (``collector.distributed``, its own store), estimates made from releases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import estimators
from estimators.errors import SourceError
from estimators.kinds.distributed import DISTRIBUTED_ESTIMATES
from estimators.window import ReportData, finite_json

from ..errors import ProvisionError
from ..storage import CampaignVersion, KindMigrations, StorageBase
from .base import Accepted, ApiGet, CollectorKind, Peers, ReportItem, Window, register_collector_kind

if TYPE_CHECKING:
    from flask import Response

# Function-level imports: collector.distributed is loaded by the methods of a distributed campaign only, so a
# standalone collector loads no distributed module (+166 ms, 189 modules per worker, measured for collector/api).


def helper_client(peers: Peers) -> Any:
    """The leader's client to its helper for a command that provisions a campaign (``campaign create --db``), or
    ProvisionError naming the option: both options given, and the URL https (plain http to loopback only: the peer
    token travels there)"""
    from ..distributed.peer import PeerClient, checked_helper_url

    if not peers.helper_url or not peers.peer_token:
        raise ProvisionError("a leader command needs --helper-url and --peer-token (or LDP_HELPER_URL and "
                             "LDP_PEER_TOKEN)")
    try:
        checked_helper_url(peers.helper_url)
    except ValueError as exc:
        raise ProvisionError(f"--helper-url: {str(exc).split(': ', 1)[-1]}") from None
    return PeerClient.for_url(peers.helper_url, peers.peer_token)


class DistributedCampaigns(CollectorKind):
    "Prio3 with a leader and a helper; the views' hooks are collector.distributed.api's"

    name = "prio3"
    def listing_cache_key(self, campaign: CampaignVersion) -> tuple | None:
        return None  # its aggregators block comes from the distributed store's tables, read on every listing

    def migrations(self) -> KindMigrations:
        from ..distributed import schema  # the tables' DDL only (two small modules, no HPKE, no Flask)

        return schema.MIGRATIONS

    def create_campaign(self, storage: StorageBase, body: dict, day: str) -> tuple[CampaignVersion, bool]:
        from ..distributed import api  # Flask views, HPKE, the peer client: loaded by distributed campaigns only

        return api.create_campaign(body, day)

    def provision_campaign(self, storage: StorageBase, body: dict, day: str,
                           peers: Peers) -> tuple[CampaignVersion, bool, dict]:
        "In a leader's database: the helper is provisioned first; the output carries the aggregators block"
        from ..distributed.leader import aggregators_block, provision_campaign  # as in create_campaign
        from ..distributed.peer import PeerError
        from ..distributed.store import DistStore

        peer = helper_client(peers)
        store = DistStore(storage)
        store.migrate()
        try:
            campaign, created = provision_campaign(storage, store, peer, str(peers.helper_url), body, day)
        except PeerError as exc:
            raise ProvisionError(f"the helper could not be provisioned: {exc}") from None
        return campaign, created, {"aggregators": aggregators_block(store, campaign)}

    def api_fields(self, campaign: CampaignVersion) -> dict:
        from ..distributed import api  # as in create_campaign: a standalone collector never loads it

        block = api.aggregators_block(campaign)
        return {} if block is None else {"aggregators": block}

    def progress_route(self, campaign: CampaignVersion) -> str | None:
        return f"/v1/campaigns/{campaign.name}/progress"

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        from ..distributed import api  # as in create_campaign: a standalone collector never loads it

        outcome = api.ingest(list(items), day)
        return Accepted(outcome.accepted, outcome.duplicate, list(outcome.rejected))

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        # the web stack here only, as in local.py; the distributed API: a standalone collector never loads it
        from flask import jsonify

        from ..api.args import confidence_arg
        from ..distributed import api

        return jsonify(finite_json(api.estimate(campaign, confidence_arg())))

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        "The leader's releases of this version, estimated as the API would"
        from ..distributed.store import DistStore  # the leader's tables: read by distributed reports only

        releases = [r for r in DistStore(storage).releases(campaign.name)
                    if r.get("fingerprint") == campaign.spec.fingerprint]
        return _from_releases(campaign.spec, campaign.spec.to_dict(), releases, window)

    def report_data_from_api(self, get: ApiGet, base: str, resource: Any, spec_json: dict | None,
                             window: Window, daily_top: int | None) -> ReportData:
        "The leader's releases (GET <campaign>/releases), estimated here as from a database"
        answer = get(base + "/releases", {})
        releases = answer.get("releases", []) if isinstance(answer, dict) else answer
        fingerprint = (spec_json or {}).get("fingerprint") or (resource if isinstance(resource, dict) else {}).get(
            "fingerprint")
        releases = [r for r in releases if not fingerprint or r.get("fingerprint") == fingerprint]
        return _from_releases(spec_json, spec_json, releases, window)


def in_window(releases: Sequence[dict], since: str | None, until: str | None) -> list[dict]:
    "The releases whose batch's UTC day (a day, or a shorter batch's first ten characters) is in [since, until]"
    chosen = [r for r in releases if (not since or str(r.get("batch"))[:10] >= since)
              and (not until or str(r.get("batch"))[:10] <= until)]
    return sorted(chosen, key=lambda release: str(release.get("batch")))


def _from_releases(spec: Any, spec_json: dict | None, releases: list[dict], window: Window) -> ReportData:
    "The releases of the window added up, one estimate per batch"
    chosen = in_window(releases, window.since, window.until)
    try:
        result = DISTRIBUTED_ESTIMATES.estimate_json(spec, chosen, window.confidence)
    except estimators.NoReports:
        raise SourceError(f"campaign {(spec_json or {}).get('name', '')!r} has no release in this window: collect "
                          "a batch first (ldp-telemetry campaign collect)") from None
    except ValueError as exc:  # a release that is not the spec's (ReleaseMismatch) or malformed
        raise SourceError(f"cannot estimate from the releases: {exc}") from None
    per_batch = DISTRIBUTED_ESTIMATES.per_period(spec, chosen, window.confidence) if window.daily else []
    return ReportData(result, spec_json, window.since, window.until, per_batch)


DISTRIBUTED = register_collector_kind(DistributedCampaigns())
