"""What the SDK tells the app: the outcome of ``record()``, of a flush, and a snapshot of the client."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class RecordStatus(str, enum.Enum):
    "What ``record()`` did with a value"

    QUEUED = "queued"  # perturbed, charged to the ledger and queued
    REFUSED_BY_POLICY = "refused_by_policy"  # the device's report policy (e.g. once a day) said no
    HELD = "held"  # the spec is not known yet: the raw value waits in the state file until it arrives
    SPEC_UNAVAILABLE = "spec_unavailable"  # the spec is not known and the campaign's hold is full: value dropped
    UNKNOWN_CAMPAIGN = "unknown_campaign"  # the collector has no such campaign
    CAMPAIGN_CLOSED = "campaign_closed"  # the collector closed the campaign
    UPLOAD_DISABLED = "upload_disabled"  # set_upload_enabled(False)
    CLIENT_CLOSED = "client_closed"  # close() or delete_local_data() was called
    STATE_ERROR = "state_error"  # the state file could not be written (disk full, damaged file)
    # distributed campaigns: nothing charged, nothing queued
    AGGREGATORS_NOT_CONFIGURED = "aggregators_not_configured"  # Client(aggregators=...) was not given
    AGGREGATOR_MISMATCH = "aggregator_mismatch"  # the leader lists another helper (URL or key) than the configured one


@dataclass(frozen=True)
class Recorded:
    "The outcome of one ``record()``; true when the report was queued"

    status: RecordStatus
    report_id: str | None = None

    def __bool__(self) -> bool:
        return self.status is RecordStatus.QUEUED


@dataclass
class FlushResult:
    "What one flush did"

    sent: int = 0  # reports this flush got acknowledged (accepted or duplicate)
    rejected: int = 0  # reports the collector rejected by name (removed from the queue, reason logged)
    dropped: int = 0  # reports the queue's age limit dropped when the flush started
    remaining: int = 0  # still queued
    condition: str | None = None  # why delivery is stalled, if it is (see ClientStatus.condition)
    background_sent: int = 0  # reports the background sender got acknowledged since the last flush ended
    background_rejected: int = 0  # and rejected by name

    @property
    def delivered(self) -> int:
        "Reports acknowledged since the last flush ended, by this flush or the background sender"
        return self.sent + self.background_sent


@dataclass(frozen=True)
class ClientStatus:
    "A snapshot of the client, for an app's diagnostics page or health check"

    upload_enabled: bool
    pending: int  # reports queued on disk
    pending_bytes: int
    condition: str | None  # unreachable, unauthorized, forbidden, not_found, redirected, refused, too_large,
    #                        server_unavailable, unexpected_answer; None once the collector answers as expected
    detail: str | None  # the last failure, e.g. "HTTP 401: key: revoked"
    retry_in: float  # seconds until the next attempt
    recorded: dict[str, int]  # record() outcomes since the client started, by RecordStatus value
    sent: int  # reports acknowledged since the client started
    rejected: int  # reports rejected by name since the client started
    dropped: dict[str, int]  # persistent: reports dropped by each queue limit, and deleted by upload switch-off;
    #                          held values deleted unqueued, by reason (held_dropped_age, _invalid, ...)
    unknown_campaigns: list[str] = field(default_factory=list)
    held: int = 0  # values recorded before their spec arrived, waiting (raw) in the state file
