"""The records the storage hands out: campaign versions, API keys, report groups, insert results, rate rules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from client_sdk.spec import Spec

if TYPE_CHECKING:  # imported where used: numpy loads with the first aggregate, not with the storage
    import estimators


ROLES = ("ingest", "admin", "shuffler")  # shuffler: a shuffler's upstream key (collector.api.shuffled)
KEY_PREFIX = "ldp_"


@dataclass(frozen=True)
class CampaignVersion:
    "One immutable version of a campaign"

    name: str
    version: int
    fingerprint: str
    spec: Spec
    created_day: str

    def to_dict(self) -> dict:
        "The API's form: identity fields next to the full spec, which ``load_spec`` accepts as it is"
        return {"name": self.name, "version": self.version, "fingerprint": self.fingerprint,
                "mechanism": self.spec.mechanism, "created_day": self.created_day, "spec": self.spec.to_dict()}


@dataclass(frozen=True)
class ApiKey:
    "A stored key: only its SHA-256 is kept"

    key_hash: str
    key_id: str
    role: str
    label: str
    created_day: str
    expires_day: str | None = None  # the last UTC day on which the key is accepted
    last_used_day: str | None = None
    public: bool = False  # embedded in web pages or apps: anyone may hold it (stricter rate limits apply)
    campaigns: tuple[str, ...] | None = None  # the only campaigns it may read and report to; None: all

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ApiKey:
        "A key from its KEY_COLUMNS row (campaigns are stored as a JSON list)"
        key_hash, key_id, role, label, created_day, expires_day, last_used_day, public, campaigns = row
        return cls(key_hash, key_id, role, label, created_day, expires_day, last_used_day, bool(public),
                   None if campaigns is None else tuple(json.loads(campaigns)))

    def expired_on(self, day: str) -> bool:
        return self.expires_day is not None and day > self.expires_day

    def may_use(self, campaign: str) -> bool:
        "Whether the key's scope includes ``campaign``"
        return self.campaigns is None or campaign in self.campaigns


@dataclass
class ReportGroup:
    "Validated reports of one campaign version, with their aggregate computed before the write lock is taken"

    campaign: CampaignVersion
    report_ids: list[str]
    payloads: list[Any]
    payload_texts: list[str] = field(default_factory=list)  # no longer used by storage; kept for callers
    aggregate: estimators.Aggregate | None = None


@dataclass
class InsertResult:
    "What a batch insert did"

    accepted: int = 0
    duplicate: int = 0
    duplicate_ids: set[str] = field(default_factory=set)


# The rate bucket's clock: tokens are added in steps at multiples of this many seconds, so the stored state is a
# token count and the start of a 10-second window, never a precise request time.
RATE_WINDOW_SECONDS = 10


@dataclass(frozen=True)
class RateRule:
    """A token bucket: ``rate`` requests per second, bursts of up to ``burst``.

    A new key starts with ``burst`` tokens.  Tokens are added in steps: at each multiple of RATE_WINDOW_SECONDS
    the bucket gains ``rate * RATE_WINDOW_SECONDS`` tokens, up to :attr:`capacity`; every request takes one."""

    rate: float
    burst: float

    @property
    def step(self) -> float:
        return self.rate * RATE_WINDOW_SECONDS

    @property
    def capacity(self) -> float:
        "At least one window's worth, or a steady client could never use the whole rate"
        return max(self.burst, self.step)

