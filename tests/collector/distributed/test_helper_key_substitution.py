"""A dishonest leader (or anything in front of it) cannot read a device's value: the device seals its helper share only
to the helper its app configured out of band (``Client(aggregators={"helper": URL})``), whose HPKE config it fetches
from the helper itself; a listing that names another helper key or URL is refused (``aggregator_mismatch``) with
nothing charged, queued or sent.

Real processes: a helper and a leader (``serve --role``) on loopback with their own databases.  The leader's operator
swaps the helper's stored HPKE config for a key pair of its own (the attack of issue 21: both shares sealed to keys
the leader holds), and a rewriting proxy in front of an honest leader changes the helper's key or URL in what it
serves.  Each attack is first shown to work against a device that trusts the listing (the attacker opens the helper
share), then shown to fail against the SDK."""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

import client_sdk
from client_sdk import Client, RecordStatus, ReportPolicy
from client_sdk.clock import utc_today
from client_sdk.distributed import HELPER, open_input_share, parse_payload, seal_report
from client_sdk.vdaf.hpke import HpkeConfig, HpkeKeyPair
from tests.collector.helpers import loopback_http_server

from .kit import spec_json
from .test_processes import Aggregators, call


@contextmanager
def rewriting_proxy(target: str, rewrite: Callable[[dict], None]) -> Iterator[str]:
    "An HTTP proxy on loopback in front of ``target`` that passes everything through, rewriting each listing's JSON"

    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type",
                                                                               "content-encoding", "accept")}
            request = urllib.request.Request(target + self.path, data=body, method=self.command, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    status, data = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, data = error.code, error.read()
            if self.command == "GET" and self.path.startswith("/v1/campaigns") and status == 200:
                listing = json.loads(data)
                for item in listing.get("campaigns", [listing]):
                    if "aggregators" in item:
                        rewrite(item["aggregators"])
                data = json.dumps(listing).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _forward

        def log_message(self, *args: Any) -> None:
            pass

    with loopback_http_server(Handler) as base:
        yield base


def listing(url: str, key: str, name: str) -> dict:
    status, body = call("GET", f"{url}/v1/campaigns/{name}", key)
    assert status == 200, body
    return body


def naive_report(spec: client_sdk.Spec, block: dict, value: Any) -> dict:
    "What a device that trusts the leader's listing would send"
    leader = HpkeConfig.from_dict(block["leader"]["hpke_config"])
    helper = HpkeConfig.from_dict(block["helper"]["hpke_config"])
    report_id = str(uuid.uuid4())
    return {"report_id": report_id, "payload": seal_report(spec, value, leader, helper, report_id=report_id,
                                                           batch=utc_today())}


def attacker_opens(spec: client_sdk.Spec, attacker: HpkeKeyPair, report: dict) -> bool:
    parsed = parse_payload(report["payload"])
    try:
        open_input_share(spec, attacker, HELPER, report["report_id"], parsed.public_share, parsed.helper_ciphertext,
                         parsed.batch)
        return True
    except ValueError:
        return False


def device_records(url: str, servers: Aggregators, tmp_path: Any, name: str, value: Any) -> Client:
    client = Client(url, servers.ingest, tmp_path / "device", background=False, campaigns=[name],
                    aggregators={"helper": servers.helper_url}, policy=ReportPolicy.unlimited())
    client.recorded = client.record(name, value)  # type: ignore[attr-defined]
    return client


def leader_reports(servers: Aggregators) -> int:
    with sqlite3.connect(servers.leader_db) as conn:
        return conn.execute("SELECT count(*) FROM dist_reports").fetchone()[0]


def assert_refused(client: Client, name: str, servers: Aggregators) -> None:
    assert client.recorded.status is RecordStatus.AGGREGATOR_MISMATCH  # type: ignore[attr-defined]
    assert client.pending() == 0 and client.spent(name).reports == 0 and client.spent(name).epsilon == 0
    assert client.flush(timeout=30).sent == 0
    assert client.status().recorded == {"aggregator_mismatch": 1}
    client.close()
    assert leader_reports(servers) == 0  # the leader got no report at all, so none it could open


def test_a_leader_that_stores_its_own_key_as_the_helpers_gets_no_report(tmp_path, monkeypatch):
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0):
            spec, honest_block = servers.create(spec_json("histogram"))
        # the leader's operator swaps the helper's HPKE config for one it holds (same config id: nothing else shows)
        attacker = HpkeKeyPair.generate(honest_block["helper"]["hpke_config"]["id"])
        with sqlite3.connect(servers.leader_db) as conn:
            conn.execute("UPDATE dist_campaigns SET helper_hpke_config = ?", (json.dumps(attacker.config.to_dict()),))
        with servers.leader(monkeypatch, interval=0):
            served = listing(servers.leader_url, servers.ingest, spec.name)["aggregators"]
            assert served["helper"]["hpke_config"] == attacker.config.to_dict()
            assert attacker_opens(spec, attacker, naive_report(spec, served, "b"))  # the attack works on trust
            client = device_records(servers.leader_url, servers, tmp_path, spec.name, "b")
            assert_refused(client, spec.name, servers)


@pytest.mark.parametrize("rewrite", ["helper key", "helper url", "helper url and key"])
def test_a_proxy_that_rewrites_the_helper_gets_no_report(tmp_path, monkeypatch, rewrite):
    servers = Aggregators(tmp_path)
    attacker = HpkeKeyPair.generate(7)

    def rewritten(block: dict) -> None:
        if "key" in rewrite:
            block["helper"]["hpke_config"] = attacker.config.to_dict()
        if "url" in rewrite:
            block["helper"]["url"] = "https://helper.attacker.test"

    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0):
        spec, _ = servers.create(spec_json("histogram"))
        with rewriting_proxy(servers.leader_url, rewritten) as proxy:
            served = listing(proxy, servers.ingest, spec.name)["aggregators"]
            if "key" in rewrite:
                assert attacker_opens(spec, attacker, naive_report(spec, served, "c"))
            client = device_records(proxy, servers, tmp_path, spec.name, "c")
            assert_refused(client, spec.name, servers)


def test_through_an_honest_proxy_the_report_is_counted(tmp_path, monkeypatch):
    "The control: the same device and proxy, nothing rewritten, and the report reaches both aggregators"
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch), servers.leader(monkeypatch, interval=0):
        spec, _ = servers.create(spec_json("histogram"))
        with rewriting_proxy(servers.leader_url, lambda block: None) as proxy:
            client = device_records(proxy, servers, tmp_path, spec.name, "c")
            assert client.recorded.status is RecordStatus.QUEUED  # type: ignore[attr-defined]
            assert client.flush(timeout=30).sent == 1
            client.close()
    assert leader_reports(servers) == 1
