"""HPKE key rotation against two real ``serve --role`` processes on loopback, with SDK devices.

* Devices seal their reports to the old keys; the operator rotates both aggregators' keys with ``ldp-telemetry
  hpke-keys rotate`` while they run; the leader's listing names the new keys (the leader re-reads the helper's
  configs), devices that had queued reports sealed to the old keys send them and devices go on with the new keys;
  after collection every report is counted.
* With an overlap of 0 days a key is retired at once: a device's queued report sealed to it is refused by name
  (``outdated-config``), counted on the device (``status().dropped``), and the device's next report is sealed to the
  new key (it fetched the listing again on the refusal) and accepted.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

from client_sdk import Client, ReportPolicy

from ..helpers import ldp_command, on_both_backends
from .kit import PEER_TOKEN, exact_sum, honest_reports, spec_json, truth, values_for
from .test_processes import Aggregators, call, today, wait_for

pytestmark = on_both_backends  # each test on SQLite files and on PostgreSQL databases
DAY = 86_400


def rotate(db: Path | str) -> int:
    done = subprocess.run(ldp_command("hpke-keys", "rotate", "--db", str(db)), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["rotated_to"]


def listed_ids(servers: Aggregators, name: str) -> tuple[int, int]:
    _, listed = call("GET", f"{servers.leader_url}/v1/campaigns/{name}", servers.ingest)
    block = listed["aggregators"]
    return block["leader"]["hpke_config"]["id"], block["helper"]["hpke_config"]["id"]


def device(servers: Aggregators, path: Path, name: str, **options) -> Client:
    return Client(servers.leader_url, servers.ingest, path, background=False, campaigns=[name],
                  aggregators={"helper": servers.helper_url}, policy=ReportPolicy.unlimited(), **options)


def queued_config_ids(client: Client, name: str) -> set[tuple[int, int]]:
    "(leader config id, helper config id) of each report the device has queued"
    out = set()
    for report in client.queue.peek(1000, 10**9, name):
        payload = json.loads(report.text)["payload"]
        out.add((payload["leader_share"]["config_id"], payload["helper_share"]["config_id"]))
    return out


def test_devices_seal_to_the_old_keys_the_operator_rotates_and_every_report_is_counted(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    monkeypatch.setenv("LDP_HPKE_REFRESH_INTERVAL", "0.2")  # the leader's driver re-reads the helper's configs
    values = values_for("histogram", 12)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0.2):
        spec, _ = servers.create(spec_json("histogram", name="rotating", min_batch=6))
        old = listed_ids(servers, spec.name)
        early = [device(servers, tmp_path / f"early{i}", spec.name) for i in range(6)]
        for client, value in zip(early, values[:6]):
            assert client.record(spec.name, value)
        assert {ids for client in early for ids in queued_config_ids(client, spec.name)} == {old}
        for client in early[:3]:
            assert client.flush(timeout=60).sent == 1

        new = rotate(servers.leader_db), rotate(servers.helper_db)  # the operator, while both serve
        wait_for(lambda: listed_ids(servers, spec.name) == new, "the listing to name both new keys")

        for client in early[3:]:  # queued before the rotation: sealed to the old keys, still open in the overlap
            result = client.flush(timeout=60)
            assert (result.sent, result.rejected) == (1, 0), result
        late = [device(servers, tmp_path / f"late{i}", spec.name) for i in range(6)]
        for client, value in zip(late, values[6:]):
            assert client.record(spec.name, value)
            assert queued_config_ids(client, spec.name) == {new}
            assert client.flush(timeout=60).sent == 1
        for client in early + late:
            client.close()
        new_block = servers.create(spec_json("histogram", name="rotating", min_batch=6))[1]  # the same: listed again
        altered = honest_reports(spec, new_block, ["a"])  # and its leader share altered: refused at upload
        ciphertext = altered[0]["payload"]["leader_share"]["ciphertext"]
        altered[0]["payload"]["leader_share"]["ciphertext"] = ("A" if ciphertext[0] != "A" else "B") + ciphertext[1:]
        assert servers.upload(altered)["rejected"] == 1
        wait_for(lambda: servers.aggregated(spec) == 12, "the driver to aggregate every report")
        assert_three_views_agree(servers, spec.name, accepted=12, rejected={"hpke-decrypt-error": 1})
    servers.end_day()
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0):
        status, release = servers.collect(spec.name)
    assert status == 200, release
    assert release["report_count"] == 12 and release["rejected"] == {"hpke-decrypt-error": 1}
    assert exact_sum(servers.leader_db, servers.helper_db, spec, today()) == (12, 12, truth("histogram", values))


def assert_three_views_agree(servers: Aggregators, name: str, accepted: int, rejected: dict[str, int]) -> None:
    "campaign show --url, GET /v1/campaigns/<name>/progress and /metrics of the running leader say the same"
    _, progress = call("GET", f"{servers.leader_url}/v1/campaigns/{name}/progress", servers.admin)
    (batch,) = progress["batches"]
    assert (batch["state"], batch["accepted"], batch["aggregated"], batch["pending"], batch["rejected"],
            batch["to_min_batch"]) == ("open", accepted, accepted, 0, rejected, 0)
    shown = subprocess.run(ldp_command("campaign", "show", name, "--url", servers.leader_url, "--token",
                                       servers.admin), capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["progress"] == progress
    with urllib.request.urlopen(f"{servers.leader_url}/metrics", timeout=60) as response:
        text = response.read().decode()
    label = f'campaign="{name}"'
    assert f'ldp_distributed_reports{{{label},state="aggregated"}} {float(accepted)}' in text
    for reason, count in rejected.items():
        assert f'ldp_distributed_rejected_reports{{{label},reason="{reason}"}} {float(count)}' in text


def test_without_a_driver_run_jobs_reads_the_rotated_helper_key_into_the_listing(tmp_path, monkeypatch):
    "--aggregate-interval 0 (jobs left to cron): ldp-telemetry run-jobs reads the helper's configs as the driver does"
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0):
        spec, _ = servers.create(spec_json("histogram", name="cron", min_batch=2))
        leader_id, _ = listed_ids(servers, spec.name)
        new_helper = rotate(servers.helper_db)
        assert listed_ids(servers, spec.name)[1] != new_helper  # no driver: nothing read it yet
        ran = subprocess.run(ldp_command("run-jobs", "--db", str(servers.leader_db), "--helper-url",
                                         servers.helper_url, "--peer-token", PEER_TOKEN),
                             capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stderr
        assert listed_ids(servers, spec.name) == (leader_id, new_helper)


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def test_a_report_queued_for_a_retired_key_is_refused_by_name_counted_and_the_device_goes_on(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0.2, options=("--hpke-overlap-days",
                                                                                        "0")):
        spec, _ = servers.create(spec_json("histogram", name="retiring", min_batch=2))
        clock = Clock()
        client = device(servers, tmp_path / "device", spec.name, clock=clock)
        assert client.record(spec.name, "a")  # sealed to the leader's current key
        new_leader = rotate(servers.leader_db)  # overlap 0: the old key is retired at once
        result = client.flush(timeout=60)
        assert (result.sent, result.rejected) == (0, 1), result
        assert client.status().dropped["rejected_outdated_config"] == 1
        clock.offset = DAY  # the device's next batch (one report per batch), the leader's tomorrow
        assert client.record(spec.name, "b")
        assert {ids[0] for ids in queued_config_ids(client, spec.name)} == {new_leader}
        result = client.flush(timeout=60)
        assert (result.sent, result.rejected) == (1, 0), result
        client.close()
