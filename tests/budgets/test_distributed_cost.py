"""What the distributed phase costs per report, where it can be counted: the aggregator's HPKE keys are read once
per upload and once per aggregation job, not once per report; the noise calibration's imports (scipy, about a
second of CPU) happen when a leader or helper app is created, not inside its first collection."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collector.distributed import hpke_keys
from tests.collector.distributed.conftest import _clock_of_days  # noqa: F401 (the autouse fixture of its old folder)
from tests.collector.distributed.kit import Pair, honest_reports, spec_json, values_for

pytestmark = pytest.mark.budget


@pytest.fixture
def pair(tmp_path):
    return Pair(tmp_path)


def test_the_hpke_keys_are_read_once_per_upload_and_per_job_whatever_the_reports(pair, monkeypatch):
    spec, block = pair.create(spec_json("histogram"))
    reads: list[int] = []
    original = hpke_keys.keys
    monkeypatch.setattr(hpke_keys, "keys", lambda store: reads.append(1) or original(store))
    counts = []
    for n in (3, 30):
        reads.clear()
        assert pair.upload(honest_reports(spec, block, values_for("histogram", n)))["accepted"] == n
        upload = len(reads)
        reads.clear()
        assert pair.aggregate().aggregated == n  # one job: the leader's side and the helper's
        counts.append((upload, len(reads)))
    assert counts[0] == counts[1] and counts[0][0] <= 1 and counts[0][1] <= 1, counts


@pytest.mark.parametrize("role", ["leader", "helper"])
def test_an_aggregator_app_imports_the_noise_calibration_but_not_scipy_when_it_is_created(tmp_path, role):
    code = ("import sys; from collector import create_app; "
            f"create_app({{'DATABASE': {str(tmp_path / 'x.db')!r}, 'ROLE': {role!r}, 'PEER_TOKEN': 't'}}); "
            "print('estimators.distributed' in sys.modules, 'scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False"]  # scipy.stats (a second of CPU) only for coin noise
