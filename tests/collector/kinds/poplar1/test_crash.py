"""A poplar1 walk whose helper, or leader, is SIGKILLed between recording a level (each level at most once, levels
strictly increasing) and storing its first answer, or the helper after some of a level's chunks: the process is
killed at a named point (``LDP_FAILPOINT``, collector.distributed.store.failpoint, as the distributed crash tests
do), restarted without it, and the walk retried completes with the same counts a walk without the crash gives; a
different request for a level or chunk recorded before the kill is still refused."""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from client_sdk.distributed_messages import b64url
from client_sdk.kinds.poplar1.device import poplar1_for
from collector.kinds.poplar1.store import Poplar1Store, prefix_bits
from collector.kinds.poplar1.walk import signed
from collector.storage import open_storage
from tests.collector.distributed.test_e2e_devices import PEER_TOKEN, Aggregators
from tests.collector.helpers import create_key, free_port, running_server

from .test_processes import CHUNK, HEAVY, TAMPERED, refusal, upload, values

WAIT_SECONDS = 60.0  # an upper bound for the killed server to exit


class Pair:
    """A leader and a helper on SQLite files (or two PostgreSQL databases), each (re)started on its own, with or
    without a failpoint (or a patch)"""

    def __init__(self, tmp: Path, databases: tuple[str, str] | None = None) -> None:
        self.tmp = tmp
        self.leader_db, self.helper_db = databases or (tmp / "leader.db", tmp / "helper.db")
        self.leader_port, self.helper_port = free_port(), free_port()
        self.helper_url = f"http://127.0.0.1:{self.helper_port}"
        self.leader_url = f"http://127.0.0.1:{self.leader_port}"
        self.admin, self.ingest = create_key(self.leader_db, "admin"), create_key(self.leader_db, "ingest")

    @contextmanager
    def server(self, role: str, failpoint: str | None = None, prelude: str = "") -> Iterator[subprocess.Popen]:
        extra = ("--helper-url", self.helper_url, "--aggregate-interval", "0") if role == "leader" else ()
        db, port = (self.leader_db, self.leader_port) if role == "leader" else (self.helper_db, self.helper_port)
        with pytest.MonkeyPatch.context() as env:  # the server copies the environment as it starts
            env.setenv("LDP_POPLAR1_CHUNK_EVALUATIONS", str(CHUNK.evaluations))  # several chunks a level
            if failpoint:
                env.setenv("LDP_FAILPOINT", failpoint)
            else:
                env.delenv("LDP_FAILPOINT", raising=False)
            server = running_server(db, self.tmp / f"{role}.log", port, 1,
                                    ("--rate-limit", "0", "--peer-token", PEER_TOKEN, "--role", role, *extra),
                                    prelude)
            _, process = server.__enter__()
        try:
            yield process
        finally:
            server.__exit__(None, None, None)

    def devices(self) -> Aggregators:
        "The leader as the poplar1 process tests' devices and admin reach it"
        def no_restart(offset: float) -> None:
            raise AssertionError("these servers are restarted by the test")
        return Aggregators(self.leader_url, self.helper_url, self.leader_db, self.admin, self.ingest, no_restart)

    def walk(self, name: str, batch: str) -> requests.Response:
        return requests.post(f"{self.leader_url}/v1/campaigns/{name}/walk", json={"batch": batch}, timeout=600,
                             headers={"Authorization": f"Bearer {self.admin}"})


def killed(process: subprocess.Popen) -> None:
    process.wait(timeout=WAIT_SECONDS)
    assert process.returncode == -signal.SIGKILL


def levels_of(db: Path | str, spec: Any, batch: str) -> dict[int, tuple[str, bool]]:
    "Each recorded level of the batch: (state, whether its first answer or noisy share is stored)"
    with open_storage(db) as storage:
        store = Poplar1Store(storage)
        key = (spec.name, spec.fingerprint, batch)
        return {level: (row[0], row[2] is not None or store.noisy_share(key, level) is not None)
                for level in store.level_digests(key) if (row := store.level_row(key, level)) is not None}


def checked_release(release: dict) -> None:
    "A complete walk: every report counted, the tampered ones rejected by name, the heavy hitters found"
    assert release["rejections"] == {"invalid-measurement": TAMPERED}
    assert release["walk"]["reports"] == len(values())
    assert [level["level"] for level in release["walk"]["levels"]] == [3, 7, 11, 15]
    found = {row["value"].rstrip("\x00"): row for row in release["estimate"]["heavy_hitters"]}
    for value, count in HEAVY.items():
        assert found[value[:2]]["ci_low"] <= count <= found[value[:2]]["ci_high"], (found, count)


def chunk_states(db: Path | str, spec: Any, batch: str, level: int) -> dict[int, str]:
    "The state of each chunk of a level the helper recorded"
    with open_storage(db) as storage:
        rows = Poplar1Store(storage).chunk_rows((spec.name, spec.fingerprint, batch), level)
    return {chunk: row.state for chunk, row in rows.items()}


def leaders_chunks(pair: Pair, spec: Any, batch: str, level: int) -> list[list[dict]]:
    "The level's reports as the leader recorded them (id order), as entries of its chunks to the helper"
    key = (spec.name, spec.fingerprint, batch)
    with open_storage(pair.leader_db) as storage:
        store = Poplar1Store(storage)
        ids = store.level_reports(key, level)
        rows = [row for row in store.batch_reports(key) if row[0] in ids]
        most = CHUNK.reports(len(dict(store.history(key))[level]))
    entries = [{"report_id": str(uuid.UUID(bytes=r)), "public_share": b64url(p), "helper_share": h}
               for r, p, _, h in rows]
    return [entries[start:start + most] for start in range(0, len(entries), most)]


def helper_level(pair: Pair, spec: Any, batch: str, level: int, prefixes: list[str], chunks: list[list[dict]],
                 chunk: int = 0, drop: int = 0) -> requests.Response:
    "Chunk ``chunk`` of a level request to the helper as a leader sends it (its last ``drop`` reports left out)"
    reports = chunks[chunk][:len(chunks[chunk]) - drop]
    return requests.post(pair.helper_url + "/v1/peer/poplar1/levels", timeout=120,
                         headers={"Authorization": f"Bearer {PEER_TOKEN}"},
                         json={"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": batch, "level": level,
                               "prefixes": prefixes, "chunk": chunk, "chunks": len(chunks), "reports": reports})


def recorded_prefixes(pair: Pair, spec: Any, batch: str, level: int) -> list[str]:
    with open_storage(pair.helper_db) as storage:
        recorded = dict(Poplar1Store(storage).history((spec.name, spec.fingerprint, batch)))[level]
    return [prefix_bits(prefix) for prefix in recorded]


def test_a_helper_killed_after_recording_a_level_resumes_it_on_the_same_request(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    with pair.server("helper", failpoint="poplar1-helper-level-7-recorded") as helper, pair.server("leader"):
        devices = pair.devices()
        spec = upload(devices, "crashed", values(), tampered=TAMPERED)
        batch = devices.day
        failed = pair.walk("crashed", batch)
        assert failed.status_code == 503 and failed.json()["type"].endswith("helper-unavailable"), failed.text
        killed(helper)
        # the helper died between its record of level 7 (with its first chunk) and its first answer to it: level 3
        # answered and finished
        assert levels_of(pair.helper_db, spec, batch) == {3: ("finished", True), 7: ("open", False)}
        assert chunk_states(pair.helper_db, spec, batch, 7) == {0: "recorded"}
        with pair.server("helper"):
            asked = recorded_prefixes(pair, spec, batch, 7)
            chunks = leaders_chunks(pair, spec, batch, 7)
            # the attacker's versions of the retry: other prefixes, or other reports, for the recorded level
            assert len(asked) > 1 and len(chunks) > 1
            assert refusal(helper_level(pair, spec, batch, 7, asked[:1], chunks)) == (409, "level-not-increasing",
                                                                                      "level")
            assert refusal(helper_level(pair, spec, batch, 7, asked, chunks, drop=1)) == (409, "chunk-mismatch",
                                                                                          "chunk")
            retried = pair.walk("crashed", batch)
            assert retried.status_code == 200, retried.text
    checked_release(retried.json())
    assert levels_of(pair.helper_db, spec, batch) == {level: ("finished", True) for level in (3, 7, 11, 15)}


def test_a_leader_killed_after_recording_a_level_resumes_the_walk(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    with pair.server("helper"):
        with pair.server("leader", failpoint="poplar1-leader-level-7-recorded") as leader:
            devices = pair.devices()
            spec = upload(devices, "crashed", values(), tampered=TAMPERED)
            batch = devices.day
            with pytest.raises(requests.ConnectionError):
                pair.walk("crashed", batch)
            killed(leader)
        # the leader died after its record of level 7, before its own first answer; the helper's request for the
        # level runs beside the leader's preparation (collector.kinds.poplar1.walk), so the helper may have recorded
        # (and answered) level 7 or not yet: the retry resumes either, by the same request's digest
        assert levels_of(pair.leader_db, spec, batch) == {3: ("prepared", True), 7: ("prepared", False)}
        helper_levels = levels_of(pair.helper_db, spec, batch)
        assert helper_levels[3] == ("finished", True) and set(helper_levels) <= {3, 7}, helper_levels
        with open_storage(pair.leader_db) as storage:
            first_share = Poplar1Store(storage).noisy_share((spec.name, spec.fingerprint, batch), 3)
        with pair.server("leader"):
            retried = pair.walk("crashed", batch)
            assert retried.status_code == 200, retried.text
    release = retried.json()
    checked_release(release)
    # level 3 walked again: its counts are the noisy shares drawn before the kill (each aggregator's noise once)
    key = (spec.name, spec.fingerprint, batch)
    with open_storage(pair.leader_db) as storage:
        assert Poplar1Store(storage).noisy_share(key, 3) == first_share
    with open_storage(pair.helper_db) as storage:
        helper_share = Poplar1Store(storage).noisy_share(key, 3)
    assert first_share is not None and helper_share is not None
    modulus = poplar1_for(spec.params.bits).idpf.current_field(3).MODULUS
    assert release["walk"]["levels"][0]["counts"] == [signed(a + b, modulus)
                                                      for a, b in zip(first_share[1], helper_share[1])]


def test_a_helper_killed_after_some_chunks_of_a_level_resumes_them(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    with pair.server("helper", failpoint="poplar1-helper-level-7-chunk-2-aggregated") as helper, \
            pair.server("leader"):
        devices = pair.devices()
        spec = upload(devices, "chunked", values(), tampered=TAMPERED)
        batch = devices.day
        failed = pair.walk("chunked", batch)
        assert failed.status_code == 503, failed.text
        killed(helper)
        key = (spec.name, spec.fingerprint, batch)
        with open_storage(pair.helper_db) as storage:
            level_3 = Poplar1Store(storage).noisy_share(key, 3)
        # killed as it stored chunk 2's sum: chunks 0 to 2 aggregated, the others sketched, the level not finished
        states = chunk_states(pair.helper_db, spec, batch, 7)
        assert len(states) > 3 and states == {chunk: "aggregated" if chunk <= 2 else "sketched" for chunk in states}
        assert levels_of(pair.helper_db, spec, batch) == {3: ("finished", True), 7: ("open", False)}
        with pair.server("helper"):
            chunks = leaders_chunks(pair, spec, batch, 7)
            asked = recorded_prefixes(pair, spec, batch, 7)
            # an aggregated chunk is not recorded again differently, nor is the level finished before its chunks
            assert refusal(helper_level(pair, spec, batch, 7, asked, chunks, chunk=1, drop=1)) == (
                409, "chunk-mismatch", "chunk")
            early = requests.post(pair.helper_url + "/v1/peer/poplar1/levels/finish", timeout=120,
                                  headers={"Authorization": f"Bearer {PEER_TOKEN}"},
                                  json={"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": batch,
                                        "level": 7})
            assert refusal(early) == (409, "level-incomplete", "chunk")
            retried = pair.walk("chunked", batch)
            assert retried.status_code == 200, retried.text
    checked_release(retried.json())
    assert set(chunk_states(pair.helper_db, spec, batch, 7).values()) == {"aggregated"}
    assert levels_of(pair.helper_db, spec, batch) == {level: ("finished", True) for level in (3, 7, 11, 15)}
    with open_storage(pair.helper_db) as storage:
        assert Poplar1Store(storage).noisy_share(key, 3) == level_3  # the helper's noise of level 3 drawn once
