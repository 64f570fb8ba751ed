"""A dishonest leader driving a real helper process (a direct HTTP client acting as the leader, ``peerkit``) through
a level's chunks, SQLite and PostgreSQL: the helper refuses, on its own records, a report in two chunks of a level,
a finish before every chunk is in, a chunk of a lower level after a higher one, a chunk unlike the one recorded at
its position, and a level below ``min_batch`` over all its chunks; a finish asked twice releases the level's noisy
counts once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.collector.distributed.test_e2e_devices import Aggregators, on_backend
from tests.collector.helpers import BACKENDS

from .peerkit import ActingLeader
from .test_processes import SPEC, refusal, upload, values

FIRST = ["0000", "0001", "0010", "0011", "0100", "0101", "0110", "0111", "1000", "1001", "1010", "1011", "1100",
         "1101", "1110", "1111"]  # level 3: every 4-bit prefix
MIN_BATCH = int(SPEC["min_batch"])


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    with on_backend(request, tmp_path_factory.mktemp("poplar1-chunks"), "p1chunks") as running:
        yield running


def acting(servers: Aggregators, name: str) -> ActingLeader:
    "A new campaign with the usual devices' reports, and a leader of its batch acting on its own"
    spec = upload(servers, name, values())
    return ActingLeader(servers.leader_db, servers.helper_url, spec, servers.day)


def test_a_report_in_two_chunks_of_a_level_is_refused(servers: Aggregators) -> None:
    leader = acting(servers, "twice")
    rows = leader.rows
    assert leader.init(3, FIRST, 0, 2, rows[:60]).status_code == 200
    replayed = leader.init(3, FIRST, 1, 2, rows[60:120] + rows[:1])
    assert refusal(replayed) == (409, "report-repeated", "reports")
    assert leader.init(3, FIRST, 1, 2, rows[60:120]).status_code == 200  # the refused chunk recorded nothing


def test_a_finish_before_every_chunk_is_in_is_refused(servers: Aggregators) -> None:
    leader = acting(servers, "early")
    rows = leader.rows
    thirds = [rows[:60], rows[60:120], rows[120:]]
    for chunk in (0, 1):
        leader.whole_chunk(3, FIRST, chunk, 3, thirds[chunk])
    assert refusal(leader.post("finish", leader.finish_body(3))) == (409, "level-incomplete", "chunk")
    assert leader.init(3, FIRST, 2, 3, thirds[2]).status_code == 200  # recorded, not aggregated: still refused
    assert refusal(leader.post("finish", leader.finish_body(3))) == (409, "level-incomplete", "chunk")
    for step, body in (("sketch", leader.sketch_body(3, 2)), ("aggregate", leader.aggregate_body(3, 2))):
        assert leader.post(step, body).status_code == 200
    finished = leader.post("finish", leader.finish_body(3))
    assert finished.status_code == 200 and finished.json()["report_count"] == len(rows)


def test_a_finish_asked_twice_releases_the_levels_noisy_counts_once(servers: Aggregators) -> None:
    leader = acting(servers, "again")
    rows = leader.rows
    for chunk, part in enumerate((rows[:100], rows[100:])):
        leader.whole_chunk(3, FIRST, chunk, 2, part)
    first = leader.post("finish", leader.finish_body(3))
    second = leader.post("finish", leader.finish_body(3))
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()  # the stored answer: no second noise draw to average with the first


def test_a_chunk_of_a_lower_level_after_a_higher_one_is_refused(servers: Aggregators) -> None:
    leader = acting(servers, "reordered")
    rows = leader.rows
    assert leader.init(3, FIRST, 0, 2, rows[:100]).status_code == 200
    assert leader.init(7, ["00100000", "00100001"], 0, 1, rows).status_code == 200
    assert refusal(leader.init(3, FIRST, 1, 2, rows[100:])) == (409, "level-not-increasing", "level")


def test_a_chunk_unlike_the_one_recorded_at_its_position_or_count_is_refused(servers: Aggregators) -> None:
    leader = acting(servers, "unlike")
    rows = leader.rows
    first = leader.init(3, FIRST, 0, 2, rows[:100])
    assert first.status_code == 200
    assert leader.init(3, FIRST, 0, 2, rows[:100]).json() == first.json()  # the same chunk again: its answer
    assert refusal(leader.init(3, FIRST, 0, 2, rows[:99])) == (409, "chunk-mismatch", "chunk")
    assert refusal(leader.init(3, FIRST, 1, 3, rows[100:])) == (409, "chunk-mismatch", "chunk")
    assert refusal(leader.init(3, FIRST, 2, 2, rows[100:])) == (409, "chunk-mismatch", "chunk")
    assert refusal(leader.init(3, FIRST[:8], 1, 2, rows[100:])) == (409, "level-not-increasing", "level")


def test_min_batch_is_counted_over_the_whole_level(servers: Aggregators) -> None:
    short = acting(servers, "short")
    half = MIN_BATCH // 2
    assert short.init(3, FIRST, 0, 2, short.rows[:half]).status_code == 200
    # the level's last chunk would leave it below min_batch: refused, though each chunk alone may be small
    assert refusal(short.init(3, FIRST, 1, 2, short.rows[half:MIN_BATCH - 1])) == (409, "batch-too-small",
                                                                                   "reports")
    enough = acting(servers, "enough")
    for chunk, part in enumerate((enough.rows[:half], enough.rows[half:MIN_BATCH])):
        enough.whole_chunk(3, FIRST, chunk, 2, part)
    finished = enough.post("finish", enough.finish_body(3))
    assert finished.status_code == 200 and finished.json()["report_count"] == MIN_BATCH
