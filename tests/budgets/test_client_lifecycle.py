"""What one device lifecycle costs (Client, a record per campaign, flush, close), counted rather than timed:
requests and SQL statements grow with the campaigns a device reports to and with nothing else."""

from __future__ import annotations

import pytest

import client_sdk
from client_sdk import Client
from client_sdk.runtime.transport import MockTransport, _shared_opener
from tests.client_sdk.fakes import SPEC, FakeCollector
from tests.sqltrace import traced_connections

pytestmark = pytest.mark.budget


def campaigns(k: int) -> list[client_sdk.Spec]:
    return [SPEC] + [client_sdk.load_spec({"name": f"c{i}", "mechanism": "grr", "epsilon": 1.0,
                                           "domain": ["a", "b"]}) for i in range(k - 1)]


def run_lifecycle(state_dir, k: int, rng=None) -> tuple[list, list[str]]:
    """One lifecycle with k campaigns (Client, a record each, flush, close): the requests sent and every statement
    SQLite traced on the state file"""
    fake = FakeCollector()
    specs = campaigns(k)
    fake.extra_campaigns = [{"name": s.name, "version": 1, "fingerprint": s.fingerprint, "spec": s.to_dict()}
                            for s in specs[1:]]
    transport = MockTransport(fake)
    with traced_connections() as statements:
        client = Client("http://collector.test", "key", state_dir, transport=transport, background=False,
                        campaigns=[s.name for s in specs], rng=rng)
        for spec in specs:
            assert client.record(spec.name, spec.domain[0])
        result = client.flush(timeout=5)
        client.close(timeout=0)
    assert result.remaining == 0 and len(fake.stored) == k
    return transport.requests, statements


def lifecycle(tmp_path, k: int) -> tuple[list[str], int]:
    "Requests (method and path) and state-file statements of one lifecycle with k campaigns"
    requests, statements = run_lifecycle(tmp_path / f"device-{k}", k, rng=client_sdk.DeterministicRandom(3))
    return [f"{r.method} {r.url.split('collector.test')[1]}" for r in requests], len(statements)


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


def test_devices_of_one_process_parse_the_same_listing_once(tmp_path, monkeypatch):
    "Specs are immutable: the same listing bytes are parsed (and checked against their fingerprints) once"
    import client_sdk.runtime.spec_cache as client_module

    parsed: list[str] = []
    original = client_module.load_spec

    def counting(body):
        parsed.append(body["name"])
        return original(body)

    monkeypatch.setattr(client_module, "load_spec", counting)
    monkeypatch.setattr(client_module, "_LAST_LISTING", [])
    fake = FakeCollector()
    for device in range(3):
        client = Client("http://collector.test", "key", tmp_path / f"d{device}", transport=MockTransport(fake),
                        background=False, campaigns=["browser"])
        assert client.record("browser", "chrome")
        assert client.flush(timeout=5).remaining == 0
        client.close(timeout=0)
    assert fake.spec_fetches == 3 and parsed == ["browser"]
    fake.extra_campaigns = [{"name": "c1", "version": 1, "fingerprint": "0" * 32,
                             "spec": {"name": "c1", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]}}]
    client = Client("http://collector.test", "key", tmp_path / "d3", transport=MockTransport(fake),
                    background=False, campaigns=["browser", "c1"])
    assert sorted(parsed) == ["browser", "browser", "c1"]  # another answer: parsed again
    assert client.record("c1", "a").status.value == "held"  # its fingerprint does not match: no spec
    client.close(timeout=0)


def traced_lifecycle(tmp_path, k: int) -> list[tuple[str, int]]:
    "Each state-file statement of one lifecycle with the synchronous level in force (2 FULL, 1 NORMAL)"
    _, statements = run_lifecycle(tmp_path / f"traced-{k}", k)
    level, out = 2, []  # SQLite's default level, FULL
    for statement in (s.rstrip(";") for s in statements):
        if statement.startswith("PRAGMA synchronous = "):
            level = {"OFF": 0, "NORMAL": 1, "FULL": 2}[statement.rsplit(" ", 1)[1]]
        out.append((statement, level))
    return out


def test_a_lifecycle_fsyncs_each_record_and_nothing_else(tmp_path):
    """Write transactions of a fresh device with k campaigns: the spec cache, one per record, and one removal of
    everything the flush got acknowledged; only the records' commits are fsynced.  The file is written from the
    template (no schema transaction); the spec cache, its WAL's first commit, runs at OFF (not even the WAL's
    header is fsynced: the first record's commit syncs it)"""
    for k in (1, 4):
        statements = traced_lifecycle(tmp_path, k)
        commits = [level for statement, level in statements if statement == "COMMIT"]
        executed = [item for i, item in enumerate(statements) if i == 0 or item != statements[i - 1]]
        removals = [level for statement, level in executed if statement.startswith("DELETE FROM queue WHERE "
                                                                                    "report_id IN")]
        assert commits == [0] + [2] * k  # the spec cache, then the records
        assert not any(statement.startswith(("CREATE", "PRAGMA journal_mode")) for statement, _ in statements)
        assert removals == [1]  # one statement (SQLite traces it again for each row its trigger fires on)
        assert sum(s.startswith("PRAGMA synchronous") for s, _ in statements) <= 4  # set only when it changes


def test_a_lifecycle_of_four_campaigns_runs_at_most_73_statements(tmp_path):
    """The statements SQLite traces (triggers' included) of one fresh device with 4 campaigns: 103 before a bound of
    93, which the RAPPOR secret's table (one more CREATE) and the new file's switch to WAL through journal mode OFF
    (one more PRAGMA, 3 fsyncs and a journal file fewer) made 95; a new file written from the template (no schema
    script) and no reads of the settings and spec cache of a file this open created: 74; close's flush of an empty
    queue is one read (no expiry DELETE, no campaign list, no synchronous switch): 72; close() keeping the last
    status for status() after it (the persistent drop counters: one read; the queue's totals are the flush's): 73.
    Holding values for their spec costs nothing here (the held campaigns are read with the spec cache, and only
    from a file this open did not create)"""
    assert lifecycle(tmp_path, 4)[1] <= 73
