"""The shuffler end to end: Python SDK devices -> ``serve --role shuffler`` -> a real collector, all real processes.

What the collector sees (through a recording proxy between the two: exactly the requests it is sent), what the
shuffler's operator holds, and that SIGKILL of the shuffler loses and duplicates nothing.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

import client_sdk
from client_sdk import Client, ReportPolicy
from collector.shuffler.forwarder import PIPELINE, lock_path
from collector.shuffler.queue import ShuffleQueue
from collector.storage import Storage, is_database_url

from . import disk_reader
from .helpers import make_reports, running_server
from .shuffler_helpers import SHUFFLED, call, keys_in, recording_proxy, shuffler_process, stored_ids, wait_for

K_SE = 4.0  # |concordance - 0.5| within 4 standard errors: a false alarm about once in 16,000 runs
SENT = 400  # reports, one request each, in a known order


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    "A collector with a shuffled campaign (batches of SENT), a recording proxy, its shuffler; SENT reports sent"
    directory = tmp_path_factory.mktemp("shuffler")
    collector_db, shuffler_db = directory / "collector.db", directory / "shuffler.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    (device,) = keys_in(shuffler_db, "ingest")
    spec = {**SHUFFLED, "shuffle_batch": SENT}
    with running_server(collector_db, directory / "collector.log", workers=1) as (collector_url, _), \
            recording_proxy(collector_url) as (proxy_url, seen), \
            shuffler_process(shuffler_db, directory / "shuffler.log", proxy_url, forwarding) as (url, _):
        created = call(collector_url + "/v1/campaigns", admin, "POST", spec)
        parsed = client_sdk.Spec.from_dict(created["spec"])
        reports = make_reports(parsed, [spec["domain"][i % 3] for i in range(SENT)], seed=5)
        for report in reports:  # one request per report, in a known order
            answer = call(url + "/v1/reports", device, "POST", {"reports": [report]})
            assert answer["accepted"] == 1, answer
        wait_for(lambda: len(stored_ids(collector_db)) == SENT)
        yield {"collector": collector_url, "shuffler": url, "admin": admin, "device": device, "seen": seen,
               "sent": [r["report_id"] for r in reports], "collector_db": collector_db, "shuffler_db": shuffler_db,
               "spec": parsed, "forwarding": forwarding, "dir": directory}


def forwarded(world: dict) -> list[dict]:
    return [request for request in world["seen"] if request["path"] == "/v1/shuffled-batches"]


def test_one_request_per_batch_with_the_shuffler_key_and_nothing_of_the_devices(world):
    batches = forwarded(world)
    assert len(batches) == 1 and len(batches[0]["body"]["reports"]) == SENT
    headers = batches[0]["headers"]
    assert headers["Authorization"] == f"Bearer {world['forwarding']}"
    assert "shuffle-test" not in json.dumps(headers)  # the devices' user agent stays at the shuffler
    assert set(batches[0]["body"]) == {"batch_id", "reports"}  # no per-request id or time of any device request
    assert {tuple(sorted(r)) for r in batches[0]["body"]["reports"]} == {
        ("campaign", "fingerprint", "payload", "report_id")}


def test_the_forwarded_order_is_independent_of_the_send_order(world):
    arrival = [uuid.UUID(r).bytes for r in world["sent"]]
    order = {uuid.UUID(r["report_id"]).bytes: i for i, r in enumerate(forwarded(world)[0]["body"]["reports"])}
    share, se = disk_reader.concordance(arrival, order.get)
    assert abs(share - 0.5) <= K_SE * se, f"{share:.3f} of pairs forwarded in send order (SE {se:.3f})"
    stored = {uuid.UUID(r).bytes: i for i, r in enumerate(stored_ids(world["collector_db"]))}
    share, se = disk_reader.concordance(arrival, stored.get)
    assert abs(share - 0.5) <= K_SE * se


def test_the_collector_stores_no_link_to_a_request(world):
    with Storage(world["collector_db"]) as storage:
        columns = {table: [c[1] for c in storage.conn.execute(f"PRAGMA table_info({table})")]
                   for table in ("reports", "shuffled_batches")}
        batches = storage.table_rows("shuffled_batches")
    assert columns["shuffled_batches"] == ["batch_id", "campaign", "fingerprint", "day", "size"]
    assert "batch" not in " ".join(columns["reports"])  # a report's row does not name its batch
    assert [row["size"] for row in batches] == [SENT]
    assert batches[0]["batch_id"] == forwarded(world)[0]["body"]["batch_id"]


def test_the_estimate_shows_the_amplified_guarantee_per_batch(world):
    from estimators.shuffle import amplified_epsilon, closed_form_epsilon

    estimate = call(world["collector"] + "/v1/campaigns/browser/estimate", world["admin"])
    assert estimate["n"] == SENT
    block = estimate["shuffle"]
    assert block["epsilon0"] == 2.0 and block["delta"] == 1e-6
    assert block["batches"] == [{"batch_size": SENT, "batches": 1, "epsilon": amplified_epsilon(2.0, SENT, 1e-6),
                                 "closed_form_epsilon": closed_form_epsilon(2.0, SENT, 1e-6),
                                 "closed_form_applies": False}]
    assert block["batches"][0]["epsilon"] < 2.0
    assert "Feldman" in block["bound"] and "any epsilon0-LDP" in block["holds_for"]


def test_the_collector_refuses_a_shuffled_campaigns_reports_sent_to_it_directly(world):
    (ingest,) = keys_in(world["collector_db"], "ingest")
    report = make_reports(world["spec"], ["chrome"], seed=9)
    answer = call(world["collector"] + "/v1/reports", ingest, "POST", {"reports": report})
    assert answer["accepted"] == 0 and "shuffler" in answer["errors"][0]["reason"]


def test_the_shuffler_refuses_a_campaign_that_is_not_shuffled(world):
    local = {"name": "plain", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]}
    spec = client_sdk.Spec.from_dict(call(world["collector"] + "/v1/campaigns", world["admin"], "POST",
                                          local)["spec"])
    answer = call(world["shuffler"] + "/v1/reports", world["device"], "POST",
                  {"reports": make_reports(spec, ["a"], seed=3)})
    assert answer["accepted"] == 0 and answer["errors"][0]["field"] == "reports[0].campaign"


def test_the_operator_holds_only_what_privacy_md_says(world):
    "After forwarding: an empty queue, no forwarded report id anywhere in the files, and no sender data"
    path = world["shuffler_db"]
    wait_for(lambda: _queue_rows(path) == 0)
    with Storage(path) as storage:
        queue_columns = [c[1] for c in storage.conn.execute("PRAGMA table_info(shuffle_queue)")]
        versions_columns = [c[1] for c in storage.conn.execute("PRAGMA table_info(shuffle_versions)")]
        batch_columns = [c[1] for c in storage.conn.execute("PRAGMA table_info(shuffle_batches)")]
        assert storage.row_count("reports") == 0 and storage.row_count("shuffle_batches") == 0
    assert queue_columns == ["slot", "campaign", "fingerprint", "report_id", "payload"]
    assert batch_columns == ["batch_id", "campaign", "fingerprint", "size", "reports_json"]
    assert versions_columns == ["campaign", "fingerprint", "opened"]
    wait_for(lambda: all(disk_reader.occurrences((path, Path(f"{path}-wal")), r.encode()) == 0
                         for r in world["sent"]), timeout=20)
    privacy = (Path(__file__).parents[2] / "docs" / "privacy.md").read_text()
    for stated in ("shuffle_queue", "slot", "secure_delete", "shuffle_versions", "shuffle_batches"):
        assert stated in privacy


def _queue_rows(path: Path) -> int:
    "Reports the shuffler holds: waiting, or in batches not yet acknowledged"
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT (SELECT COUNT(*) FROM shuffle_queue) + "
                                "(SELECT COALESCE(SUM(size), 0) FROM shuffle_batches)").fetchone()[0])


def test_python_sdk_devices_through_the_shuffler(tmp_path):
    from .shuffler_helpers import collector_and_shuffler

    "Three SDK devices' 40 reports each, batches of at least 40; a short batch sent at its time limit"
    with collector_and_shuffler(tmp_path, {**SHUFFLED, "shuffle_batch": 40}) as env:
        short = {**SHUFFLED, "name": "short", "shuffle_batch": 1000, "shuffle_timeout": 1, "short_batch": "send"}
        call(env["collector"] + "/v1/campaigns", env["admin"], "POST", short)
        for device in range(3):
            client = Client(env["shuffler"], env["device"], tmp_path / f"state{device}",
                            rng=client_sdk.DeterministicRandom(device), policy=ReportPolicy.unlimited(),
                            background=False, campaigns=["browser"])
            for i in range(40):
                assert client.record("browser", SHUFFLED["domain"][i % 3])
            result = client.close(timeout=30)
            assert result.sent == 40 and result.rejected == 0
        wait_for(lambda: len(stored_ids(env["collector_db"])) == 120)
        block = call(env["collector"] + "/v1/campaigns/browser/estimate", env["admin"])["shuffle"]
        assert sum(row["batch_size"] * row["batches"] for row in block["batches"]) == 120
        assert all(row["batch_size"] >= 40 for row in block["batches"])
        client = Client(env["shuffler"], env["device"], tmp_path / "state-short", policy=ReportPolicy.unlimited(),
                        background=False, campaigns=["short"])
        for i in range(10):
            assert client.record("short", SHUFFLED["domain"][i % 3])
        assert client.close(timeout=30).sent == 10
        wait_for(lambda: len(stored_ids(env["collector_db"])) == 130)
        block = call(env["collector"] + "/v1/campaigns/short/estimate", env["admin"])["shuffle"]
        assert block["batches"][0]["batch_size"] == 10 and block["short_batch"] == "send"


@pytest.mark.parametrize("point", ["shuffler-after-form", "shuffler-after-forward"])
def test_sigkill_of_the_shuffler_loses_and_duplicates_nothing(tmp_path, point):
    collector_db, shuffler_db = tmp_path / "collector.db", tmp_path / "shuffler.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    (device,) = keys_in(shuffler_db, "ingest")
    with running_server(collector_db, tmp_path / "collector.log", workers=1) as (collector_url, _):
        spec = client_sdk.Spec.from_dict(call(collector_url + "/v1/campaigns", admin, "POST",
                                              {**SHUFFLED, "shuffle_batch": 50})["spec"])
        reports = make_reports(spec, ["chrome", "safari"] * 100, seed=11)
        acknowledged: list[str] = []
        with shuffler_process(shuffler_db, tmp_path / "shuffler.log", collector_url, forwarding,
                              env={"LDP_FAILPOINT": point}) as (url, process):
            for start in range(0, len(reports), 20):
                chunk = reports[start:start + 20]
                try:
                    answer = call(url + "/v1/reports", device, "POST", {"reports": chunk})
                except OSError:
                    break  # the shuffler is dead: these were never acknowledged
                assert answer["accepted"] == len(chunk)
                acknowledged += [r["report_id"] for r in chunk]
            process.wait(timeout=30)
            assert process.returncode == -signal.SIGKILL or process.returncode != 0
        assert len(acknowledged) >= 50  # 200 reports: 4 whole batches of 50
        with shuffler_process(shuffler_db, tmp_path / "shuffler2.log", collector_url, forwarding) as (url, _):
            rest = [r for r in reports if r["report_id"] not in set(acknowledged)]
            for start in range(0, len(rest), 20):
                call(url + "/v1/reports", device, "POST", {"reports": rest[start:start + 20]})
            wait_for(lambda: len(stored_ids(collector_db)) == len(reports) and _queue_rows(shuffler_db) == 0)
    ids = stored_ids(collector_db)
    assert sorted(ids) == sorted(r["report_id"] for r in reports)  # each exactly once
    with Storage(collector_db) as storage:
        sizes = [row["size"] for row in storage.table_rows("shuffled_batches")]
    assert sum(sizes) == len(reports)  # the resent batch recorded once


def test_sigkill_with_batches_in_flight_loses_and_duplicates_nothing(tmp_path):
    """Whole batches queued before the shuffler starts, so it has PIPELINE of them in flight at once; SIGKILL once
    the first is acknowledged (the others sent, stored or not): after a restart each report is stored exactly once
    and each batch recorded once at its size"""
    collector_db, shuffler_db = tmp_path / "collector.db", tmp_path / "shuffler.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    keys_in(shuffler_db, "ingest")
    with running_server(collector_db, tmp_path / "collector.log", workers=1) as (collector_url, _):
        spec = client_sdk.Spec.from_dict(call(collector_url + "/v1/campaigns", admin, "POST",
                                              {**SHUFFLED, "shuffle_batch": 50})["spec"])
        reports = make_reports(spec, ["chrome", "firefox"] * 200, seed=13)  # 8 whole batches
        with Storage(shuffler_db) as storage:
            ShuffleQueue(storage).enqueue([(r["report_id"], r["campaign"], r["fingerprint"], r["payload"])
                                           for r in reports], time.time())
        with shuffler_process(shuffler_db, tmp_path / "shuffler.log", collector_url, forwarding,
                              env={"LDP_FAILPOINT": "shuffler-after-forward"}) as (_, process):
            process.wait(timeout=60)
            assert process.returncode == -signal.SIGKILL
        with Storage(shuffler_db) as storage:
            in_flight = ShuffleQueue(storage).batches()
        assert len(in_flight) == PIPELINE  # killed with PIPELINE batches formed, none deleted yet
        with shuffler_process(shuffler_db, tmp_path / "shuffler2.log", collector_url, forwarding):
            wait_for(lambda: len(stored_ids(collector_db)) == len(reports) and _queue_rows(shuffler_db) == 0)
    assert sorted(stored_ids(collector_db)) == sorted(r["report_id"] for r in reports)  # each exactly once
    with Storage(collector_db) as storage:
        batches = storage.table_rows("shuffled_batches")
    assert sorted(row["size"] for row in batches) == [50] * 8  # every resent batch recorded once
    assert set(in_flight) <= {row["batch_id"] for row in batches}  # resent under the ids they were formed with


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_the_shuffler_queue_on_either_backend(tmp_path, db_path):
    "A real shuffler over a SQLite or PostgreSQL queue: whole batches reach the collector once, the rest waits"
    from collector.storage import open_storage

    collector_db = tmp_path / "upstream.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    with open_storage(db_path) as storage:
        storage.migrate()
        device = storage.create_key("ingest", "2024-01-01")[0]
    with running_server(collector_db, tmp_path / "collector.log", workers=1) as (collector_url, _):
        spec = client_sdk.Spec.from_dict(call(collector_url + "/v1/campaigns", admin, "POST",
                                              {**SHUFFLED, "shuffle_batch": 50})["spec"])
        reports = make_reports(spec, ["chrome", "safari", "firefox"] * 40, seed=13)
        # its temporary directory is the test's: the forwarder's lock file for a PostgreSQL queue goes there
        with shuffler_process(db_path, tmp_path / "shuffler.log", collector_url, forwarding,
                              env={"TMPDIR": str(tmp_path)}) as (url, _):
            for start in range(0, len(reports), 20):
                assert call(url + "/v1/reports", device, "POST", {"reports": reports[start:start + 20]})[
                    "accepted"] == 20
            wait_for(lambda: len(stored_ids(collector_db)) == 100)

            def queued() -> int:
                with open_storage(db_path) as storage:
                    return int(storage._one("SELECT COUNT(*) FROM shuffle_queue")[0])

            wait_for(lambda: queued() == 20)  # two whole batches forwarded; 20 wait for the next
    ids = stored_ids(collector_db)
    assert len(set(ids)) == 100 and set(ids) <= {r["report_id"] for r in reports}
    if is_database_url(str(db_path)):  # the forwarder's lock went to the test's directory, not the system's
        assert not os.path.exists(lock_path(str(db_path)))


def test_batches_formed_under_the_first_layout_are_moved_into_their_table(tmp_path):
    """A queue made before ``shuffle_batches`` (a batch = queued rows marked with its id): after ``migrate()`` the
    batch is one row under its id, holding exactly its reports, and the reports still waiting stay queued"""
    from collector.shuffler import queue as queue_module
    from collector.storage.kind_migrations import KIND_VERSIONS_TABLE

    path = tmp_path / "old.db"
    ids = [str(uuid.UUID(int=i + 1, version=4)) for i in range(5)]
    with sqlite3.connect(path) as conn:
        queue_module._create(conn, "sqlite")
        conn.execute(KIND_VERSIONS_TABLE)
        conn.execute("INSERT INTO kind_migrations (kind, version) VALUES ('shuffler', 1)")
        conn.executemany("INSERT INTO shuffle_queue VALUES (?, 'c', ?, ?, ?, ?)",
                         [(uuid.uuid4().hex, "f" * 32, report_id, json.dumps({"value": i}), "b1" if i < 3 else None)
                          for i, report_id in enumerate(ids)])
    with Storage(path) as storage:
        storage.migrate()
        queue = ShuffleQueue(storage)
        batch = queue.batch("b1")
        columns = [c[1] for c in storage.conn.execute("PRAGMA table_info(shuffle_queue)")]
        assert queue.batches() == ["b1"] and queue.count() == 5 and "batch_id" not in columns
        assert (batch.campaign, batch.size) == ("c", 3)
        assert sorted(r["report_id"] for r in batch.reports) == sorted(ids[:3])
        assert {r["report_id"]: r["payload"]["value"] for r in batch.reports} == {ids[i]: i for i in range(3)}
        assert [(w.campaign, w.queued) for w in queue.waiting()] == [("c", 2)]
