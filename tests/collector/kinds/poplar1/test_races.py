"""Two identical requests to a real helper process at once (from two threads, SQLite and PostgreSQL): the first
held in its preparation (the helper's ``first_shares`` / ``round_two`` patched to wait for the test) while its
twin is answered and the walk moves on.  The chunk's state moves by compare-and-set in the database, so the held
request stores nothing out of order: it answers what its twin stored, and the stored state stays the latest.  Two
finishes at once draw the helper's noise once."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from client_sdk.distributed_messages import from_b64url
from client_sdk.kinds.poplar1.device import poplar1_for
from collector.kinds.poplar1.store import ChunkRow, Poplar1Store
from collector.storage import open_storage
from tests.collector.helpers import BACKENDS

from .peerkit import ActingLeader
from .test_chunks import FIRST
from .test_crash import Pair
from .test_processes import upload, values

WAIT_SECONDS = 120.0  # an upper bound for a held request to reach its gate


def holding(gate: Path) -> str:
    """The helper's patch: the first call of each of ``first_shares`` and ``round_two`` in the process touches
    ``gate/<name>.entered`` and waits for ``gate/<name>.released``"""
    return f"""
import threading, time
from pathlib import Path
from collector.kinds.poplar1 import prepare
_gate, _seen, _lock = Path({str(gate)!r}), set(), threading.Lock()
def _held(name, original):
    def step(self, *args):
        with _lock:
            first = name not in _seen
            _seen.add(name)
        if first:
            (_gate / (name + ".entered")).touch()
            deadline = time.monotonic() + {WAIT_SECONDS}
            while not (_gate / (name + ".released")).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return original(self, *args)
    return step
for _name in ("first_shares", "round_two"):
    setattr(prepare.Poplar1Aggregator, _name, _held(_name, getattr(prepare.Poplar1Aggregator, _name)))
"""


def reached(path: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was not reached"
        time.sleep(0.01)


def stored_chunk(pair: Pair, leader: ActingLeader) -> ChunkRow:
    with open_storage(pair.helper_db) as storage:
        return Poplar1Store(storage).chunk_rows((leader.spec.name, leader.spec.fingerprint, leader.batch), 3,
                                                  prep_state=True)[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_identical_requests_at_once_store_one_state_and_answer_alike(tmp_path: Path, backend: str,
                                                                         request: pytest.FixtureRequest) -> None:
    databases = None
    if backend == "postgresql":
        cluster = request.getfixturevalue("postgres_cluster")
        databases = (cluster.create_database("p1race_leader"), cluster.create_database("p1race_helper"))
    pair = Pair(tmp_path, databases)
    gate = tmp_path / "gate"
    gate.mkdir()
    with pair.server("helper", prelude=holding(gate)), pair.server("leader"), ThreadPoolExecutor(2) as threads:
        devices = pair.devices()
        leader = ActingLeader(pair.leader_db, pair.helper_url, upload(devices, "raced", values()), devices.day)
        # the chunk's first request and its twin: the first held in its preparation until the twin has answered
        body = leader.init_body(3, FIRST, 0, 1, leader.rows)
        held = threads.submit(leader.post, "", body)
        reached(gate / "first_shares.entered")
        twin = leader.post("", body)
        (gate / "first_shares.released").touch()
        assert twin.status_code == 200 and held.result().status_code == 200, twin.text
        assert held.result().json() == twin.json()
        stored = stored_chunk(pair, leader)
        assert stored.state == "prepared" and stored.answers["levels"]["answer"] == twin.json()
        leader.took(3, 0, twin.json())

        # the sketch and its twin, the first held until the twin is answered and the chunk is aggregated
        body = leader.sketch_body(3, 0)
        held = threads.submit(leader.post, "sketch", body)
        reached(gate / "round_two.entered")
        twin = leader.post("sketch", body)
        aggregated = leader.post("aggregate", leader.aggregate_body(3, 0))
        (gate / "round_two.released").touch()
        assert twin.status_code == aggregated.status_code == held.result().status_code == 200, twin.text
        assert held.result().json() == twin.json()
        stored = stored_chunk(pair, leader)
        assert stored.state == "aggregated" and stored.prep_state is None and stored.chunk_sum is not None
        assert set(stored.answers) == {"levels", "sketch", "aggregate"}
        assert stored.answers["sketch"]["answer"] == twin.json()
        assert stored.answers["aggregate"]["answer"] == aggregated.json()

        # two finishes at once: one noise draw, stored, and both answers are it
        finishes = [threads.submit(leader.post, "finish", leader.finish_body(3)) for _ in range(2)]
        first, second = (finish.result() for finish in finishes)
        assert first.status_code == second.status_code == 200 and first.json() == second.json()
    with open_storage(pair.helper_db) as storage:
        noisy = Poplar1Store(storage).noisy_share((leader.spec.name, leader.spec.fingerprint, leader.batch), 3)
    field = poplar1_for(leader.spec.params.bits).idpf.current_field(3)
    assert noisy == (first.json()["checksum"],
                     list(field.decode_vec(from_b64url(first.json()["aggregate_share"], "aggregate_share"))))
