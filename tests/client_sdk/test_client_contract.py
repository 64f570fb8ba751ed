"""The recording contract, the consent hooks, the exit flush and the state file's protection."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

import client_sdk
from client_sdk import RecordStatus, ReportPolicy

from .fakes import SPEC, listing, make_client

NUMERIC = client_sdk.load_spec({"name": "load_ms", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 1000]})


@pytest.fixture
def listed_campaigns() -> list[dict]:
    return [listing(NUMERIC), {"name": "future", "version": 1, "fingerprint": "0" * 32,
                               "spec": {"name": "future", "mechanism": "quantum", "epsilon": 1.0}}]


@pytest.mark.parametrize(("campaign", "value", "error", "builtin"), [
    ("load_ms", float("nan"), client_sdk.InvalidValue, ValueError),
    ("load_ms", "12 ms", client_sdk.InvalidValueType, TypeError),
    ("load_ms", None, client_sdk.InvalidValueType, TypeError),
    ("browser", "opera", client_sdk.InvalidValue, ValueError),
    ("future", 1, client_sdk.UnsupportedSpec, ValueError),
])
def test_programming_errors_raise_one_sdk_error_before_the_quota(tmp_path, fake, campaign, value, error, builtin):
    client = make_client(tmp_path, fake, campaigns=["browser", "load_ms", "future"], policy=ReportPolicy())
    assert client.record("browser", "chrome") and client.record("load_ms", 10.0)  # today's quota is spent
    with pytest.raises(error) as raised:
        client.record(campaign, value)
    assert isinstance(raised.value, client_sdk.RecordingError) and isinstance(raised.value, builtin)
    assert client.pending() == 2
    client.close()


def test_operational_conditions_never_raise(tmp_path, fake):
    client = make_client(tmp_path, fake)
    client.state.conn.close()  # the state file can no longer be written (as on a full disk)
    assert client.record("browser", "chrome").status is RecordStatus.STATE_ERROR
    client = make_client(tmp_path, fake)
    client.close()
    assert client.record("browser", "chrome").status is RecordStatus.CLIENT_CLOSED
    with pytest.raises(client_sdk.InvalidValueType):
        client.record(42, "chrome")  # type: ignore[arg-type]


def test_upload_switch_off_deletes_the_queue_keeps_the_ledger_and_persists(tmp_path, fake):
    client = make_client(tmp_path, fake)
    for _ in range(4):
        client.record("browser", "chrome")
    client.set_upload_enabled(False)
    assert client.pending() == 0 and client.spent("browser").reports == 4
    requests = len(fake.posts) + fake.spec_fetches
    assert client.record("browser", "safari").status is RecordStatus.UPLOAD_DISABLED
    assert client.record("not-fetched", 1).status is RecordStatus.UPLOAD_DISABLED
    with pytest.raises(client_sdk.InvalidValue):
        client.record("browser", "opera")  # programming errors still surface
    assert client.flush().sent == 0 and client.prepare() is False  # "not-fetched" was not fetched
    assert len(fake.posts) + fake.spec_fetches == requests  # no contact with the collector at all
    status = client.status()
    assert not status.upload_enabled and status.dropped["deleted_upload_disabled"] == 4
    client.close()

    again = make_client(tmp_path, fake)
    assert again.record("browser", "chrome").status is RecordStatus.UPLOAD_DISABLED  # persisted
    again.set_upload_enabled(True)
    assert again.record("browser", "chrome")
    assert again.spent("browser").reports == 5  # the budget was not reset
    assert again.flush().sent == 1
    again.close()


def test_delete_local_data_removes_the_state_directory(tmp_path, fake):
    client = make_client(tmp_path, fake)
    client.record("browser", "chrome")
    client.delete_local_data()
    assert not (tmp_path / "state").exists()
    assert client.record("browser", "chrome").status is RecordStatus.CLIENT_CLOSED
    fresh = make_client(tmp_path, fake)
    assert fresh.pending() == 0 and fresh.spent("browser").reports == 0
    fresh.close()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_state_directory_and_files_are_private(tmp_path, fake):
    client = make_client(tmp_path, fake)
    client.record("browser", "chrome")
    mode = stat.S_IMODE
    assert mode((tmp_path / "state").stat().st_mode) == 0o700
    files = list((tmp_path / "state").iterdir())
    assert files and all(mode(f.stat().st_mode) & 0o077 == 0 for f in files)
    client.close()


def test_a_corrupt_state_file_is_a_clear_sdk_error(tmp_path, fake):
    state = tmp_path / "state"
    state.mkdir()
    (state / "ldp-telemetry.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(client_sdk.StateFileError, match="damaged") as raised:
        make_client(tmp_path, fake)
    assert isinstance(raised.value, client_sdk.LDPError)
    client_sdk.delete_local_data(state)
    assert make_client(tmp_path, fake).record("browser", "chrome")


EXIT_SCRIPT = """
import json, sys
import client_sdk
from client_sdk.runtime.transport import MockTransport, Response

spec = client_sdk.load_spec({spec})
posted = []

def handler(request):
    if request.method == "GET":
        return Response.from_json(200, {{"campaigns": [{{"name": spec.name, "fingerprint": spec.fingerprint,
                                                         "spec": spec.to_dict()}}]}})
    reports = request.json()["reports"]
    with open(sys.argv[1], "a") as out:
        out.write("\\n".join(r["report_id"] for r in reports) + "\\n")
    return Response.from_json(200, {{"accepted": len(reports), "duplicate": 0, "rejected": 0, "errors": []}})

client = client_sdk.Client("http://collector.test", "k", sys.argv[2], transport=MockTransport(handler),
                           campaigns=[spec.name], background=False, flush_interval=3600,
                           policy=client_sdk.ReportPolicy.unlimited(), {option})
for _ in range(3):
    client.record(spec.name, "chrome")
"""


@pytest.mark.parametrize(("option", "delivered"), [("flush_at_exit=5.0", 3), ("flush_at_exit=None", 0)])
def test_the_exit_flush_is_opt_in(tmp_path, option, delivered):
    script = EXIT_SCRIPT.format(spec=json.dumps(SPEC.to_dict()), option=option)
    out = tmp_path / "posted.txt"
    subprocess.run([sys.executable, "-c", textwrap.dedent(script), str(out), str(tmp_path / "state")], check=True,
                   timeout=60)
    sent = out.read_text().split() if out.exists() else []
    assert len(sent) == delivered


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_state_left_open_by_an_older_version_is_tightened(tmp_path, fake):
    client = make_client(tmp_path, fake)
    client.record("browser", "chrome")
    client.close()
    state = tmp_path / "state"
    os.chmod(state, 0o755)
    for path in state.iterdir():
        os.chmod(path, 0o644)
    make_client(tmp_path, fake).close()
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in state.iterdir())


def test_settings_assigned_after_construction_take_effect(tmp_path, fake):
    "Client's settings live in its parts (recorder, uploader, spec cache): assigning one on the client reaches them"
    client = make_client(tmp_path, fake, policy=ReportPolicy(max_reports=1))
    assert client.record("browser", "chrome").status is RecordStatus.QUEUED
    assert client.record("browser", "chrome").status is RecordStatus.REFUSED_BY_POLICY
    client.policy = ReportPolicy(max_reports=2)
    assert client.record("browser", "chrome").status is RecordStatus.QUEUED
    assert client.record("browser", "chrome").status is RecordStatus.REFUSED_BY_POLICY
    later = time.time() + 2 * 86400.0
    client.clock = lambda: later  # a new period of the policy
    assert client.record("browser", "chrome").status is RecordStatus.QUEUED
    assert client.flush().remaining == 0 and len(fake.posts[0]) == 3
    client.close()
