"""The collector's errors, all under ``client_sdk.errors.LDPError`` (the whole hierarchy is written out there).

Storage errors map to HTTP answers in ``collector.app`` (StorageUnavailable: 503/507 with Retry-After), ``Problem``
is itself an HTTP problem+json answer (``collector.problems`` renders it).
"""

from __future__ import annotations

from typing import Any

from client_sdk.errors import LDPError

TYPE_PREFIX = "urn:ldp-telemetry:problem:"
TITLES = {
    400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found", 405: "Method not allowed",
    409: "Conflict", 413: "Content too large", 415: "Unsupported media type", 422: "Unprocessable content",
    429: "Too many requests", 500: "Internal server error", 503: "Service unavailable",
}
SLUGS = {
    400: "bad-request", 401: "unauthorized", 403: "forbidden", 404: "not-found", 405: "method-not-allowed",
    409: "conflict", 413: "too-large", 415: "unsupported-media-type", 422: "invalid-field", 429: "rate-limited",
    500: "internal", 503: "unavailable",
}


class StorageError(LDPError):
    "Base class of the storage errors"


class CampaignNotFound(StorageError):
    "No campaign (or campaign version) with that name"


class VersionConflict(StorageError):
    "A spec asked for a version other than the next free one"


class CampaignClosed(StorageError):
    "The campaign was closed: it takes no new versions"


class RateLimited(StorageError):
    "The key's token bucket is empty; ``retry_after`` says for how many seconds"

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limit exceeded; retry after {retry_after:.2f} s")
        self.retry_after = retry_after


class StorageUnavailable(StorageError):
    "The database cannot serve requests now (503); the transaction, if any, was rolled back"

    status = 503
    retry_after = 60

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class DatabaseLocked(StorageUnavailable):
    "The write lock stayed busy past the busy timeout (another process holds it)"

    retry_after = 5


class DatabaseCorrupt(StorageUnavailable):
    "The database file is damaged or is not a SQLite database"


class DiskFull(StorageUnavailable):
    "No room left to write (507 Insufficient Storage)"

    status = 507


class AdminApiError(LDPError):
    "A request to the collector's admin API failed: ``status`` (None without an answer) and the ``problem`` body"

    def __init__(self, message: str, status: int | None = None, problem: dict | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem or {}


class ArchiveError(LDPError):
    "The archive or an aggregate file cannot be written or read as asked"


class ProvisionError(LDPError):
    "A campaign could not be created: what it is provisioned on first could not be (the message says why)"


class Problem(LDPError):
    "An error response; raise it anywhere in a view"

    def __init__(self, status: int, detail: str, *, field: str | None = None, slug: str | None = None,
                 title: str | None = None, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field
        self.slug = slug or SLUGS.get(status, "error")
        self.title = title or TITLES.get(status, "Error")
        self.headers = headers or {}
        self.extra = extra

    def to_dict(self) -> dict:
        body: dict[str, Any] = {"type": TYPE_PREFIX + self.slug, "title": self.title, "status": self.status,
                                "detail": self.detail}
        if self.field is not None:
            body["field"] = self.field
        body.update(self.extra)
        return body
