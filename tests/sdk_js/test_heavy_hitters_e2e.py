"""heavy_hitters end to end with devices of both SDKs: half the users record through the JavaScript SDK's ``Client``
(Node, the kind loaded on demand from the campaign's spec), half through the Python SDK's, into one campaign on a
real ``ldp-telemetry serve`` (gunicorn, loopback, a SQLite file), for each algorithm; ``ldp-telemetry report`` finds
the planted strings (in no spec) with 99.9 % intervals that cover their true frequencies (fixed seeds)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import client_sdk
from client_sdk import Client, ReportPolicy
from collector.storage import Storage
from tests.collector.helpers import ldp_command, running_server
from tests.collector.test_e2e import call

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
BASE = {"kind": "heavy_hitters", "epsilon": 4.0, "max_length": 5, "alphabet": ALPHABET}
CAMPAIGNS = [  # (spec, planted strings and their shares, users): above each configuration's detection threshold
    ({**BASE, "name": "words_pem", "algorithm": "pem", "segment_length": 2}, {"hello": 0.35, "wrld.": 0.25}, 2000),
    ({**BASE, "name": "words_sfp", "algorithm": "sfp", "fragment_length": 2, "sketch_width": 256, "sketch_depth": 4},
     {"hello": 0.45, "wrld.": 0.35}, 4000),
]

# One sdk-js Client (in-memory state, no cap on reports) records every value of stdin's list and flushes them
NODE_DEVICE = """
import { Client, MemoryStore } from "./dist/node.js";
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { url, key, campaign, values } = JSON.parse(input);
const client = new Client({ url, apiKey: key, store: new MemoryStore(), background: false, campaigns: [campaign],
  policy: { maxReports: null }, batchSize: 500, logger: { warn: () => undefined } });
await client.prepare();
const statuses = {};
for (const value of values) {
  const { status } = await client.record(campaign, value);
  statuses[status] = (statuses[status] ?? 0) + 1;
}
const result = await client.flush(60);
await client.close(0);
const { sent, remaining, rejected } = result;
process.stdout.write(JSON.stringify({ statuses, sent, remaining, rejected }));
"""


def _values(planted: dict[str, float], users: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    values = [word for word, share in planted.items() for _ in range(int(share * users))]
    values += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5))) for _ in range(users - len(values))]
    rng.shuffle(values)
    return values


@pytest.mark.parametrize(("spec", "planted", "users"), CAMPAIGNS, ids=[spec["algorithm"] for spec, _, _ in CAMPAIGNS])
def test_node_and_python_devices_find_the_planted_strings(sdk_js: Path, tmp_path: Path, spec: dict,
                                                          planted: dict[str, float], users: int) -> None:
    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
    values = _values(planted, users, seed=11)
    half = users // 2
    with running_server(db_path, tmp_path / "server.log", workers=2) as (url, _):
        call(url + "/v1/campaigns", admin, "POST", spec)
        node = subprocess.run([shutil.which("node") or "node", "--input-type=module", "-e", NODE_DEVICE], cwd=sdk_js,
                              input=json.dumps({"url": url, "key": ingest, "campaign": spec["name"],
                                                "values": values[:half]}),
                              capture_output=True, text=True, timeout=300, check=False)
        assert node.returncode == 0, node.stderr[-3000:]
        outcome = json.loads(node.stdout)
        assert outcome == {"statuses": {"queued": half}, "sent": half, "remaining": 0, "rejected": 0}, outcome
        client = Client(url, ingest, tmp_path / "python-device", rng=client_sdk.DeterministicRandom(3),
                        policy=ReportPolicy.unlimited(), background=False, batch_size=500, campaigns=[spec["name"]])
        for value in values[half:]:
            assert client.record(spec["name"], value)
        result = client.close(timeout=60)
        assert result.remaining == 0 and result.rejected == 0 and result.sent == users - half
        report = subprocess.run(ldp_command("report", spec["name"], "--url", url, "--token", admin, "--format", "json",
                                            "--confidence", "0.999"), capture_output=True, text=True, check=False)
    assert report.returncode == 0, report.stderr
    estimate = json.loads(report.stdout)
    assert estimate["kind"] == "heavy_hitters" and estimate["n"] == users
    assert estimate["heavy_hitters"]["detection_threshold"] < min(planted.values())
    found = {row["value"]: row for row in estimate["values"]}
    for word in planted:
        truth = values.count(word) / users
        assert found[word]["ci_low"] <= truth <= found[word]["ci_high"], (word, truth, found[word])
