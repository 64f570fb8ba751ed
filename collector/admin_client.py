"""The one client of the collector's admin HTTP API (``/v1/campaigns...`` with an admin key).

``ldp-telemetry campaign ... --url``, ``ldp-telemetry report --url`` (:mod:`collector.reporting`) and the demo all
call the collector through :class:`AdminClient`, so an HTTP failure reads the same everywhere: any answer other than
2xx raises :class:`~collector.errors.AdminApiError` with its ``status`` and RFC 9457 ``problem`` ("the collector
answered HTTP 409: <detail>"); no answer raises it with ``status`` None ("cannot reach the collector at URL
(reason)").  ``requests`` is imported on the first request, so the CLI's start-up does not pay for it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .errors import AdminApiError

DEFAULT_TIMEOUT = 30.0  # seconds for one request; a collect of a large batch asks for more


def campaign_path(name: str, suffix: str = "") -> str:
    "The API path of campaign ``name`` (quoted), plus ``suffix`` (``/close``, ``/estimate?...``)"
    return "/v1/campaigns/" + quote(name, safe="") + suffix


class AdminClient:
    """Requests to one collector with one admin token, over one keep-alive session.

    :param url: the collector's base URL (a trailing ``/`` is ignored)
    :param token: an admin API key, sent as ``Authorization: Bearer``
    :param timeout: seconds for each request unless the call gives its own
    """

    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._session: Any = None

    def request(self, method: str, path: str, body: Any = None, *, params: dict | None = None,
                timeout: float | None = None) -> tuple[int, Any]:
        "(status, JSON body) of a 2xx answer; AdminApiError for any other answer or none"
        # imported here: the CLI's start-up (report --db, campaign --db) does not pay for it (+0.25 s)
        import requests

        if self._session is None:
            self._session = requests.Session()
            self._session.headers.update({"Authorization": f"Bearer {self.token}", "Accept": "application/json"})
        try:
            response = self._session.request(method, self.url + path, json=body, params=params,
                                             timeout=timeout or self.timeout)
        except requests.RequestException as exc:
            raise AdminApiError(f"cannot reach the collector at {self.url} ({_reason(exc)})") from None
        if not response.ok:
            problem = _problem(response)
            detail = str(problem.get("detail", ""))
            raise AdminApiError(f"the collector answered HTTP {response.status_code}{': ' + detail if detail else ''}",
                                response.status_code, problem)
        try:
            return response.status_code, response.json() if response.content else None
        except ValueError:
            raise AdminApiError(f"the collector at {self.url} answered {path} with a body that is not JSON",
                                response.status_code) from None

    def get(self, path: str, **options: Any) -> Any:
        "The JSON body of GET ``path``"
        return self.request("GET", path, **options)[1]

    def post(self, path: str, body: Any = None, **options: Any) -> Any:
        "The JSON body of POST ``path``"
        return self.request("POST", path, body, **options)[1]

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reason(exc: BaseException) -> str:
    "The operating system's reason behind a requests failure (``[Errno 111] Connection refused``), or its type"
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        cause = pending.pop()
        if cause is None or id(cause) in seen:
            continue
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno and cause.strerror:
            return f"[Errno {cause.errno}] {cause.strerror}"
        reason = getattr(cause, "reason", None)  # urllib3's MaxRetryError keeps the failure here
        pending += [cause.__cause__, cause.__context__, reason if isinstance(reason, BaseException) else None]
    return type(exc).__name__


def _problem(response: Any) -> dict:
    "The RFC 9457 problem body of an answer, or {}"
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
