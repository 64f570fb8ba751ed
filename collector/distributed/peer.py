"""The leader's HTTP client to its helper: JSON requests with the peer token, timeouts, retries with backoff.

Exceptions::

    PeerError                 base class
    ├── PeerUnavailable       retryable: connection refused or reset, timeout, 5xx, 429 (the helper may have
    │                         committed: every request is idempotent, so it is sent again unchanged)
    └── PeerRefused           permanent: a 4xx problem+json from the helper (``slug`` and ``detail``)

The transport is small (:class:`Transport`) so tests can point the client at a Flask test client
(:class:`FlaskTransport`) instead of a real helper process (:class:`HttpTransport`, ``requests``).
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import requests

from client_sdk.distributed import checked_url
from client_sdk.errors import LDPError

from ..config import DEFAULTS

DEFAULT_TIMEOUT: float = DEFAULTS["PEER_TIMEOUT"]  # seconds for one request (collector.config)
CONNECT_TIMEOUT = 3.0


class PeerError(LDPError):
    "A request to the helper failed"


class PeerUnavailable(PeerError):
    "The helper did not answer usably (network, timeout, 5xx, 429): retry later with the same request"


class PeerRefused(PeerError):
    "The helper refused the request (4xx): retrying the same request will not help"

    def __init__(self, status: int, slug: str, detail: str) -> None:
        super().__init__(f"helper refused ({status} {slug}): {detail}")
        self.status, self.slug, self.detail = status, slug, detail


class Transport(Protocol):
    def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        "(status, decoded JSON body or None); OSError for a network failure"
        ...


class HttpTransport:
    "``requests`` against the helper's base URL"

    def __init__(self, base_url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.trust_env = False  # loopback or an operator-given URL: no proxies from the environment

    def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        try:
            response = self.session.request(method, self.base_url + path, json=body, headers=headers,
                                            timeout=(min(CONNECT_TIMEOUT, self.timeout), self.timeout))
        except requests.RequestException as exc:
            raise OSError(f"{type(exc).__name__}: {exc}") from exc
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None


class FlaskTransport:
    "A Flask test client (both aggregators in one process, tests)"

    def __init__(self, client: Any) -> None:
        self.client = client

    def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        response = self.client.open(path, method=method, json=body, headers=headers)
        return response.status_code, response.get_json(silent=True)


@dataclass
class Backoff:
    "Exponential backoff with full jitter: attempt k waits a uniform time in [0, min(cap, base 2^k)]"

    base: float = 0.5
    cap: float = 60.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.cap, self.base * 2 ** min(attempt, 30))
        return ceiling * (0.5 + secrets.randbelow(1001) / 2000)  # in [ceiling/2, ceiling]: never hammers at once


def rate_limit_wait(problem: dict) -> float:
    "The seconds a 429's problem body asks the leader to wait (``retry_after``: the helper's bucket refill), or 0"
    hint = problem.get("retry_after")
    if isinstance(hint, bool) or not isinstance(hint, (int, float)) or not math.isfinite(hint) or hint <= 0:
        return 0.0
    return float(hint)


class PeerClient:
    """Requests to the helper; ``retries`` extra attempts after a retryable failure, waiting ``backoff`` between.

    After a 429 the wait is at least the helper's ``retry_after`` (up to the backoff's cap): a retry sooner finds
    the peer bucket still empty.  A 503's Retry-After is a coarse hint (5-60 s); it gets the backoff"""

    def __init__(self, transport: Transport, token: str, *, retries: int = 2, backoff: Backoff | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.transport = transport
        self.token = token
        self.retries = retries
        self.backoff = backoff or Backoff(base=0.2, cap=5.0)
        self.sleep = sleep

    @classmethod
    def for_url(cls, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT, **kwargs: Any) -> PeerClient:
        "A client to the helper at ``url``: https, or http to a loopback host (ValueError otherwise)"
        return cls(HttpTransport(checked_helper_url(url), timeout), token, **kwargs)


    def call(self, method: str, path: str, body: Any = None, *, auth: bool = True) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        last: Exception | None = None
        asked = 0.0  # the last 429's retry_after
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(max(self.backoff.delay(attempt - 1), min(asked, self.backoff.cap)))
            asked = 0.0
            try:
                status, answer = self.transport.request(method, path, body, headers)
            except OSError as exc:
                last = PeerUnavailable(f"helper unreachable: {exc}")
                continue
            if 200 <= status < 300:
                if not isinstance(answer, dict):
                    raise PeerUnavailable(f"helper answered {status} without a JSON object")
                return answer
            problem = answer if isinstance(answer, dict) else {}
            detail = str(problem.get("detail", ""))[:500]
            if status >= 500 or status == 429:
                last = PeerUnavailable(f"helper answered {status}: {detail}")
                asked = rate_limit_wait(problem) if status == 429 else 0.0
                continue
            slug = str(problem.get("type", "")).rsplit(":", 1)[-1] or "error"
            raise PeerRefused(status, slug, detail)
        assert last is not None
        raise last

    # -- the helper's endpoints ---------------------------------------------------------------------------------
    def hpke_configs(self) -> list[dict]:
        configs = self.call("GET", "/v1/hpke_config", auth=False).get("configs")
        if not isinstance(configs, list) or not configs:
            raise PeerUnavailable("helper published no HPKE config")
        return configs

    def provision(self, name: str, body: dict) -> dict:
        return self.call("PUT", f"/v1/peer/campaigns/{name}", body)

    def aggregation_job(self, job_id: str, body: dict) -> dict:
        return self.call("PUT", f"/v1/peer/aggregation_jobs/{job_id}", body)

    def aggregate_share(self, body: dict) -> dict:
        return self.call("POST", "/v1/peer/aggregate_shares", body)


def checked_helper_url(url: str) -> str:
    """The helper's URL if the peer token and the verify key would not travel in clear: https, or plain http to a
    loopback host only (127.0.0.0/8, ::1, localhost); ValueError naming HELPER_URL otherwise"""
    return checked_url(url, "HELPER_URL")
