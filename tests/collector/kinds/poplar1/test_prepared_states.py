"""The helper's in-process preparation states (``helper.PreparedStates``): a chunk's next step reuses the state
this process stored only while the stored row is as it left it; otherwise the stored copy is decoded."""

from __future__ import annotations

from collector.kinds.poplar1.helper import PreparedStates
from collector.kinds.poplar1.prepare import LevelState
from collector.kinds.poplar1.store import ChunkRow

WHERE = (("campaign", "fingerprint", "2026-12-03"), 7, 0)


def row(state: str = "prepared", request: str = "r1", answers: dict | None = None) -> ChunkRow:
    answers = {"levels": {"digest": "d1", "answer": {}}} if answers is None else answers
    return ChunkRow(state, request, 10, {"states": {}}, answers, None)


def test_a_state_is_reused_once_and_only_for_the_row_it_was_stored_with():
    prepared, state = PreparedStates(), LevelState("2026-12-03", (7, ((False,) * 8,)))
    prepared.put(WHERE, row(), state)
    assert prepared.take(WHERE, row()) is state
    assert prepared.take(WHERE, row()) is None  # taken: a twin request decodes the stored copy
    for other in (row(state="sketched"), row(request="r2"), row(answers={"levels": {"digest": "d2", "answer": {}}}),
                  row(answers={"levels": {"digest": "d1", "answer": {}}, "sketch": {"digest": "d3", "answer": {}}})):
        prepared.put(WHERE, row(), state)
        assert prepared.take(WHERE, other) is None
        assert prepared.take(WHERE, row()) is None  # a mismatch drops the entry


def test_only_the_last_chunks_are_kept():
    prepared = PreparedStates(chunks=2)
    states = [LevelState("2026-12-03", (7, ())) for _ in range(3)]
    for chunk, state in enumerate(states):
        prepared.put((*WHERE[:2], chunk), row(), state)
    assert prepared.take((*WHERE[:2], 0), row()) is None
    assert [prepared.take((*WHERE[:2], chunk), row()) for chunk in (1, 2)] == states[1:]
