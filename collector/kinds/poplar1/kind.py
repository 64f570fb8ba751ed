"""The poplar1 kind, collector side: campaigns provisioned to the helper, reports taken by the leader, batches
walked with the helper (``leader.collect``), estimates read from the stored walk releases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ProvisionError
from ...storage import CampaignVersion, KindMigrations, StorageBase
from ..base import Accepted, ApiGet, CollectorKind, Peers, ReportItem, Window, register_collector_kind

if TYPE_CHECKING:
    from flask import Response

    from estimators.window import ReportData

# Function-level imports: the web stack, HPKE and the walk load with a poplar1 campaign's first request, not when
# the registry loads the kind at start-up (as collector.kinds.distributed).


class Poplar1Campaigns(CollectorKind):
    "Distributed heavy hitters: a leader and a helper walk the prefix tree level by level"

    name = "poplar1"

    def listing_cache_key(self, campaign: CampaignVersion) -> tuple | None:
        return None  # its aggregators block is read from the distributed tables

    def migrations(self) -> KindMigrations:
        from .store import MIGRATIONS

        return MIGRATIONS

    def create_campaign(self, storage: StorageBase, body: dict, day: str) -> tuple[CampaignVersion, bool]:
        from . import api

        return api.create_campaign(storage, body, day)

    def provision_campaign(self, storage: StorageBase, body: dict, day: str,
                           peers: Peers) -> tuple[CampaignVersion, bool, dict]:
        from ...distributed.leader import aggregators_block
        from ...distributed.peer import PeerError
        from ..distributed import helper_client
        from . import leader
        from .store import Poplar1Store

        peer = helper_client(peers)
        store = Poplar1Store(storage)
        store.migrate()
        try:
            campaign, created = leader.provision_campaign(storage, store, peer, str(peers.helper_url), body, day)
        except PeerError as exc:
            raise ProvisionError(f"the helper could not be provisioned: {exc}") from None
        return campaign, created, {"aggregators": aggregators_block(store, campaign)}

    def api_fields(self, campaign: CampaignVersion) -> dict:
        from ...distributed import api

        block = api.aggregators_block(campaign)
        return {} if block is None else {"aggregators": block}

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        from ...db import get_storage
        from ...distributed import api
        from . import leader
        from .store import Poplar1Store

        if api.role() != "leader":
            return Accepted(rejected=[(i, r["report_id"], "campaign", "a poplar1 campaign takes reports on its "
                                       "leader only") for i, r, _ in items])
        accepted, duplicate, rejected = leader.accept_reports(Poplar1Store(get_storage()), list(items), day,
                                                              api.overlap_days())
        return Accepted(accepted, duplicate, rejected)

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        from . import api

        return api.estimate_response(campaign)

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        "The latest walk of the version in the window, estimated at the window's confidence"
        from .store import Poplar1Store

        return _latest_walk(campaign.spec, campaign.spec.to_dict(), Poplar1Store(storage).releases(campaign.name),
                            window)

    def report_data_from_api(self, get: ApiGet, base: str, resource: Any, spec_json: dict | None,
                             window: Window, daily_top: int | None) -> ReportData:
        "The leader's walks (GET <campaign>/walks), estimated here as from a database"
        from client_sdk.spec import load_spec

        answer = get(base + "/walks", {})
        releases = answer.get("releases", []) if isinstance(answer, dict) else []
        return _latest_walk(load_spec(spec_json or {}), spec_json, releases, window)

    def archive_form(self, spec: Any) -> None:
        return None


def _latest_walk(spec: Any, spec_json: dict | None, releases: Sequence[dict], window: Window) -> ReportData:
    "The window's latest walk of ``spec``'s version (SourceError, saying how to run one, when there is none)"
    from estimators.errors import SourceError
    from estimators.kinds.poplar1 import POPLAR1_ESTIMATES
    from estimators.window import ReportData

    from ..distributed import in_window

    chosen = in_window([r for r in releases if r.get("fingerprint") == spec.fingerprint], window.since, window.until)
    if not chosen:
        raise SourceError(f"campaign {spec.name!r} has no walk in this window yet: walk a batch first "
                          f"(ldp-telemetry poplar1 walk {spec.name} --batch YYYY-MM-DD --url LEADER)")
    result = POPLAR1_ESTIMATES.estimate_json(spec, chosen[-1], window.confidence)
    return ReportData(result, spec_json, window.since, window.until)


POPLAR1 = register_collector_kind(Poplar1Campaigns())
