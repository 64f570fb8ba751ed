"""Cross-origin access for web pages: CORS on the routes a device uses, for the origins a deployment allows.

A route is open to browsers only if its view is marked with :func:`browser_route` (listing and fetching specs,
posting reports); every other route, the admin ones above all, never carries a CORS header and its preflight is
refused.  Allowed origins are configured per deployment (``CORS_ORIGINS``, ``LDP_CORS_ORIGINS``,
``ldp-telemetry serve --cors-origin``); with none (the default) no hook is installed and no response carries a
CORS header.

* Origins match exactly: scheme, host and port as the browser serialises them (``https://app.example.org``); no
  wildcard, no ``null`` (sandboxed frames and ``file:`` pages), and no credentials: the key travels in the
  ``Authorization`` header, never in a cookie, so ``Access-Control-Allow-Credentials`` is never sent.
* A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) is answered before any
  authentication: 204 with the allowed methods and headers, cached by the browser for :data:`MAX_AGE` seconds; or
  403 problem+json without CORS headers when the origin is not allowed or the route/method is not a browser route.
* Every answer of a browser route, problem responses included, carries ``Vary: Origin``; for an allowed origin it
  also carries ``Access-Control-Allow-Origin`` and exposes ``Retry-After`` (not readable cross-origin otherwise),
  so a page can read a 401/403/413/429 and back off as the SDK does.

Hand-written rather than flask-cors: the policy is a few lines (an exact origin set and a per-endpoint mark), and
flask-cors's defaults (any origin, reflected request headers) are the opposite of what this service needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

from .problems import Problem, problem_response

BROWSER_ROUTE = "ldp_browser_route"  # attribute set on a view function open to browsers
ALLOWED_HEADERS = "Authorization, Content-Type, Content-Encoding"  # what the SDKs send (gzip bodies included)
EXPOSED_HEADERS = "Retry-After"  # the SDKs' backoff reads it on 429 and 503
MAX_AGE = 7200  # seconds a browser may cache a preflight answer (Chromium's own cap)
DEFAULT_PORTS = {"http": 80, "https": 443}
PREFLIGHT = "ldp.preflight"  # WSGI environ key: the request is a preflight, answered by the before_request hook


def browser_route(view: Callable) -> Callable:
    "Mark a view as reachable from the allowed web origins (only routes a device uses, never admin ones)"
    setattr(view, BROWSER_ROUTE, True)
    return view


def parse_origins(value: Any) -> tuple[str, ...]:
    """The allowed origins in the form browsers send them (``scheme://host[:port]``, lower case, default port left
    out), from a list or a comma-separated string; ValueError naming CORS_ORIGINS for anything else"""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    out: list[str] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        origin = _normalise(text)
        if origin not in out:
            out.append(origin)
    return tuple(out)


def _normalise(text: str) -> str:
    problem = f"CORS_ORIGINS: {text!r} is not an origin; expected scheme://host[:port], e.g. https://app.example.org"
    if text == "*" or text.lower() == "null":
        raise ValueError(f"CORS_ORIGINS: {text!r} is not allowed; list each web origin exactly")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(problem) from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in DEFAULT_PORTS or not host or parts.path not in ("", "/") or parts.query or parts.fragment \
            or parts.username is not None or parts.password is not None or "*" in host:
        raise ValueError(problem)
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    elif not host.isascii():  # browsers send an internationalised host name in its ASCII (punycode) form
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(problem) from None
    return f"{scheme}://{host}" + ("" if port is None or port == DEFAULT_PORTS[scheme] else f":{port}")


def install(app: Flask, origins: Iterable[str]) -> None:
    "Answer preflights and add CORS headers on browser routes for ``origins`` (nothing at all if there are none)"
    allowed = frozenset(origins)
    if not allowed:
        return

    def is_browser_route(endpoint: str | None) -> bool:
        view = current_app.view_functions.get(endpoint) if endpoint is not None else None
        return bool(getattr(view, BROWSER_ROUTE, False))

    @app.before_request
    def _preflight() -> Response | None:
        environ = request.environ
        if environ["REQUEST_METHOD"] != "OPTIONS" or "HTTP_ACCESS_CONTROL_REQUEST_METHOD" not in environ \
                or "HTTP_ORIGIN" not in environ:
            return None
        environ[PREFLIGHT] = True
        origin = environ["HTTP_ORIGIN"]
        wanted = environ["HTTP_ACCESS_CONTROL_REQUEST_METHOD"].strip()
        methods = _browser_methods(app, request.path, is_browser_route)
        if origin not in allowed:
            refusal = Problem(403, f"origin {origin[:200]!r} is not allowed to call this collector from a browser",
                              field="Origin", slug="cors-refused", title="Cross-origin request refused")
        elif wanted not in methods:
            refusal = Problem(403, f"{wanted[:20]} {request.path[:200]} is not open to browsers (only the spec and "
                                   "report routes are; admin routes never are)", field="Access-Control-Request-Method",
                              slug="cors-refused", title="Cross-origin request refused")
        else:
            response = current_app.response_class(status=204)
            del response.headers["Content-Type"]
            response.headers.update({"Access-Control-Allow-Origin": origin,
                                     "Access-Control-Allow-Methods": ", ".join(sorted(methods)),
                                     "Access-Control-Allow-Headers": ALLOWED_HEADERS,
                                     "Access-Control-Max-Age": str(MAX_AGE)})
            return _vary(response, "Origin, Access-Control-Request-Method")
        return _vary(problem_response(refusal), "Origin, Access-Control-Request-Method")

    @app.after_request
    def _actual(response: Response) -> Response:
        if PREFLIGHT in request.environ or not is_browser_route(request.endpoint):
            return response  # a preflight (answered whole), or a route browsers never reach
        _vary(response, "Origin")
        origin = request.environ.get("HTTP_ORIGIN")
        if origin in allowed:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
        return response


def headers_for(app: Flask, method: str, path: str, origin: str | None) -> dict[str, str]:
    """The CORS headers of an answer given outside the application (by the worker's event loop: 408, 413, 503, a
    framing 400) to ``method path`` from ``origin``: those :func:`install` gives the application's own answers"""
    allowed = app.config.get("CORS_ORIGINS") or ()
    try:
        endpoint, _ = app.url_map.bind("localhost").match(path, method=method)
    except HTTPException:  # no such route (RequestRedirect included)
        return {}
    if not allowed or not getattr(app.view_functions.get(endpoint), BROWSER_ROUTE, False):
        return {}
    if origin is None or origin not in allowed:
        return {"Vary": "Origin"}
    return {"Vary": "Origin", "Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": EXPOSED_HEADERS}


def _browser_methods(app: Flask, path: str, is_browser_route: Callable[[str | None], bool]) -> set[str]:
    "The methods of ``path`` whose endpoint is a browser route (the same URL may also hold an admin method)"
    adapter = app.url_map.bind("localhost")
    out = set()
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        try:
            endpoint, _ = adapter.match(path, method=method)
        except HTTPException:  # no route for this method (RequestRedirect included)
            continue
        if is_browser_route(endpoint):
            out.add(method)
    return out


def _vary(response: Response, names: str) -> Response:
    response.vary.update(name.strip() for name in names.split(","))
    return response
