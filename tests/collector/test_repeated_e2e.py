"""End to end, repeated collection: a real ``ldp-telemetry serve`` on loopback with a SQLite file, restarted each
simulated day with its clock moved on (``LDP_CLOCK_OFFSET``, as the distributed tests move it), and devices of the
Python SDK (``client_sdk.Client``, each with its own state directory and its clock moved the same) reporting once a
day.  Every day's interval covers the true mean (asked at a family-wise level), and the ledger of a device whose
value never changes never moves after its first answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest
import requests

import client_sdk
from client_sdk import ReportPolicy

from .helpers import create_key, free_port, running_server

DEVICES, DAYS = 80, 4
DEVICE_THREADS = 4  # devices reporting at the same time
SPEC = {"name": "screen_time", "kind": "repeated", "epsilon": 2.0, "mode": "mean", "range": [0, 10],
        "rounding_points": 6, "period": "day"}
FAMILY_CONFIDENCE = 1 - 1e-3 / DAYS  # all DAYS intervals hold at once except with probability 1e-3
DAY = 86_400.0


class Collector:
    "The server, restarted with its clock ``offset`` seconds ahead; devices read the same clock"

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.db, self.port, self.offset = tmp, tmp / "collector.db", free_port(), 0.0
        self.admin, self.ingest = create_key(self.db, "admin"), create_key(self.db, "ingest")
        self.url = f"http://127.0.0.1:{self.port}"
        self.stack = ExitStack()

    def start(self, offset: float) -> None:
        self.stack.close()
        self.offset = offset
        with pytest.MonkeyPatch.context() as env:  # the server copies the environment as it starts
            env.setenv("LDP_CLOCK_OFFSET", repr(offset))
            self.stack.enter_context(running_server(self.db, self.tmp / "serve.log", self.port, 1))

    def clock(self) -> float:
        return time.time() + self.offset

    def get(self, path: str, **params: object) -> dict:
        response = requests.get(self.url + path, params=params, headers={"Authorization": f"Bearer {self.admin}"},
                                timeout=60)
        assert response.ok, response.text
        return dict(response.json())


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    server = Collector(tmp_path)
    server.start(0.0)
    try:
        yield server
    finally:
        server.stack.close()


def value_of(device: int, day: int) -> float:
    "Even devices never change; odd ones move between two neighbourhoods every other day"
    base = (device % 10) + 0.25
    return base if device % 2 == 0 else min(base + 4.0 * (day % 2), 10.0)


def report_day(client: client_sdk.Client, index: int, day: int) -> float:
    "One device's day: its value recorded (a second report that day refused), uploaded; its ledger's epsilon"
    assert client.record(SPEC["name"], value_of(index, day)), (index, day)
    assert client.record(SPEC["name"], value_of(index, day)).status.value == "refused_by_policy"
    client.flush()
    return float(client.spent(SPEC["name"]).epsilon)


def test_devices_report_every_day_and_the_series_covers_the_truth(collector: Collector, tmp_path: Path) -> None:
    created = requests.post(collector.url + "/v1/campaigns", json=SPEC, timeout=60,
                            headers={"Authorization": f"Bearer {collector.admin}"})
    assert created.status_code == 201, created.text
    clients = [client_sdk.Client(collector.url, collector.ingest, tmp_path / f"device-{index}", background=False,
                                 campaigns=[SPEC["name"]], clock=collector.clock, policy=ReportPolicy(),
                                 rng=client_sdk.DeterministicRandom(1000 + index), sleep=lambda seconds: None)
               for index in range(DEVICES)]
    first_charge: dict[int, float] = {}
    try:
        for day in range(DAYS):
            if day:
                collector.start(collector.offset + DAY)  # the collector's next day
            with ThreadPoolExecutor(DEVICE_THREADS) as pool:
                spent = list(pool.map(report_day, clients, range(DEVICES), [day] * DEVICES))
            for index in range(0, DEVICES, 2):  # an unchanged device: charged its first answer, never again
                assert spent[index] == first_charge.setdefault(index, spent[index]) == SPEC["epsilon"]
            assert max(spent) <= SPEC["epsilon"] * SPEC["rounding_points"]
        result = collector.get(f"/v1/campaigns/{SPEC['name']}/estimate", confidence=FAMILY_CONFIDENCE)
    finally:
        for client in clients:
            client.close(timeout=0)
    periods = result["periods"]
    assert len(periods) == DAYS and all(item["n"] == DEVICES for item in periods)
    for day, item in enumerate(periods):
        truth = sum(value_of(index, day) for index in range(DEVICES)) / DEVICES
        assert item["ci_low"] <= truth <= item["ci_high"], (day, item, truth)
    truths = [sum(value_of(index, day) for index in range(DEVICES)) / DEVICES for day in range(DAYS)]
    low, high = result["change"]["interval"]
    assert low <= truths[-1] - truths[-2] <= high
