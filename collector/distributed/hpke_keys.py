"""The aggregator's HPKE key pair: generated on first start, kept in its own database, published as its config.

Devices seal each input share to its aggregator's config (``client_sdk.vdaf.hpke``, X25519 / HKDF-SHA256 /
AES-128-GCM).  The private key never leaves the aggregator's database.  The config id is drawn at random (1..255)
so that two aggregators rarely share one, which makes a share sealed to the wrong aggregator easier to name.
"""

from __future__ import annotations

import secrets
from typing import Any

from client_sdk.clock import utc_today
from client_sdk.vdaf import hpke

from .store import DistStore

_CACHE: dict[str, list[Any]] = {}  # database path -> key pairs (a stored key pair never changes)


def key_pairs(store: DistStore) -> list[Any]:
    "The aggregator's key pairs (``HpkeKeyPair``), generating the first one if there is none"
    cache_key = str(store.storage.path.resolve())
    cached = _CACHE.get(cache_key)
    if cached is not None:
        return cached
    stored = store.hpke_keys()
    if not stored:
        pair = hpke.HpkeKeyPair.generate(1 + secrets.randbelow(255))
        store.add_hpke_key(pair.config.id, pair.private_bytes(), utc_today())
        stored = store.hpke_keys()  # another worker may have stored its pair first: every process uses that one
    pairs = [hpke.HpkeKeyPair.from_private_bytes(config_id, raw) for config_id, raw in stored]
    _CACHE[cache_key] = pairs
    return pairs


def configs(store: DistStore) -> list[dict]:
    "The published configs (``GET /v1/hpke_config``)"
    return [pair.config.to_dict() for pair in key_pairs(store)]
