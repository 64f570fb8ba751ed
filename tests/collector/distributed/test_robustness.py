"""Robustness and secrets of the two aggregators (issue 21, part 4): concurrent collections, the open day, garbage in
an aggregation job, the peer routes' rate limit, database permissions, and https between the aggregators."""

from __future__ import annotations

import os
import stat
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from collector import create_app
from collector.distributed.leader import accept_reports
from collector.distributed.peer import PeerClient, PeerUnavailable
from collector.storage import open_storage
from ldp_telemetry.cli import main

from ..helpers import on_both_backends
from .kit import PEER_TOKEN, Pair, end_day, honest_reports, query, spec_json, values_for
from .test_processes import Aggregators, today


# -- collection ---------------------------------------------------------------------------------------------------
@on_both_backends
def test_concurrent_collections_of_one_batch_give_one_release(tmp_path, monkeypatch):
    "Three collect requests at once on a leader with two workers: one 200, two 409 batch-collected with that release"
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0):
            spec, block = servers.create(spec_json("histogram"))
            assert servers.upload(honest_reports(spec, block, values_for("histogram", 20)))["accepted"] == 20
        servers.end_day()
        with servers.leader(monkeypatch, interval=0, workers=2):
            start = threading.Barrier(3)

            def collect(_: int) -> tuple[int, dict]:
                start.wait()
                return servers.collect(spec.name)

            with ThreadPoolExecutor(3) as pool:
                answers = sorted(pool.map(collect, range(3)), key=lambda answer: answer[0])
            retry = servers.collect(spec.name)
    assert [status for status, _ in answers] == [200, 409, 409], answers
    release = answers[0][1]
    assert release["report_count"] == 20
    for status, problem in [*answers[1:], retry]:
        assert status == 409 and problem["type"].endswith("batch-collected") and problem["release"] == release


@on_both_backends
def test_serve_collect_grace_sets_how_long_after_its_day_a_batch_stays_open(tmp_path, monkeypatch):
    "serve --collect-grace: a leader past the default grace (an hour) but within a two-day grace still refuses"
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0):
            spec, block = servers.create(spec_json("histogram", min_batch=2))
            assert servers.upload(honest_reports(spec, block, values_for("histogram", 3)))["accepted"] == 3
        servers.end_day()  # a minute past the default grace
        with servers.leader(monkeypatch, interval=0, options=("--collect-grace", str(2 * 86400))):
            status, problem = servers.collect(spec.name)
        assert status == 409 and problem["type"].endswith("batch-open") and "172800 s" in problem["detail"], problem
        with servers.leader(monkeypatch, interval=0):
            status, release = servers.collect(spec.name)
        assert status == 200 and release["report_count"] == 3, release


@on_both_backends
def test_a_batch_is_collected_only_once_its_day_has_ended(tmp_path):
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", min_batch=2))
    pair.upload(honest_reports(spec, block, values_for("histogram", 5)))
    day = today()
    tomorrow = pair.collect(spec.name, "2999-01-01")
    early = pair.collect(spec.name, day)
    for answer in (early, tomorrow):
        assert answer.status_code == 409 and answer.json["type"].endswith("batch-open"), answer.json
        assert answer.json["field"] == "batch"
    assert pair.upload(honest_reports(spec, block, values_for("histogram", 3)))["accepted"] == 3  # still open
    end_day()
    released = pair.collect(spec.name, day)
    assert released.status_code == 200 and released.json["report_count"] == 8


@on_both_backends
def test_a_report_for_a_collected_batch_is_refused_by_name_never_moved(tmp_path):
    """An upload that began on a day collected since: each report names its batch (sealed into its shares), so the
    leader cannot put it in another one; it is refused batch-collected by name (the device drops and counts it)"""
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", min_batch=2))
    pair.upload(honest_reports(spec, block, values_for("histogram", 4)))
    day = end_day()
    assert pair.collect(spec.name, day).status_code == 200
    late = honest_reports(spec, block, ["a", "b"], batch=day)
    with pair.leader_app.app_context(), open_storage(pair.leader_db) as storage:
        from collector.distributed.store import DistStore
        from collector.storage import CampaignVersion

        campaign: CampaignVersion = storage.get_campaign(spec.name)
        result = accept_reports(DistStore(storage), [(i, r, campaign) for i, r in enumerate(late)], day)
    assert result.accepted == 0 and [r[2] for r in result.rejected] == ["payload.batch"] * 2
    assert all("batch-collected" in r[3] for r in result.rejected)
    batches = dict(query(pair.leader_db, "SELECT batch, count(*) FROM dist_reports GROUP BY batch"))
    assert batches == {day: 4}


@on_both_backends
def test_a_report_arriving_after_its_day_within_the_grace_is_released_in_its_batch(tmp_path):
    """A device whose report names day D and reaches the leader after D ended but before D + COLLECT_GRACE: accepted
    into D, and the release of D counts it (the grace is what keeps a late device's charged report)"""
    from collector import auth

    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", min_batch=2))
    day = today_of_leader()
    pair.upload(honest_reports(spec, block, values_for("histogram", 3)))
    auth.CLOCK_OFFSET += next_midnight() - auth.clock_now() + 60  # one minute into the next day: inside the grace
    assert today_of_leader() > day
    early = pair.collect(spec.name, day)
    assert early.status_code == 409 and early.json["type"].endswith("batch-open"), early.json
    answer = pair.upload(honest_reports(spec, block, ["a", "b"], batch=day))
    assert answer["accepted"] == 2, answer
    end_day()  # past the grace
    released = pair.collect(spec.name, day)
    assert released.status_code == 200 and released.json["report_count"] == 5, released.json


def next_midnight() -> float:
    "The collector's next UTC midnight (POSIX seconds)"
    from client_sdk.clock import day_start
    from collector import auth

    return day_start(auth.utc_today()) + 86400


def today_of_leader() -> str:
    from collector import auth

    return auth.utc_today()


# -- garbage in an aggregation job --------------------------------------------------------------------------------
@on_both_backends
def test_garbage_under_real_report_ids_burns_no_id(tmp_path):
    """A peer-token holder sends a well-formed job whose entries carry the ids of real uploads with garbage shares:
    each entry is rejected by name and no id is recorded, so the real reports are counted afterwards"""
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", min_batch=2))
    reports = honest_reports(spec, block, values_for("histogram", 4))
    pair.upload(reports)
    helper_config_id = block["helper"]["hpke_config"]["id"]
    good = reports[0]["payload"]
    entries = [
        {"report_id": reports[0]["report_id"], "public_share": good["public_share"],  # ciphertext of another report
         "helper_share": reports[1]["payload"]["helper_share"], "leader_verifier_share": "AAAA"},
        {"report_id": reports[1]["report_id"], "public_share": "AAAA",
         "helper_share": {"config_id": helper_config_id, "ciphertext": "AAAA"}, "leader_verifier_share": "AAAA"},
        {"report_id": reports[2]["report_id"], "public_share": good["public_share"],
         "helper_share": {"config_id": (helper_config_id % 255) + 1, "ciphertext": "AAAA"},
         "leader_verifier_share": "AAAA"},
        {"report_id": reports[3]["report_id"], "public_share": good["public_share"], "helper_share": "x",
         "leader_verifier_share": "AAAA"},
    ]
    body = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": today(), "reports": entries}
    answer = PeerClient(pair.transport, PEER_TOKEN).aggregation_job(str(uuid.uuid4()), body)
    assert [r["result"] for r in answer["reports"]] == ["reject"] * 4
    assert all(r["error"] for r in answer["reports"])
    assert query(pair.helper_db, "SELECT count(*) FROM dist_helper_seen") == [(0,)]
    summary = pair.aggregate()
    assert summary.aggregated == 4 and summary.rejected == 0


# -- the peer routes' rate limit -----------------------------------------------------------------------------------
@on_both_backends
def test_the_peer_routes_are_rate_limited(tmp_path):
    helper = create_app({"DATABASE": str(tmp_path / "helper.db"), "ROLE": "helper", "PEER_TOKEN": PEER_TOKEN,
                         "RATE_LIMIT": 0, "PEER_RATE_LIMIT": 0.001, "PEER_RATE_BURST": 3}).test_client()
    headers = {"Authorization": f"Bearer {PEER_TOKEN}"}
    statuses = [helper.post("/v1/peer/aggregate_shares", json={}, headers=headers).status_code for _ in range(5)]
    assert statuses[:3] == [400, 400, 400] and statuses[3:] == [429, 429]
    limited = helper.put(f"/v1/peer/aggregation_jobs/{uuid.uuid4()}", json={}, headers=headers)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert limited.json["field"] == "Authorization"
    assert helper.get("/v1/hpke_config").status_code == 200  # the public route is not the peer's
    with pytest.raises(PeerUnavailable, match="429"):  # the leader backs off and retries later
        from collector.distributed.peer import FlaskTransport

        PeerClient(FlaskTransport(helper), PEER_TOKEN, retries=0).aggregate_share({})


# -- secrets at rest ---------------------------------------------------------------------------------------------------
def _mode(path: os.PathLike | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_aggregators_databases_are_readable_by_their_owner_only(tmp_path, monkeypatch):
    "leader.db and helper.db hold HPKE private keys and verify keys: 0600, and their -wal and -shm files too"
    old_umask = os.umask(0o022)  # the usual umask, under which a plain open() makes files 0644
    try:
        servers = Aggregators(tmp_path)
        with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0):
            spec, block = servers.create(spec_json("histogram"))
            servers.upload(honest_reports(spec, block, values_for("histogram", 3)))
            files = [tmp_path / name for name in ("leader.db", "leader.db-wal", "leader.db-shm", "helper.db",
                                                  "helper.db-wal", "helper.db-shm")]
            present = [path for path in files if path.exists()]
            assert {p.name for p in present} >= {"leader.db", "helper.db", "leader.db-wal", "helper.db-wal"}
            assert {p.name: oct(_mode(p)) for p in present} == {p.name: oct(0o600) for p in present}
    finally:
        os.umask(old_umask)


def test_an_older_database_readable_by_others_is_restricted(tmp_path):
    path = tmp_path / "helper.db"
    with open_storage(path) as storage:
        storage.migrate()
    os.chmod(path, 0o644)
    create_app({"DATABASE": str(path), "ROLE": "helper", "PEER_TOKEN": PEER_TOKEN})
    assert _mode(path) == 0o600


# -- https between the aggregators -------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["http://helper.example.com", "http://10.0.0.8:8001", "http://128.0.0.1",
                                 "ftp://helper.example.com", "helper.example.com"])
def test_a_helper_url_in_clear_is_refused(tmp_path, url):
    with pytest.raises(ValueError, match="HELPER_URL"):
        create_app({"DATABASE": str(tmp_path / "l.db"), "ROLE": "leader", "PEER_TOKEN": PEER_TOKEN, "HELPER_URL": url})
    with pytest.raises(ValueError, match="HELPER_URL"):
        PeerClient.for_url(url, PEER_TOKEN)
    for command in (["serve", "--role", "leader"], ["aggregate"]):
        ran = CliRunner().invoke(main, [*command, "--db", str(tmp_path / "l.db"), "--peer-token", PEER_TOKEN,
                                        "--helper-url", url])
        assert ran.exit_code == 1 and "--helper-url" in ran.output and "https" in ran.output, ran.output


POPLAR1_SPEC = {"name": "found", "kind": "poplar1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6, "bits": 16,
                "stride": 4, "threshold": 0.01, "min_batch": 100}


@pytest.mark.parametrize("spec", [spec_json("histogram"), POPLAR1_SPEC], ids=["prio3", "poplar1"])
@pytest.mark.parametrize("url", ["http://helper.example.com", "helper.example.com", None])
def test_campaign_create_on_a_leader_database_refuses_a_helper_url_in_clear_in_one_line(tmp_path, spec, url):
    "Every kind that provisions a helper from the CLI: one line naming the option, nothing written, no traceback"
    import json

    (tmp_path / "spec.json").write_text(json.dumps(spec))
    options = ["--peer-token", PEER_TOKEN] + ([] if url is None else ["--helper-url", url])
    ran = CliRunner().invoke(main, ["campaign", "create", "--db", str(tmp_path / "l.db"), *options,
                                    str(tmp_path / "spec.json")])
    assert ran.exit_code == 1, ran.output
    lines = ran.output.strip().splitlines()
    assert len(lines) == 1 and "--helper-url" in lines[0], ran.output
    assert url is None or "https" in lines[0]
    with open_storage(str(tmp_path / "l.db")) as storage:
        assert storage.list_campaigns() == []


@pytest.mark.parametrize("url", ["https://helper.example.com", "http://127.0.0.1:8001", "http://127.8.0.1",
                                 "http://localhost:8001", "http://[::1]:8001"])
def test_https_or_loopback_is_accepted(tmp_path, url):
    create_app({"DATABASE": str(tmp_path / "l.db"), "ROLE": "leader", "PEER_TOKEN": PEER_TOKEN, "HELPER_URL": url,
                "AGGREGATE_INTERVAL": 0})  # no driver thread calling that helper
    assert PeerClient.for_url(url, PEER_TOKEN).transport.base_url == url  # type: ignore[attr-defined]


def test_the_aggregation_interval_has_one_default_for_serve_create_app_and_the_docs(tmp_path):
    "A leader made by create_app (as under one's own gunicorn) runs its driver at collector.config's default"
    from collector.config import DEFAULTS

    interval = DEFAULTS["AGGREGATE_INTERVAL"]
    assert interval > 0
    app = create_app({"DATABASE": str(tmp_path / "l.db"), "ROLE": "leader", "PEER_TOKEN": PEER_TOKEN,
                      "HELPER_URL": "http://127.0.0.1:9"})
    driver = app.extensions["ldp_aggregation_driver"]
    try:
        assert driver.interval == interval
    finally:
        driver.stop()
    help_text = " ".join(CliRunner().invoke(main, ["serve", "--help"], terminal_width=200).output.split())
    assert f"env LDP_AGGREGATE_INTERVAL) [default: {interval:g}]" in help_text
    operations = " ".join((Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text().split())
    assert f"`AGGREGATE_INTERVAL` (`--aggregate-interval`, env `LDP_AGGREGATE_INTERVAL`, {interval:g} s" in operations
