"""End to end for the heavy_hitters kind: Python SDK devices record strings through a real ``ldp-telemetry serve``
(gunicorn, loopback, a SQLite file); ``ldp-telemetry report`` (over the API, and from the database) lists the
planted strings, none of them in any spec, with 99.9 % intervals that cover their true frequencies (fixed seeds)."""

from __future__ import annotations

import json
import random
import subprocess

import client_sdk
from client_sdk import Client, ReportPolicy
from collector.storage import Storage

from .helpers import ldp_command, running_server
from .test_e2e import call

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
SPEC = {"name": "new_words", "kind": "heavy_hitters", "epsilon": 4.0, "max_length": 5, "alphabet": ALPHABET,
        "algorithm": "pem", "segment_length": 2}
PLANTED = {"hello": 0.35, "wrld.": 0.25}
USERS = 2000


def test_planted_strings_are_found_and_their_intervals_cover(tmp_path):
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    rng = random.Random(5)
    values = [word for word, share in PLANTED.items() for _ in range(int(share * USERS))]
    values += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5))) for _ in range(USERS - len(values))]
    rng.shuffle(values)
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _):
        call(url + "/v1/campaigns", admin, "POST", SPEC)
        for device, chunk in enumerate((values[:USERS // 2], values[USERS // 2:])):
            client = Client(url, ingest, tmp_path / f"device-{device}", rng=client_sdk.DeterministicRandom(device),
                            policy=ReportPolicy.unlimited(), background=False, batch_size=500,
                            campaigns=[SPEC["name"]])
            for value in chunk:
                assert client.record(SPEC["name"], value)
            result = client.close(timeout=60)
            assert result.remaining == 0 and result.rejected == 0 and result.sent == len(chunk)
        over_api = subprocess.run(ldp_command("report", SPEC["name"], "--url", url, "--token", admin, "--format",
                                              "json", "--confidence", "0.999"), capture_output=True, text=True,
                                  check=False)
    assert over_api.returncode == 0, over_api.stderr
    from_db = subprocess.run(ldp_command("report", SPEC["name"], "--db", str(db_path), "--confidence", "0.999"),
                             capture_output=True, text=True, check=False)
    assert from_db.returncode == 0, from_db.stderr
    assert "detection threshold" in from_db.stdout and "hello" in from_db.stdout

    report = json.loads(over_api.stdout)
    assert report["kind"] == "heavy_hitters" and report["n"] == USERS
    threshold = report["heavy_hitters"]["detection_threshold"]
    assert threshold < min(PLANTED.values())
    found = {row["value"]: row for row in report["values"]}
    for word in PLANTED:
        truth = values.count(word) / USERS
        assert found[word]["ci_low"] <= truth <= found[word]["ci_high"], (word, truth, found[word])
