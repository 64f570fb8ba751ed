"""The PostgreSQL store: migrations, shared rate buckets, sharded aggregates, faults, and several collector processes
on one database (one SIGKILLed mid-load) that store every acknowledged report exactly once."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

import client_sdk
from client_sdk import Client, ReportPolicy
from collector import create_app
from collector.storage import RateLimited, RateRule, StorageUnavailable, open_storage
from collector.storage.postgres import AGGREGATE_SHARDS, SCHEMA_VERSION, PostgresStorage

from . import pg_cluster
from .helpers import CATEGORICAL, bearer, free_port, make_reports, running_server, stop
from .test_no_loss import AckRecorder
from .test_storage import SPECS, group_of

DAY = "2024-05-01"


@pytest.fixture
def url(postgres_cluster):
    "A new database of the session's cluster, migrated"
    address = postgres_cluster.create_database("pg")
    with open_storage(address) as storage:
        storage.migrate()
    return address


def test_a_postgresql_url_selects_the_postgresql_store(url, tmp_path):
    with open_storage(url) as storage:
        assert isinstance(storage, PostgresStorage)
        storage.migrate()  # idempotent
        assert storage.schema_version() == SCHEMA_VERSION
        assert [row["version"] for row in storage.table_rows("schema_migrations")] == list(range(1, SCHEMA_VERSION + 1))
    app = create_app({"DATABASE": url, "RATE_LIMIT": 0})
    assert app.test_client().get("/readyz").status_code == 200


def test_ldp_database_url_names_the_database(url, monkeypatch):
    monkeypatch.delenv("LDP_DATABASE", raising=False)
    monkeypatch.setenv("LDP_DATABASE_URL", url)
    assert create_app({"RATE_LIMIT": 0}).config["DATABASE"] == url


def test_concurrent_writers_share_the_day_over_shard_rows(url):
    "Writers on separate connections: every report counted once, the shards merge to the rebuilt aggregate"
    with open_storage(url) as storage:
        campaign, _ = storage.create_campaign(SPECS[1], DAY)
    groups = [group_of(campaign, list(range(20)) * 2, seed=seed) for seed in range(48)]

    def write(group):
        with open_storage(url) as writer:
            return writer.insert_reports([group], DAY).accepted

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(write, groups)) == 48 * 40
    with open_storage(url) as storage:
        shards = {row["shard"] for row in storage.table_rows("aggregates")}
        assert 1 < len(shards) <= AGGREGATE_SHARDS  # 48 writes over 8 shards: all on one has chance 8**-47
        incremental = storage.aggregates_by_day(campaign)
        assert incremental[0][1].n == storage.count_reports() == 48 * 40
        storage.rebuild_aggregates(campaign.name)
        assert storage.aggregates_by_day(campaign) == incremental


def test_a_rebuild_during_ingestion_counts_every_report_once(url):
    "Writers keep inserting while rebuilds run: the aggregates still equal a rebuild once they stop"
    with open_storage(url) as storage:
        campaign, _ = storage.create_campaign(SPECS[0], DAY)
    groups = [group_of(campaign, ["a", "b", "c"] * 10, seed=seed) for seed in range(40)]

    def write(group):
        with open_storage(url) as writer:
            return writer.insert_reports([group], DAY).accepted

    with ThreadPoolExecutor(4) as pool, open_storage(url) as rebuilder:
        written = pool.map(write, groups)
        for _ in range(5):
            rebuilder.rebuild_aggregates(campaign.name)
        assert sum(written) == 40 * 30
    with open_storage(url) as storage:
        incremental = storage.aggregates_by_day(campaign)
        assert incremental[0][1].n == storage.row_count("reports") == 40 * 30
        storage.rebuild_aggregates(campaign.name)
        assert storage.aggregates_by_day(campaign) == incremental


def test_the_same_reports_sent_twice_at_once_are_stored_once(url):
    "Two connections insert the same batch concurrently (a retry through another host): one of them stores it"
    with open_storage(url) as storage:
        campaign, _ = storage.create_campaign(SPECS[0], DAY)
    group = group_of(campaign, ["a", "b", "c"] * 100, seed=1)
    barrier = threading.Barrier(2)

    def write(_):
        with open_storage(url) as writer:
            barrier.wait()
            return writer.insert_reports([group], DAY)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(write, range(2)))
    assert sorted((r.accepted, r.duplicate) for r in results) == [(0, 300), (300, 0)]
    with open_storage(url) as storage:
        assert storage.row_count("reports") == storage.count_reports() == 300


def test_rate_buckets_are_shared_by_every_connection(url):
    rule = RateRule(rate=1.0, burst=3.0)
    with open_storage(url) as first, open_storage(url) as second:
        first.take_token("k", rule, 100.0)
        second.take_token("k", rule, 100.1)
        first.take_token("k", rule, 100.2)
        with pytest.raises(RateLimited):
            second.take_token("k", rule, 100.3)


def test_an_unreachable_server_is_503_not_500(postgres_cluster):
    dead = f"postgresql://{postgres_cluster.user}@127.0.0.1:{free_port()}/none"
    with pytest.raises(StorageUnavailable) as fault:
        PostgresStorage(dead, busy_timeout_ms=1000).list_campaigns()
    assert fault.value.status == 503


def test_a_held_row_lock_gives_503_after_the_busy_timeout(url):
    with open_storage(url) as storage:
        campaign, _ = storage.create_campaign(SPECS[0], DAY)
        storage.insert_reports([group_of(campaign, ["a"] * 5, seed=1)], DAY)
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE aggregates IN EXCLUSIVE MODE")
        with PostgresStorage(url, busy_timeout_ms=300) as storage, pytest.raises(StorageUnavailable) as fault:
            storage.insert_reports([group_of(campaign, ["b"] * 5, seed=2)], DAY)
        assert fault.value.status == 503
    with open_storage(url) as storage:
        assert storage.count_reports() == storage.row_count("reports") == 5  # nothing of the failed batch


def test_names_postgresql_cannot_hold_are_4xx(url):
    app = create_app({"DATABASE": url, "RATE_LIMIT": 0})
    with open_storage(url) as storage:
        admin, _ = storage.create_key("admin", DAY)
    http = app.test_client()
    response = http.get("/v1/campaigns/a%00b", headers=bearer(admin))
    assert response.status_code == 404, response.json
    response = http.get("/v1/campaigns/a%00b/estimate", headers=bearer(admin))
    assert response.status_code == 404, response.json


def test_two_collector_processes_one_killed_mid_load(postgres_cluster, tmp_path):
    """Two ``serve`` processes (as two hosts) on one database; SDK clients send to both; one is SIGKILLed and
    restarted.  Every acknowledged report is stored exactly once and the aggregates equal a rebuild."""
    url = postgres_cluster.create_database("hosts")
    with open_storage(url) as storage:
        storage.migrate()
        ingest, _ = storage.create_key("ingest", DAY)
        campaign, _ = storage.create_campaign(CATEGORICAL, DAY)
    clients_per_host, reports_per_client = 2, 200
    ports = [free_port(), free_port()]
    transports = [AckRecorder() for _ in range(2 * clients_per_host)]
    recorded: list[list[str]] = [[] for _ in transports]
    log = tmp_path / "servers.log"
    with running_server(url, log, port=ports[0], workers=1) as (url_a, process_a), \
            running_server(url, log, port=ports[1], workers=1) as (url_b, _):
        clients = [Client(url_a if i < clients_per_host else url_b, ingest, tmp_path / f"device-{i}",
                          transport=transports[i], policy=ReportPolicy.unlimited(), batch_size=20,
                          flush_interval=0.02, backoff_base=0.05, backoff_cap=0.3, timeout=5)
                   for i in range(len(transports))]
        for client in clients:
            client.spec("browser")

        def produce(index: int) -> None:
            for n in range(reports_per_client):
                recorded[index].append(clients[index].record("browser", "chrome" if n % 3 else "safari").report_id)
                time.sleep(0.003)

        threads = [threading.Thread(target=produce, args=(i,)) for i in range(len(clients))]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while sum(len(t.acknowledged) for t in transports[:clients_per_host]) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        # the same batch reaches both hosts at once (a client retrying through another host): stored once
        duplicates = make_reports(campaign.spec, ["edge"] * 50)
        answers = _post_concurrently([url_a, url_b], ingest, duplicates)
        assert sorted((a["accepted"], a["duplicate"]) for a in answers) == [(0, 50), (50, 0)]
        acknowledged_by_a = sum(len(t.acknowledged) for t in transports[:clients_per_host])
        stop(process_a, signal.SIGKILL)  # host A dies mid-traffic; B goes on
        assert process_a.returncode == -signal.SIGKILL
        with running_server(url, log, port=ports[0], workers=1):  # host A comes back
            for thread in threads:
                thread.join()
            results = [client.close(timeout=60) for client in clients]

    total = len(transports) * reports_per_client
    assert 0 < acknowledged_by_a < clients_per_host * reports_per_client  # A was killed mid-traffic
    assert all(r.remaining == 0 for r in results)
    acknowledged = set().union(*(t.acknowledged for t in transports))
    all_recorded = {report_id for ids in recorded for report_id in ids}
    assert len(all_recorded) == total
    with open_storage(url) as storage:
        stored = [r["report_id"] for r in storage.iter_reports("browser")]
        assert len(stored) == len(set(stored)) == total + 50  # exactly once
        assert acknowledged <= set(stored)
        assert set(stored) == all_recorded | {r["report_id"] for r in duplicates}
        incremental = storage.aggregates_by_day(campaign)
        assert sum(a.n for _, a in incremental) == len(stored)
        storage.rebuild_aggregates("browser")
        assert storage.aggregates_by_day(campaign) == incremental


def _post_concurrently(bases: list[str], key: str, reports: list[dict]) -> list[dict]:
    "The same batch to each server at the same moment; their answers"
    body = json.dumps({"reports": reports}).encode()
    barrier = threading.Barrier(len(bases))

    def post(base: str) -> dict:
        request = urllib.request.Request(f"{base}/v1/reports", data=body, method="POST",
                                         headers={**bearer(key), "Content-Type": "application/json"})
        barrier.wait()
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    with ThreadPoolExecutor(len(bases)) as pool:
        return list(pool.map(post, bases))


def test_spec_names_round_trip(url):
    "A spec stored on PostgreSQL loads back identical (fingerprint included)"
    with open_storage(url) as storage:
        created, _ = storage.create_campaign({**CATEGORICAL, "name": f"c{uuid.uuid4().hex[:8]}"}, DAY)
        assert storage.get_campaign(created.name) == created
        assert client_sdk.load_spec(created.spec.to_json()).fingerprint == created.fingerprint


def test_missing_server_binaries_are_an_error_not_a_skip(monkeypatch):
    monkeypatch.setenv("LDP_PG_BINDIR", "/nonexistent")
    monkeypatch.setattr(pg_cluster.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(pg_cluster.shutil, "which", lambda name: None)
    with pytest.raises(pg_cluster.ServerNotFound, match="apt|postgresql package"):
        pg_cluster.find_bindir()


def test_a_report_reads_a_postgresql_database(url):
    from collector.reporting import report_data_from_db

    with open_storage(url) as storage:
        campaign, _ = storage.create_campaign(SPECS[0], DAY)
        storage.insert_reports([group_of(campaign, ["a"] * 30 + ["b"] * 10, seed=4)], DAY)
    data = report_data_from_db(url, campaign.name)
    assert data.result["n"] == 40 and data.spec["name"] == campaign.name
