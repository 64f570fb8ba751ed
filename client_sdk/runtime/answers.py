"""How the SDK reads the collector's answers: which reports a 2xx acknowledges, what a failure means, when to
retry.  Pure functions over :class:`~client_sdk.runtime.transport.Response`; the rules are in ``docs/sdk.md``.
"""

from __future__ import annotations

import json
from typing import Any

from .transport import Response

RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


def condition_for(status: int) -> str:
    "The delivery condition a whole-request answer means (the batch stays queued in every case)"
    if status in RETRYABLE_STATUSES or status >= 500:
        return "server_unavailable"
    return {401: "unauthorized", 403: "forbidden", 404: "not_found", 413: "too_large"}.get(
        status, "redirected" if 300 <= status < 400 else "refused")


def acknowledgement(response: Response, ids: list[str]) -> dict[str, str] | str:
    "The reports the collector rejected by name (id -> reason), or why the answer does not acknowledge the batch"
    data = _json_or_none(response)
    if not isinstance(data, dict):
        return "the answer is not the collector's JSON"
    counts = [data.get(name) for name in ("accepted", "duplicate", "rejected")]
    if any(type(c) is not int or c < 0 for c in counts):
        return "the answer has no accepted/duplicate/rejected counts"
    if sum(counts) != len(ids):  # type: ignore[arg-type]
        return f"the counts add up to {sum(counts)}, the batch had {len(ids)} reports"  # type: ignore[arg-type]
    errors = data.get("errors")
    if not isinstance(errors, list) or len(errors) != counts[2]:
        return "the answer does not name every rejected report"
    batch, rejected = set(ids), {}
    for error in errors:
        report_id = error.get("report_id") if isinstance(error, dict) else None
        if report_id not in batch or report_id in rejected:
            return "a rejection names no report of the batch"
        rejected[report_id] = f"{error.get('field')}: {error.get('reason')}"
    return rejected


def campaign_list(response: Response) -> dict[str, dict] | None:
    data = _json_or_none(response)
    items = data.get("campaigns") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    return {item["name"]: item for item in items
            if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("spec"), dict)}


def retry_after(response: Response, now: float) -> float | None:
    "Retry-After in delta-seconds or HTTP-date form (RFC 9110, section 10.2.3), as seconds from ``now``"
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        # imported here: email.utils loads datetime (+13 ms, 21 modules), only for a Retry-After date
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - now)
    return max(0.0, seconds) if seconds == seconds and seconds != float("inf") else None


def _json_or_none(response: Response) -> Any:
    try:
        return json.loads(response.body)
    except ValueError:
        return None


def max_reports(response: Response) -> int | None:
    "The batch limit a 413 states (``max_reports``, a positive integer: the key's limit), or None"
    data = _json_or_none(response)
    most = data.get("max_reports") if isinstance(data, dict) else None
    return most if type(most) is int and most > 0 else None


def problem(response: Response) -> str:
    data = _json_or_none(response)
    if not isinstance(data, dict):
        return "no details"
    return f"{data.get('field', '')}: {data.get('detail', '')}".strip(": ") or "no details"
