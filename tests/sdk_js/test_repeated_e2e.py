"""Repeated collection recorded by the JavaScript SDK, end to end: a real ``ldp-telemetry serve`` on loopback with a
SQLite file, restarted each simulated day with its clock moved on (``LDP_CLOCK_OFFSET``, the collector of
tests/collector/test_repeated_e2e.py), and devices of sdk-js in Node (one process per day, each device a Client over
its own state directory, so its memoized answers and ledger carry over; scripts/repeated-devices.mjs) reporting a
mean campaign and a histogram campaign with output perturbation once a day.  Every day's intervals cover the truth
(family-wise), a second report the same day is refused, and the ledger of a device whose value never changes never
moves after its first answer."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import requests

from tests.collector.test_repeated_e2e import DAY, DAYS, Collector, collector, value_of

__all__ = ["collector"]  # the fixture

DEVICES = 60
MEAN = {"name": "js_screen_time", "kind": "repeated", "epsilon": 2.0, "mode": "mean", "range": [0, 10],
        "rounding_points": 6, "period": "day"}
HISTOGRAM = {"name": "js_screen_hist", "kind": "repeated", "epsilon": 4.0, "mode": "histogram", "range": [0, 10],
             "buckets": 5, "bits": 2, "gamma": 0.05, "period": "day"}
FAMILY_CONFIDENCE = 1 - 1e-3 / (DAYS * (1 + HISTOGRAM["buckets"]))  # every interval at once, but for 1e-3


def js_day(sdk_js: Path, server: Collector, root: Path, day: int) -> list[dict]:
    "Every device's day in one Node process: its values recorded (a second one refused), uploaded; its ledger"
    devices = [{"dir": str(root / f"device-{index}"), "seed": f"{index}:{day}",
                "values": {MEAN["name"]: value_of(index, day), HISTOGRAM["name"]: value_of(index, day)}}
               for index in range(DEVICES)]
    body = {"url": server.url, "key": server.ingest, "offset": server.offset, "devices": devices}
    done = subprocess.run([shutil.which("node") or "node", "scripts/repeated-devices.mjs"], cwd=sdk_js,
                          input=json.dumps(body), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return list(json.loads(done.stdout))


def test_node_devices_report_every_day_and_an_unchanged_ledger_never_moves(
        sdk_js: Path, collector: Collector, tmp_path: Path) -> None:
    for spec in (MEAN, HISTOGRAM):
        created = requests.post(collector.url + "/v1/campaigns", json=spec, timeout=60,
                                headers={"Authorization": f"Bearer {collector.admin}"})
        assert created.status_code == 201, created.text
    first_charge: dict[tuple[int, str], float] = {}
    for day in range(DAYS):
        if day:
            collector.start(collector.offset + DAY)  # the collector's next day
        outcomes = js_day(sdk_js, collector, tmp_path / "devices", day)
        for index, outcome in enumerate(outcomes):
            assert set(outcome["first"].values()) == {"queued"}, outcome
            assert set(outcome["second"].values()) == {"refused_by_policy"}, outcome
            assert (outcome["sent"], outcome["remaining"], outcome["rejected"]) == (2, 0, 0), outcome
            for spec in (MEAN, HISTOGRAM):
                spent = outcome["spent"][spec["name"]]
                assert spent["reports"] == day + 1 and spent["lastBatch"] is not None, spent
                if index % 2 == 0:  # an unchanged device: charged its first answer, never again
                    assert spent["epsilon"] == first_charge.setdefault((index, spec["name"]), spent["epsilon"])
                    assert spent["epsilon"] == spec["epsilon"]
                assert spent["epsilon"] <= spec["epsilon"] * (spec.get("rounding_points") or spec["bits"] + 1)
    mean = collector.get(f"/v1/campaigns/{MEAN['name']}/estimate", confidence=FAMILY_CONFIDENCE)
    histogram = collector.get(f"/v1/campaigns/{HISTOGRAM['name']}/estimate", confidence=FAMILY_CONFIDENCE)
    assert len(mean["periods"]) == len(histogram["periods"]) == DAYS
    for day, (item, rows) in enumerate(zip(mean["periods"], histogram["periods"], strict=True)):
        values = [value_of(index, day) for index in range(DEVICES)]
        assert item["n"] == rows["n"] == DEVICES
        assert item["ci_low"] <= sum(values) / DEVICES <= item["ci_high"], (day, item)
        for bucket, row in enumerate(rows["values"]):
            share = sum(min(int(v / 2), 4) == bucket for v in values) / DEVICES
            assert row["ci_low"] <= share <= row["ci_high"], (day, bucket, row, share)
    assert all(item["ci_high"] - item["ci_low"] < MEAN["range"][1] for item in mean["periods"]), "not vacuous"
