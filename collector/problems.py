"""RFC 9457 problem details: every error the collector returns is ``application/problem+json``.

A body looks like ``{"type": "urn:ldp-telemetry:problem:invalid-field", "title": "Invalid field", "status": 400,
"detail": "...", "field": "reports[3].payload"}``; ``field`` (an extension member) names the offending input.
Handlers for Werkzeug's HTTP errors (404, 405, 413, 415, ...) and for unexpected exceptions (500) make sure no
HTML error page ever leaves the service, and a 500 never echoes request data.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from client_sdk.errors import LDPError

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:ldp-telemetry:problem:"
logger = logging.getLogger("collector")

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


def invalid(field: str, reason: str, status: int = 400) -> Problem:
    "A 400 naming the field"
    slug = "invalid-field" if status == 400 else None
    return Problem(status, f"{field}: {reason}", field=field, slug=slug, title="Invalid field" if slug else None)


def problem_response(problem: Problem) -> Response:
    response = Response(json.dumps(problem.to_dict()), status=problem.status, mimetype=PROBLEM_CONTENT_TYPE)
    for name, value in problem.headers.items():
        response.headers[name] = value
    return response


def register_error_handlers(app: Flask) -> None:
    "Every error path answers problem+json"

    @app.errorhandler(Problem)
    def _problem(problem: Problem) -> Response:
        return problem_response(problem)

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException) -> Response:
        status = error.code or 500
        detail = {
            404: "no such resource", 405: "method not allowed for this resource",
            413: "request body too large", 415: "unsupported media type",
        }.get(status, error.description or TITLES.get(status, "error"))
        headers = {}
        if status == 405 and getattr(error, "valid_methods", None):
            headers["Allow"] = ", ".join(error.valid_methods)  # type: ignore[attr-defined]
        field = "body" if status in (413, 415) else None
        return problem_response(Problem(status, detail, field=field, headers=headers))

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        # Log the exception type and traceback only: never request headers or bodies (they could identify users).
        logger.exception("unhandled %s", type(error).__name__)
        return problem_response(Problem(500, "the collector failed to process the request"))
