"""The in-memory collector the device tests talk to, and a client wired to it (``fake`` and ``listed_campaigns``,
the fixtures over them, are in conftest.py)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import client_sdk
from client_sdk import Client, ReportPolicy
from client_sdk.runtime.transport import MockTransport, Request, Response

COLLECTOR_URL = "http://collector.test"

SPEC = client_sdk.load_spec({"name": "browser", "mechanism": "oue", "epsilon": 1.0,
                             "domain": ["chrome", "firefox", "safari"]})


class FakeCollector:
    "Answers spec fetches and report batches; ``script`` holds the statuses of the next report posts"

    def __init__(self) -> None:
        self.script: list[Response | Exception] = []
        self.stored: dict[str, dict] = {}
        self.posts: list[list[dict]] = []
        self.spec_fetches = 0
        self.spec_status = 200
        self.extra_campaigns: list[dict] = []

    def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            self.spec_fetches += 1
            if self.spec_status != 200:
                return Response.from_json(self.spec_status, {"detail": "no"})
            item = {"name": SPEC.name, "version": 1, "fingerprint": SPEC.fingerprint, "spec": SPEC.to_dict()}
            if request.url.endswith("/v1/campaigns"):
                return Response.from_json(200, {"campaigns": [item, *self.extra_campaigns]})
            return Response.from_json(200, item)
        reports = request.json()["reports"]
        self.posts.append(reports)
        if self.script:
            outcome = self.script.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        new = [r for r in reports if r["report_id"] not in self.stored]
        for report in new:
            self.stored[report["report_id"]] = report
        return Response.from_json(200, {"accepted": len(new), "duplicate": len(reports) - len(new), "rejected": 0,
                                        "errors": []})


def listing(spec: client_sdk.Spec) -> dict:
    "The item of ``GET /v1/campaigns`` that lists ``spec`` (version 1)"
    return {"name": spec.name, "version": 1, "fingerprint": spec.fingerprint, "spec": spec.to_dict()}


def make_client(tmp_path: Path, fake: Any, *, url: str = COLLECTOR_URL, **kwargs: Any) -> Client:
    "A foreground client over ``fake`` with its state in ``tmp_path/state``: no sleeps, seeded jitter and randomness"
    options = {"transport": MockTransport(fake), "background": False, "policy": ReportPolicy.unlimited(),
               "campaigns": ["browser"],
               "rng": client_sdk.DeterministicRandom(7), "sleep": lambda s: None, "jitter": random.Random(1)}
    options.update(kwargs)
    return Client(url, "ldp_key", tmp_path / "state", **options)
