"""A shuffled campaign recorded by the JavaScript SDK, end to end: Node devices (scripts/shuffled-devices.mjs) send
to a real shuffler (``ldp-telemetry serve --role shuffler``) exactly as to a collector, which forwards one shuffled
batch to a real collector (tests/collector/shuffler_helpers.py).  The spec's ``budget`` stops each device after the
reports its charges allow; the collector's estimate counts every forwarded report and states the batch's amplified
guarantee, and its intervals cover the reported shares.  The devices draw from the OS CSPRNG (as real ones do),
so the intervals are family-wise at 1 - 3e-4."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.collector.shuffler_helpers import SHUFFLED, call, collector_and_shuffler, stored_ids, wait_for

DEVICES = 20
ALLOWED = 3  # reports per device within the budget: 3 charges of epsilon 2 in a budget of 6.5
CONFIDENCE = 1 - 1e-4
SPEC = {**SHUFFLED, "name": "js_browser", "shuffle_batch": DEVICES * ALLOWED, "budget": {"epsilon": 6.5}}


def test_node_devices_through_a_shuffler_to_the_collector(sdk_js: Path, tmp_path: Path) -> None:
    domain = SPEC["domain"]
    devices = [{"dir": str(tmp_path / f"device-{index}"), "campaign": SPEC["name"],
                "values": [domain[(index + i) % 3] for i in range(ALLOWED + 1)]} for index in range(DEVICES)]
    with collector_and_shuffler(tmp_path, SPEC) as env:
        body = {"url": env["shuffler"], "key": env["device"], "devices": devices}
        done = subprocess.run([shutil.which("node") or "node", "scripts/shuffled-devices.mjs"], cwd=sdk_js,
                              input=json.dumps(body), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        for outcome in json.loads(done.stdout):
            assert outcome["statuses"] == ["queued"] * ALLOWED + ["refused_by_policy"], outcome  # the budget
            assert (outcome["sent"], outcome["remaining"], outcome["rejected"]) == (ALLOWED, 0, 0), outcome
            assert outcome["spent"] == {"epsilon": ALLOWED * SPEC["epsilon"], "reports": ALLOWED, "delta": 0}
        wait_for(lambda: len(stored_ids(env["collector_db"])) == DEVICES * ALLOWED)
        url = env["collector"] + f"/v1/campaigns/{SPEC['name']}/estimate?confidence={CONFIDENCE}"
        wait_for(lambda: call(url, env["admin"])["shuffle"]["batches"])  # the batch's size, recorded after its reports
        estimate = call(url, env["admin"])
        ids = stored_ids(env["collector_db"])
    assert len(set(ids)) == len(ids) == estimate["n"] == DEVICES * ALLOWED
    (batch,) = estimate["shuffle"]["batches"]
    assert (batch["batch_size"], batch["batches"]) == (DEVICES * ALLOWED, 1)
    assert batch["epsilon"] < SPEC["epsilon"] == estimate["shuffle"]["epsilon0"]  # amplified below epsilon0
    for row in estimate["values"]:  # every interval at once but for 3e-4 (the devices draw from the OS CSPRNG)
        share = sum(v == row["value"] for d in devices for v in d["values"][:ALLOWED]) / (DEVICES * ALLOWED)
        assert row["ci_low"] <= share <= row["ci_high"], (row, share)
