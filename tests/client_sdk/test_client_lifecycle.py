"""What one device lifecycle costs (Client, a record per campaign, flush, close), counted rather than timed:
requests and SQL statements grow with the campaigns a device reports to and with nothing else."""

from __future__ import annotations

import client_sdk
from client_sdk import Client
from client_sdk.transport import MockTransport, _shared_opener

from .test_client import SPEC, FakeCollector


def campaigns(k: int) -> list[client_sdk.Spec]:
    return [SPEC] + [client_sdk.load_spec({"name": f"c{i}", "mechanism": "grr", "epsilon": 1.0,
                                           "domain": ["a", "b"]}) for i in range(k - 1)]


def lifecycle(tmp_path, k: int) -> tuple[list[str], int]:
    "Requests (method and path) and state-file statements of one lifecycle with k campaigns"
    fake = FakeCollector()
    specs = campaigns(k)
    fake.extra_campaigns = [{"name": s.name, "version": 1, "fingerprint": s.fingerprint, "spec": s.to_dict()}
                            for s in specs[1:]]
    transport = MockTransport(fake)
    statements: list[str] = []
    original = client_sdk.state_file.sqlite3.connect

    def traced(*args, **kwargs):
        connection = original(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    client_sdk.state_file.sqlite3.connect = traced
    try:
        client = Client("http://collector.test", "key", tmp_path / f"device-{k}", transport=transport,
                        background=False, campaigns=[s.name for s in specs], rng=client_sdk.DeterministicRandom(3))
        for spec in specs:
            assert client.record(spec.name, spec.domain[0])
        result = client.flush(timeout=5)
        client.close(timeout=0)
    finally:
        client_sdk.state_file.sqlite3.connect = original
    assert result.remaining == 0 and len(fake.stored) == k
    return [f"{r.method} {r.url.split('collector.test')[1]}" for r in transport.requests], len(statements)


def test_a_lifecycle_is_one_spec_request_and_one_post_per_campaign(tmp_path):
    for k in (1, 4):
        requests, _ = lifecycle(tmp_path, k)
        assert requests.count("GET /v1/campaigns") == 1 and len(requests) == 1 + k
        assert requests.count("POST /v1/reports") == k  # one campaign per request: they are not linked


def test_state_file_statements_are_linear_in_campaigns(tmp_path):
    "Opening a fresh state file is a constant; each campaign adds the same statements (record, send, remove)"
    counts = {k: lifecycle(tmp_path, k)[1] for k in (1, 2, 3, 6)}
    per_campaign = counts[2] - counts[1]
    assert counts[3] - counts[2] == per_campaign and counts[6] - counts[3] == 3 * per_campaign


def test_clients_share_one_urllib_opener(monkeypatch):
    "Building an opener costs about a millisecond: one per proxy setting for the process, not one per client"
    assert _shared_opener(False) is _shared_opener(False)
    monkeypatch.setenv("http_proxy", "http://proxy-one.test:3128")
    first = _shared_opener(True)
    assert _shared_opener(True) is first
    monkeypatch.setenv("http_proxy", "http://proxy-two.test:3128")
    assert _shared_opener(True) is not first  # the environment changed: a new opener sees it
