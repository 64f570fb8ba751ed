"""The shuffler's client of its upstream collector, with the shuffler's own key (role ``shuffler``): campaign
specs (read to check reports and learn each version's batching rule; also served to devices) and forwarded
batches."""

from __future__ import annotations

import gzip
import json
import threading
import time
from typing import Any
from urllib.parse import quote

import requests

from client_sdk.errors import LDPError, SpecError
from client_sdk.spec import Spec

from ..config import DEFAULTS

MISS_SECONDS = 10.0  # a version the collector does not know is asked again after this long


class UpstreamError(LDPError):
    "The collector did not acknowledge a request (unreachable, or an answer other than 200): retry later"


class BudgetSpent(LDPError):
    "The collector refused a batch past its campaign's budget (409 budget-exhausted): it is never to be released"


class Upstream:
    "Requests to the collector at ``url`` with ``token``; safe to share between threads (a session per thread)"

    def __init__(self, url: str, token: str, *, timeout: float = DEFAULTS["PEER_TIMEOUT"]) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.timeout = timeout
        self.local = threading.local()
        self.specs: dict[tuple[str, str], Spec] = {}
        self.misses: dict[tuple[str, str], float] = {}

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self.local, "session", None)
        if session is None:
            session = self.local.session = requests.Session()
        return session

    def get(self, path: str, params: dict | None = None) -> requests.Response:
        "A GET passed through (the campaign listing and specs devices read); UpstreamError if unreachable"
        try:
            return self._session().get(self.url + path, params=params, headers=self.headers, timeout=self.timeout)
        except requests.RequestException as exc:
            raise UpstreamError(f"collector unreachable: {type(exc).__name__}") from None

    def spec(self, name: str, fingerprint: str) -> Spec | None:
        "The spec of the campaign version (cached: versions are immutable), or None if the collector has none"
        key = (name, fingerprint)
        found = self.specs.get(key)
        if found is not None:
            return found
        if time.monotonic() - self.misses.get(key, -MISS_SECONDS) < MISS_SECONDS:
            return None
        path = f"/v1/campaigns/{quote(name, safe='')}"
        response = self.get(path)
        if response.status_code == 404:
            self.misses[key] = time.monotonic()
            return None
        if response.status_code != 200:
            raise UpstreamError(f"GET {path}: {response.status_code}")
        latest = response.json()
        candidates = [latest] + [self.get(path, {"version": v}).json() for v in latest.get("versions", [])
                                 if v != latest.get("version")]
        for item in candidates:
            try:
                spec = Spec.from_dict(item["spec"])
            except (SpecError, KeyError, TypeError):
                continue
            self.specs[(spec.name, spec.fingerprint)] = spec
        if key not in self.specs:
            self.misses[key] = time.monotonic()
        return self.specs.get(key)

    def forward(self, batch_id: str, reports_json: str) -> dict:
        "POST one batch (its reports as a JSON array, gzip); the collector's counts once it acknowledged it"
        body = gzip.compress(f'{{"batch_id":{json.dumps(batch_id)},"reports":{reports_json}}}'.encode(),
                             compresslevel=1)
        headers = {**self.headers, "Content-Type": "application/json", "Content-Encoding": "gzip"}
        try:
            response = self._session().post(self.url + "/v1/shuffled-batches", data=body, headers=headers,
                                            timeout=self.timeout)
        except requests.RequestException as exc:
            raise UpstreamError(f"collector unreachable: {type(exc).__name__}") from None
        if response.status_code == 409 and "budget-exhausted" in response.text[:2000]:
            raise BudgetSpent(response.text[:300])
        if response.status_code != 200:
            raise UpstreamError(f"POST /v1/shuffled-batches: {response.status_code} {response.text[:300]}")
        answer: dict[str, Any] = response.json()
        return answer
