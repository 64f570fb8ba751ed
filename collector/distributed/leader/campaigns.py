"""The leader's distributed campaigns: creation with the helper (its verify key drawn here), the listing's
``aggregators`` block, and each campaign's Prio3 instance, cached per database."""

from __future__ import annotations

import secrets

from client_sdk.distributed_messages import b64url
from client_sdk.spec import Spec, load_spec

from ...storage import CampaignVersion, StorageBase
from .. import hpke_keys
from ..aggregation import CampaignVdaf
from ..peer import PeerClient
from ..store import DistCampaign, DistStore


def provision_campaign(storage: StorageBase, store: DistStore, peer: PeerClient, helper_url: str, source: dict,
                       day: str) -> tuple[CampaignVersion, bool]:
    """Create a distributed campaign: draw its verify key (kept before anything is sent, so a retry reuses it),
    provision the helper with the spec and the key, then store the version here.  Idempotent."""
    spec = load_spec(source)  # SpecError names the field
    existing = storage.find_version(spec.name, spec.fingerprint)
    known = store.campaign(spec.name, spec.fingerprint)
    if existing is not None and known is not None and known.state == "ready":
        return existing, False
    vdaf_size = CampaignVdaf(spec, b"").vdaf.VERIFY_KEY_SIZE
    if known is None:
        with store.transaction() as conn:
            known = store.campaign(spec.name, spec.fingerprint)
            if known is None:
                known = DistCampaign(spec.name, spec.fingerprint, "leader", secrets.token_bytes(vdaf_size),
                                     helper_url, None, "provisioning")
                store.put_campaign(known, conn)
    helper_config = peer.hpke_configs()[0]
    spec_dict = {k: v for k, v in spec.to_dict(derived=False).items() if k not in ("version", "fingerprint")}
    peer.provision(spec.name, {"spec": spec_dict, "verify_key": b64url(known.verify_key)})
    campaign, created = storage.create_campaign(source, day)
    with store.transaction() as conn:
        store.put_campaign(DistCampaign(spec.name, spec.fingerprint, "leader", known.verify_key, helper_url,
                                        helper_config, "ready"), conn)
    _VDAF_CACHE.clear()
    return campaign, created


def aggregators_block(store: DistStore, campaign: CampaignVersion) -> dict | None:
    "The listing's ``aggregators`` block (both HPKE configs and the helper's URL), or None"
    known = store.campaign(campaign.name, campaign.fingerprint)
    if known is None or known.role != "leader" or known.state != "ready":
        return None
    return {"leader": {"hpke_config": hpke_keys.configs(store)[0]},
            "helper": {"url": known.helper_url, "hpke_config": known.helper_hpke_config}}


_VDAF_CACHE: dict[tuple[str, str, str], tuple[DistCampaign, CampaignVdaf]] = {}


def campaign_vdaf(store: DistStore, spec: Spec) -> tuple[DistCampaign, CampaignVdaf] | None:
    key = (str(store.storage.path), spec.name, spec.fingerprint)
    cached = _VDAF_CACHE.get(key)
    if cached is None:
        known = store.campaign(spec.name, spec.fingerprint)
        if known is None or known.state != "ready":
            return None
        cached = _VDAF_CACHE[key] = (known, CampaignVdaf(spec, known.verify_key))
    return cached

