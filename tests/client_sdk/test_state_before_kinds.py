"""A state file written before the device kinds made reports (issue 32) still works: its RAPPOR device secret,
and so the memoized responses, are the ones the new code reports with."""

import shutil
from pathlib import Path

from client_sdk.runtime.state_file import STATE_FILE_NAME

from .test_device_secret import RAPPOR, client, queued_cohorts, stored_secret

OLD_FILE = Path(__file__).parent / "data" / "state_before_kinds.sqlite3"
# What the old code drew and stored in that file (its secret, the permanent bits of "x", the cohort)
OLD_SECRET = bytes.fromhex("3dad1f103b399bc75c9280258d668f5a2e2507959b8c169c119b07b2867d7e07")
OLD_PRR_X = bytes.fromhex("0001000100000101")
OLD_COHORT = 2


def test_an_old_state_file_keeps_its_secret_and_memoized_responses(tmp_path):
    shutil.copy(OLD_FILE, tmp_path / STATE_FILE_NAME)
    assert stored_secret(tmp_path) == OLD_SECRET
    device = client(tmp_path)
    assert device.record("r", "x")
    mechanism = device._recorder.mechanisms[RAPPOR.fingerprint]
    assert mechanism.secret == OLD_SECRET and bytes(mechanism.permanent_bits("x")) == OLD_PRR_X
    device.close(timeout=0)
    assert stored_secret(tmp_path) == OLD_SECRET
    assert queued_cohorts(tmp_path) == {OLD_COHORT}  # the old file's queued report and the new one
