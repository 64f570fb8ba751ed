"""RFC 9457 problem details: every error the collector returns is ``application/problem+json``.

A body looks like ``{"type": "urn:ldp-telemetry:problem:invalid-field", "title": "Invalid field", "status": 400,
"detail": "...", "field": "reports[3].payload"}``; ``field`` (an extension member) names the offending input.
Handlers for Werkzeug's HTTP errors (404, 405, 413, 415, ...) and for unexpected exceptions (500) make sure no
HTML error page ever leaves the service, and a 500 never echoes request data.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from .errors import TITLES, Problem

PROBLEM_CONTENT_TYPE = "application/problem+json"
logger = logging.getLogger("collector")


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
