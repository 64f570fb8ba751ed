"""The aggregator's HPKE key pairs: the first generated on first start, more by rotation, all kept in its own
database, the usable ones published as its configs (newest first).

Devices seal each input share to its aggregator's config (``client_sdk.vdaf.hpke``, X25519 / HKDF-SHA256 /
AES-128-GCM).  The private keys never leave the aggregator's database.  A config id is drawn at random (1..255,
never one this aggregator holds) so that two aggregators rarely share one, which makes a share sealed to the wrong
aggregator easier to name.

Rotation with overlap (``rotate``; ``ldp-telemetry hpke-keys rotate``): the new key is published first and devices
seal to it from their next listing; a key that has a newer one stays usable (it opens reports, it is still
published) until ``overlap_days`` UTC days after the day its successor was made, so reports sealed and queued on a
device before the rotation still open.  From then on it is *retired*: a report sealed to it is refused by name,
``outdated-config`` (DAP's ``outdatedConfig``), and the device drops it and counts it.  An overlap of 0 retires
the older key at once.  Every key is kept (a retired one only to name the refusal).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from client_sdk.clock import utc_today
from client_sdk.errors import LDPError
from client_sdk.vdaf import hpke

from ..config import DEFAULTS
from .store import DistStore

DEFAULT_OVERLAP_DAYS: int = DEFAULTS["HPKE_OVERLAP_DAYS"]  # serve --hpke-overlap-days (collector.config)
CURRENT, OVERLAP, RETIRED = "current", "overlap", "retired"


class NoFreeConfigId(LDPError):
    "Every HPKE config id (1..255) is taken on this aggregator"


@dataclass(frozen=True)
class KeyState:
    "One key of this aggregator: its config id, creation day, state, and the first day it is refused (if rotated)"

    config_id: int
    created_day: str
    state: str  # current, overlap or retired
    retired_from: str | None  # the first UTC day a report sealed to it is refused; None for the current key

    def to_dict(self) -> dict:
        return {"config_id": self.config_id, "created_day": self.created_day, "state": self.state,
                "retired_from": self.retired_from}


@dataclass(frozen=True)
class Keys:
    "This aggregator's key pairs, newest first, as read at one version of the key table"

    version: tuple[int, int]
    pairs: list[Any]  # HpkeKeyPair, newest first
    states: list[tuple[int, str]]  # (config id, created day), newest first

    def usable(self, today: str, overlap_days: int) -> dict[int, Any]:
        "config id -> key pair of the current key and the keys still in their overlap on ``today``"
        retired = {s.config_id for s in self.key_states(today, overlap_days) if s.state == RETIRED}
        return {pair.config.id: pair for pair in self.pairs if pair.config.id not in retired}

    def retired(self, today: str, overlap_days: int) -> set[int]:
        return {s.config_id for s in self.key_states(today, overlap_days) if s.state == RETIRED}

    def key_states(self, today: str, overlap_days: int) -> list[KeyState]:
        "Each key's state on ``today``: the newest is current, an older one retired from its successor's day + overlap"
        out = []
        for position, (config_id, created_day) in enumerate(self.states):
            if position == 0:
                out.append(KeyState(config_id, created_day, CURRENT, None))
                continue
            successor_day = dt.date.fromisoformat(self.states[position - 1][1])
            retired_from = (successor_day + dt.timedelta(days=overlap_days)).isoformat()
            out.append(KeyState(config_id, created_day, RETIRED if today >= retired_from else OVERLAP, retired_from))
        return out


_CACHE: dict[str, Keys] = {}  # database file or URL -> its keys at the version read last


def keys(store: DistStore) -> Keys:
    """The aggregator's keys, generating the first one if there is none.  One small query per call tells whether
    another process (``hpke-keys rotate``) changed them since they were read; the pairs are parsed only then."""
    cache_key = store.location
    version = store.hpke_keys_version()
    cached = _CACHE.get(cache_key)
    if cached is not None and cached.version == version:
        return cached
    if version[0] == 0:
        pair = hpke.HpkeKeyPair.generate(1 + secrets.randbelow(255))
        store.add_hpke_key(pair.config.id, pair.private_bytes(), utc_today())  # another worker may win: use its
        version = store.hpke_keys_version()
    stored = store.hpke_keys()
    loaded = Keys(version, [hpke.HpkeKeyPair.from_private_bytes(k.config_id, k.private_key) for k in stored],
                  [(k.config_id, k.created_day) for k in stored])
    _CACHE[cache_key] = loaded
    return loaded


def key_pairs(store: DistStore) -> list[Any]:
    "Every key pair of the aggregator (``HpkeKeyPair``), newest first"
    return keys(store).pairs


def configs(store: DistStore, today: str, overlap_days: int = DEFAULT_OVERLAP_DAYS) -> list[dict]:
    "The published configs (``GET /v1/hpke_config``): the current key's first, then those still in their overlap"
    usable = keys(store).usable(today, overlap_days)
    return [pair.config.to_dict() for pair in usable.values()]


def rotate(store: DistStore, today: str) -> int:
    "Make a new key pair the current one (the older ones enter their overlap); its config id"
    keys(store)  # the first key exists before its successor
    for _ in range(64):
        taken = {k.config_id for k in store.hpke_keys()}
        free = [i for i in range(1, 256) if i not in taken]
        if not free:
            raise NoFreeConfigId("every HPKE config id 1..255 is taken on this aggregator")
        pair = hpke.HpkeKeyPair.generate(free[secrets.randbelow(len(free))])
        if store.add_hpke_key(pair.config.id, pair.private_bytes(), today, first=False):
            return int(pair.config.id)
    raise NoFreeConfigId("no HPKE config id could be stored (concurrent rotations?)")
