"""The RAPPOR device secret in the state database: stored with the first report drawn with it, the same across
restarts and crashes, shared by two clients on one directory, and imported once from an older SDK's file."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import client_sdk
from client_sdk import Client, ReportPolicy
from client_sdk.runtime.device_state import load_or_create_device_state
from client_sdk.runtime.state_file import STATE_FILE_NAME
from client_sdk.runtime.transport import MockTransport

from .fakes import FakeCollector

RAPPOR = client_sdk.load_spec({"name": "r", "mechanism": "rappor", "candidates": ["x", "y"],
                               "rappor": {"k": 8, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}})
ROOT = Path(__file__).resolve().parents[2]


def fake_collector() -> FakeCollector:
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": "r", "version": 1, "fingerprint": RAPPOR.fingerprint, "spec": RAPPOR.to_dict()}]
    return fake


def client(state_dir: Path, fake: FakeCollector | None = None) -> Client:
    return Client("http://collector.test", "key", state_dir, transport=MockTransport(fake or fake_collector()),
                  background=False, campaigns=["r"], policy=ReportPolicy.unlimited())


def stored_secret(state_dir: Path) -> bytes | None:
    with sqlite3.connect(state_dir / STATE_FILE_NAME) as conn:
        row = conn.execute("SELECT secret FROM device").fetchone()
    conn.close()
    return row[0] if row else None


def queued_cohorts(state_dir: Path) -> set[int]:
    import json

    with sqlite3.connect(state_dir / STATE_FILE_NAME) as conn:
        bodies = [row[0] for row in conn.execute("SELECT body FROM queue")]
    conn.close()
    return {json.loads(body)["payload"]["cohort"] for body in bodies}


def test_the_secret_is_stored_with_the_first_report_and_kept_across_restarts(tmp_path):
    first = client(tmp_path)
    assert stored_secret(tmp_path) is None  # nothing drawn yet
    assert first.record("r", "x")
    secret = first._recorder.mechanisms[RAPPOR.fingerprint].secret
    prr = bytes(first._recorder.mechanisms[RAPPOR.fingerprint].permanent_bits("x"))
    assert stored_secret(tmp_path) == secret and len(secret) == 32
    first.close(timeout=0)
    again = client(tmp_path)
    assert again.record("r", "x")
    assert again._recorder.mechanisms[RAPPOR.fingerprint].secret == secret
    assert bytes(again._recorder.mechanisms[RAPPOR.fingerprint].permanent_bits("x")) == prr  # memoized across restarts
    again.close(timeout=0)
    assert sorted(os.listdir(tmp_path)) == [STATE_FILE_NAME]  # no secret file
    assert stat.S_IMODE(os.stat(tmp_path / STATE_FILE_NAME).st_mode) == 0o600


def test_the_secret_is_not_stored_without_a_report(tmp_path):
    device = client(tmp_path)
    device.set_upload_enabled(False)
    assert device.record("r", "x").status.value == "upload_disabled"
    device.close(timeout=0)
    assert stored_secret(tmp_path) is None


def test_two_clients_on_one_directory_report_with_one_secret(tmp_path):
    "Both draw a secret before either stores one; the second finds the first's and perturbs again with it"
    fake = fake_collector()
    one, two = client(tmp_path, fake), client(tmp_path, fake)
    mechanisms = [c._recorder.checked_mechanism(RAPPOR) for c in (one, two)]
    assert mechanisms[0].secret != mechanisms[1].secret  # both pending
    assert one.record("r", "x") and two.record("r", "y")
    secret = stored_secret(tmp_path)
    assert one._recorder.secret == two._recorder.secret == secret
    assert two._recorder.mechanisms[RAPPOR.fingerprint].secret == secret
    assert len(queued_cohorts(tmp_path)) == 1  # both reports drawn in the stored secret's cohort
    for device in (one, two):
        device.close(timeout=0)


CRASH = """
import os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
import client_sdk
from tests.client_sdk.test_device_secret import RAPPOR, client

state_dir, when = Path(sys.argv[1]), sys.argv[2]
device = client(state_dir)
if when == "before-commit":  # the process dies inside the record's transaction, after the secret's INSERT
    original = client_sdk.runtime.state_file.StateFile.store_device_secret

    def store_then_die(self, secret):
        original(self, secret)
        os._exit(3)

    client_sdk.runtime.state_file.StateFile.store_device_secret = store_then_die
device.record("r", "x")
print(bytes(device._recorder.mechanisms[RAPPOR.fingerprint].permanent_bits("x")).hex(), flush=True)
os._exit(0)  # no close: the record's commit is all there is
"""


def crash(state_dir: Path, when: str) -> subprocess.CompletedProcess:
    script = CRASH.format(root=str(ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), str(state_dir), when],
                          capture_output=True, text=True, timeout=60)


def test_a_crash_inside_the_first_records_transaction_leaves_no_secret_and_no_report(tmp_path):
    assert crash(tmp_path, "before-commit").returncode == 3
    assert stored_secret(tmp_path) is None and queued_cohorts(tmp_path) == set()
    after = crash(tmp_path, "after-record")  # the device starts again: a fresh secret, reported with
    assert after.returncode == 0, after.stderr
    assert stored_secret(tmp_path) is not None and len(queued_cohorts(tmp_path)) == 1


def test_a_crash_after_record_returns_keeps_the_secret_and_the_permanent_response(tmp_path):
    first = crash(tmp_path, "after-record")
    assert first.returncode == 0, first.stderr
    secret = stored_secret(tmp_path)
    second = crash(tmp_path, "after-record")
    assert second.returncode == 0, second.stderr
    assert stored_secret(tmp_path) == secret and second.stdout == first.stdout  # the same PRR for "x"
    assert len(queued_cohorts(tmp_path)) == 1


def test_an_older_sdks_secret_file_is_imported_once_then_removed(tmp_path):
    legacy = load_or_create_device_state(tmp_path)  # what an older SDK left
    device = client(tmp_path)
    assert device.record("r", "x")
    assert device._recorder.mechanisms[RAPPOR.fingerprint].secret == legacy.secret == stored_secret(tmp_path)
    assert not (tmp_path / "rappor_device.json").exists()
    device.close(timeout=0)
    again = client(tmp_path)
    assert again.record("r", "y") and again._recorder.secret == legacy.secret
    again.close(timeout=0)


def test_a_failed_import_keeps_the_secret_file(tmp_path, monkeypatch):
    "The file goes only after the import committed: a failing commit leaves it for the next start"
    legacy = load_or_create_device_state(tmp_path)
    device = client(tmp_path)

    def failing(secret):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(device.state, "store_device_secret", failing)
    assert device.record("r", "x").status.value == "state_error"
    assert (tmp_path / "rappor_device.json").exists() and stored_secret(tmp_path) is None
    device.close(timeout=0)
    again = client(tmp_path)
    assert again.record("r", "x") and stored_secret(tmp_path) == legacy.secret
    again.close(timeout=0)


def test_a_file_left_after_a_committed_import_is_removed(tmp_path):
    legacy = load_or_create_device_state(tmp_path)
    device = client(tmp_path)
    assert device.record("r", "x")
    device.close(timeout=0)
    (tmp_path / "rappor_device.json").write_text('{"version": 1, "secret": "' + "ab" * 32 + '"}')  # stale copy
    again = client(tmp_path)
    assert again.record("r", "x") and again._recorder.secret == legacy.secret  # the database's secret rules
    assert not (tmp_path / "rappor_device.json").exists()
    again.close(timeout=0)


def test_a_damaged_secret_file_is_a_state_error_not_a_new_secret(tmp_path):
    (tmp_path / "rappor_device.json").write_text('{"version": 1, "secret": "abcd"}')  # too short
    device = client(tmp_path)
    assert device.record("r", "x").status.value == "state_error"
    device.close(timeout=0)
    assert (tmp_path / "rappor_device.json").exists() and stored_secret(tmp_path) is None
