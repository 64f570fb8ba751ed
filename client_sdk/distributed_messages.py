"""The messages of the distributed protocol, encoded and decoded in one place for the device, the leader and the
helper (no second parser anywhere).  Standard library only.

- ``b64url`` / ``from_b64url``: the one base64url (RFC 4648 section 5, no padding, canonical) of every binary field;
- :class:`ProtocolError`: the problem types (slugs) the aggregators answer and count, as their wire strings;
- the upload payload (``parse_payload`` -> :class:`ReportPayload`, ``sealed_share`` for its shares);
- an aggregation job (``job_request`` / ``parse_job_request``, ``parse_job_entry``, ``job_answer_entry`` /
  ``check_job_answer``) and the aggregate-share request (``AGGREGATE_SHARE_FIELDS``).

A bad message raises :class:`~client_sdk.errors.ShareRejected` naming the field (the upload payload) or
``ValueError`` naming the field (the peer messages, which the helper turns into its own problems).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .clock import batch_start
from .errors import ShareRejected
from .wire import is_integer

__all__ = [
    "AGGREGATE_SHARE_FIELDS", "JOB_FIELDS", "JOB_REPORT_FIELDS", "PAYLOAD_FIELDS", "SEALED_FIELDS", "JobEntry",
    "ProtocolError", "ReportPayload", "b64url", "check_batch", "check_job_answer", "from_b64url", "job_answer_entry",
    "job_request", "parse_job_entry", "parse_job_request", "parse_payload", "sealed_share",
]


class ProtocolError(str, Enum):
    """The problem types of the distributed protocol: each member's value is its wire string (the problem+json
    ``type`` slug, a rejected report's ``error``, a rejection counter's key)"""

    INVALID_MESSAGE = "invalid-message"
    INVALID_FIELD = "invalid-field"
    INVALID_MEASUREMENT = "invalid-measurement"
    HPKE_DECRYPT_ERROR = "hpke-decrypt-error"
    HPKE_UNKNOWN_CONFIG_ID = "hpke-unknown-config-id"
    OUTDATED_CONFIG = "outdated-config"  # sealed to a retired HPKE key (DAP's outdatedConfig): fetch the configs again
    REPORT_REPLAYED = "report-replayed"
    BATCH_COLLECTED = "batch-collected"
    BATCH_OPEN = "batch-open"
    BATCH_IN_FUTURE = "batch-in-future"
    BATCH_MISMATCH = "batch-mismatch"
    BATCH_TOO_SMALL = "batch-too-small"
    JOB_MISMATCH = "job-mismatch"
    JOB_REFUSED = "job-refused"
    JOINT_RANDOMNESS_MISMATCH = "joint-randomness-mismatch"
    REJECTED_BY_HELPER = "rejected-by-helper"
    VERIFY_KEY_MISMATCH = "verify-key-mismatch"
    UNKNOWN_CAMPAIGN = "unknown-campaign"
    NOT_DISTRIBUTED = "not-distributed"
    HELPER_UNAVAILABLE = "helper-unavailable"
    HELPER_REFUSED = "helper-refused"
    HELPER_NOT_CONFIGURED = "helper-not-configured"
    DISTRIBUTED_NEEDS_LEADER = "distributed-needs-leader"
    NO_RELEASE = "no-release"
    NO_REPORTS = "no-reports"
    NO_ESTIMATOR = "no-estimator"
    BUSY = "busy"
    INTERNAL = "internal"

    def __str__(self) -> str:  # the wire string in f-strings and str() on every Python (3.10's Enum differs)
        return self.value


# -- base64url --------------------------------------------------------------------------------------------------------
def b64url(data: bytes) -> str:
    "base64url without padding (RFC 4648 section 5)"
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: Any, field: str) -> bytes:
    "Strict base64url without padding; ValueError naming ``field`` for anything else (non-canonical too)"
    if not isinstance(text, str) or not text.isascii() or "=" in text or len(text) % 4 == 1:
        raise ValueError(f"{field}: must be base64url without padding")
    try:
        data = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{field}: must be base64url without padding") from None
    if b64url(data) != text:  # non-canonical trailing bits
        raise ValueError(f"{field}: must be canonical base64url without padding")
    return data


# -- the upload payload -----------------------------------------------------------------------------------------------
PAYLOAD_FIELDS = frozenset(("public_share", "leader_share", "helper_share"))  # and "batch" (devices since 0.x)
SEALED_FIELDS = frozenset(("config_id", "ciphertext"))


BATCH_FORMS = "a UTC day YYYY-MM-DD, or a shorter batch's start YYYY-MM-DDTHH:MMZ"


def check_batch(batch: Any, field: str = "payload.batch") -> str:
    """A batch name: a UTC day YYYY-MM-DD, or a shorter batch's start YYYY-MM-DDTHH:MMZ (``clock.batch_at``; which
    one a campaign takes is its ``window``: ``Prio3Params.batch_end``); ShareRejected naming the field otherwise"""
    if isinstance(batch, str) and len(batch) in (10, 17) and batch.isascii():
        try:
            batch_start(batch)
            return batch
        except ValueError:
            pass
    raise ShareRejected(ProtocolError.INVALID_MESSAGE, field, f"must be a batch name ({BATCH_FORMS})")


@dataclass(frozen=True)
class ReportPayload:
    "A distributed payload, decoded from base64url: the public share and each aggregator's (config id, ciphertext)"

    public_share: bytes
    leader_config_id: int
    leader_ciphertext: bytes
    helper_config_id: int
    helper_ciphertext: bytes
    batch: str | None = None

    def helper_share(self) -> dict:
        "The helper's sealed share as it travels (the leader stores it and forwards it in an aggregation job)"
        return sealed_share(self.helper_config_id, self.helper_ciphertext)

    def to_dict(self) -> dict:
        "The payload as it travels (the inverse of parse_payload)"
        payload: dict[str, Any] = {"public_share": b64url(self.public_share),
                                   "leader_share": sealed_share(self.leader_config_id, self.leader_ciphertext),
                                   "helper_share": self.helper_share()}
        if self.batch is not None:
            payload["batch"] = self.batch
        return payload


def sealed_share(config_id: int, ciphertext: bytes) -> dict:
    "An input share sealed to an aggregator's HPKE config, as it travels"
    return {"config_id": config_id, "ciphertext": b64url(ciphertext)}


def parse_payload(payload: Any) -> ReportPayload:
    "Check the shape of a distributed payload; ShareRejected (reason ``invalid-message``) names the field"

    def check(condition: bool, field: str, message: str) -> None:
        if not condition:
            raise ShareRejected(ProtocolError.INVALID_MESSAGE, field, message)

    check(isinstance(payload, dict), "payload", "must be {public_share, leader_share, helper_share[, batch]}")
    unknown = sorted(set(payload) - PAYLOAD_FIELDS - {"batch"})
    check(not unknown, f"payload.{unknown[0] if unknown else ''}", "unknown field")
    batch = check_batch(payload["batch"]) if "batch" in payload else None
    public_share = _decoded(payload.get("public_share"), "payload.public_share")
    values: list[Any] = []  # leader id, ciphertext, helper id, ciphertext
    for key in ("leader_share", "helper_share"):
        share = payload.get(key)
        check(isinstance(share, dict) and set(share) == SEALED_FIELDS, f"payload.{key}",
              "must be {config_id, ciphertext}")
        config_id = share["config_id"]
        check(is_integer(config_id) and 0 <= config_id <= 255, f"payload.{key}.config_id",
              "must be an integer 0..255")
        values += [int(config_id), _decoded(share["ciphertext"], f"payload.{key}.ciphertext")]
    return ReportPayload(public_share, values[0], values[1], values[2], values[3], batch)


def _decoded(text: Any, field: str) -> bytes:
    try:
        return from_b64url(text, field)
    except ValueError as exc:
        raise ShareRejected(ProtocolError.INVALID_MESSAGE, field, str(exc).split(": ", 1)[-1]) from None


# -- aggregation jobs (leader -> helper) ------------------------------------------------------------------------------
JOB_FIELDS = frozenset(("campaign", "fingerprint", "batch", "reports"))
JOB_REPORT_FIELDS = frozenset(("report_id", "public_share", "helper_share", "leader_verifier_share"))
AGGREGATE_SHARE_FIELDS = frozenset(("campaign", "fingerprint", "batch", "report_count", "checksum"))


@dataclass(frozen=True)
class JobEntry:
    "One report of an aggregation job: its id (text), public share, the helper's sealed share, the leader's verifier"

    report_id: str
    public_share: bytes
    helper_share: dict  # {config_id, ciphertext} as the device sent it
    leader_verifier_share: bytes

    def to_dict(self) -> dict:
        return {"report_id": self.report_id, "public_share": b64url(self.public_share),
                "helper_share": self.helper_share, "leader_verifier_share": b64url(self.leader_verifier_share)}


def job_request(campaign: str, fingerprint: str, batch: str, entries: list[JobEntry]) -> dict:
    "The body of ``PUT /v1/peer/aggregation_jobs/<id>``"
    return {"campaign": campaign, "fingerprint": fingerprint, "batch": batch,
            "reports": [entry.to_dict() for entry in entries]}


def parse_job_request(body: Any) -> list[Any]:
    "The entries of a job request whose shape is right; ValueError (field ``body``) otherwise"
    if not isinstance(body, dict) or set(body) != JOB_FIELDS or not isinstance(body["reports"], list):
        raise ValueError("body: must be {campaign, fingerprint, batch, reports: [...]}")
    return body["reports"]


def parse_job_entry(entry: dict) -> tuple[bytes, Any, bytes, bytes]:
    """(public share, helper config id, helper ciphertext, leader verifier share) of a job entry whose fields are
    ``JOB_REPORT_FIELDS``; ValueError naming the field for a malformed value"""
    public_share = from_b64url(entry["public_share"], "public_share")
    sealed = entry["helper_share"]
    if not isinstance(sealed, dict) or set(sealed) != SEALED_FIELDS:
        raise ValueError("helper_share: must be {config_id, ciphertext}")
    ciphertext = from_b64url(sealed["ciphertext"], "helper_share.ciphertext")
    return public_share, sealed["config_id"], ciphertext, from_b64url(entry["leader_verifier_share"],
                                                                      "leader_verifier_share")


def job_answer_entry(report_id: str, verifier_message: bytes | None = None,
                     error: ProtocolError | str | None = None) -> dict:
    "One report of the helper's answer: ``continue`` with the verifier message, or ``reject`` with the error"
    if verifier_message is not None:
        return {"report_id": report_id, "result": "continue", "verifier_message": b64url(verifier_message)}
    return {"report_id": report_id, "result": "reject", "error": str(error or ProtocolError.INVALID_MESSAGE)}


def check_job_answer(answer: Any, request: dict) -> list[dict]:
    "The answer's entries, if they list the request's reports in order; ValueError otherwise"
    reports = answer.get("reports") if isinstance(answer, dict) else None
    expected = [r["report_id"] for r in request["reports"]]
    if not isinstance(reports, list) or [r.get("report_id") if isinstance(r, dict) else None
                                         for r in reports] != expected:
        raise ValueError("the helper's answer does not list the job's reports in order")
    return reports
