"""What each aggregator enforces on its own records before it prepares a level of a poplar1 walk.

For one batch, a level request (level, candidate prefixes, report ids) is refused unless:

- the level is one of the spec's walk levels (``Poplar1Params.levels``) and higher than every level this
  aggregator prepared for the batch before (levels strictly increasing: the draft's validity rule for a sequence
  of aggregation parameters, ``Poplar1.is_valid``), so a batch is walked over at most ``bits / stride`` levels,
  the number the noise is calibrated for;
- the prefixes are distinct, sorted, of ``level + 1`` bits, and each extends a prefix asked for at the previous
  level (``Poplar1.is_valid``);
- the report ids are distinct (a report at most once per level) and at least ``min_batch``.

The helper takes a level's reports in chunks (``levels.Chunking``): the level is declared with the candidate
prefixes and its number of chunks by its first chunk, each later chunk must repeat both, name a position of its own
and carry no report of another chunk of the level, and a new chunk is refused once a higher level is recorded;
``min_batch`` is counted over the whole level, when its last chunk is recorded and again at its finish, which
needs every chunk in (``check_chunk``).

The record is the aggregator's own (``LevelRecords``): nothing the peer says moves it.  A refused request
prepares nothing and records nothing.  A level recorded in a database is recorded with its request's digest: the
very same request resumes it (``levels.StoredAggregator``: its answers are the first run's), any other one for
that level is refused here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from client_sdk.errors import LDPError
from client_sdk.kinds.poplar1.params import Poplar1Params


class LevelRefusal(str, Enum):
    "Why an aggregator refuses a level (the problem type of its answer, and the counter's key)"

    LEVEL_NOT_IN_WALK = "level-not-in-walk"
    LEVEL_NOT_INCREASING = "level-not-increasing"
    PREFIXES_INVALID = "prefixes-invalid"
    REPORT_REPEATED = "report-repeated"
    BATCH_TOO_SMALL = "batch-too-small"
    CHUNK_MISMATCH = "chunk-mismatch"
    LEVEL_INCOMPLETE = "level-incomplete"

    def __str__(self) -> str:
        return self.value


class LevelRefused(LDPError):
    "A level request this aggregator refuses: its reason (LevelRefusal) and detail"

    def __init__(self, reason: LevelRefusal, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


Prefix = tuple[bool, ...]
AggParam = tuple[int, tuple[Prefix, ...]]


@dataclass
class LevelRecords:
    "One aggregator's record of the aggregation parameters it prepared, per batch (in order)"

    prepared: dict[str, list[AggParam]] = field(default_factory=dict)

    def history(self, batch: str) -> list[AggParam]:
        return list(self.prepared.get(batch, []))

    def record(self, batch: str, agg_param: AggParam) -> None:
        self.prepared.setdefault(batch, []).append(agg_param)


def check_agg_param(vdaf: object, params: Poplar1Params, history: Sequence[AggParam], agg_param: AggParam) -> None:
    "Raise LevelRefused unless a new level ``agg_param`` may follow ``history`` (the module docstring)"
    level, prefixes = agg_param
    if level not in params.levels:
        raise LevelRefused(LevelRefusal.LEVEL_NOT_IN_WALK, f"level {level} is not one of the walk's {params.levels}")
    if history and level <= history[-1][0]:
        raise LevelRefused(LevelRefusal.LEVEL_NOT_INCREASING,
                           f"level {level} after level {history[-1][0]}: levels must strictly increase")
    if not prefixes or any(len(prefix) != level + 1 for prefix in prefixes):
        raise LevelRefused(LevelRefusal.PREFIXES_INVALID, f"each prefix must have {level + 1} bits")
    if not vdaf.is_valid(agg_param, list(history)):  # type: ignore[attr-defined]
        raise LevelRefused(LevelRefusal.PREFIXES_INVALID,
                           "prefixes must be distinct, sorted, and extend the previous level's")


def check_distinct(report_ids: Sequence[bytes]) -> None:
    if len(set(report_ids)) != len(report_ids):
        raise LevelRefused(LevelRefusal.REPORT_REPEATED, "a report appears twice in the level")


def check_min_batch(params: Poplar1Params, reports: int, what: str = "reports") -> None:
    if reports < params.min_batch:
        raise LevelRefused(LevelRefusal.BATCH_TOO_SMALL, f"{reports} {what}, below min_batch = {params.min_batch}")


def check_level(vdaf: object, params: Poplar1Params, history: Sequence[AggParam], agg_param: AggParam,
                report_ids: Sequence[bytes]) -> None:
    "Raise LevelRefused unless ``agg_param`` over ``report_ids`` may follow ``history`` (the module docstring)"
    check_agg_param(vdaf, params, history, agg_param)
    check_distinct(report_ids)
    check_min_batch(params, len(report_ids))


@dataclass(frozen=True)
class RecordedLevel:
    "A level as the helper recorded it from its first chunk: its parameter and its number of chunks"

    agg_param: AggParam
    chunks: int


def check_declared(recorded: RecordedLevel, agg_param: AggParam, chunks: int) -> None:
    "Raise LevelRefused unless a chunk declares the ``recorded`` level as its first chunk did"
    level = agg_param[0]
    if recorded.agg_param != agg_param:
        raise LevelRefused(LevelRefusal.LEVEL_NOT_INCREASING, f"level {level} was prepared for other prefixes")
    if chunks != recorded.chunks:
        raise LevelRefused(LevelRefusal.CHUNK_MISMATCH, f"level {level} was declared with {recorded.chunks} chunks")


def check_chunk(history: Sequence[AggParam], level: int, chunk: int, chunks: int) -> None:
    "Raise LevelRefused unless a new chunk (``chunk`` of ``chunks``) may join the recorded ``level``"
    if history and history[-1][0] > level:
        raise LevelRefused(LevelRefusal.LEVEL_NOT_INCREASING,
                           f"a chunk of level {level} after level {history[-1][0]}: levels must strictly increase")
    check_position(chunk, chunks)


def check_position(chunk: int, chunks: int) -> None:
    if not 0 <= chunk < chunks:
        raise LevelRefused(LevelRefusal.CHUNK_MISMATCH, f"chunk {chunk} is not one of the level's {chunks}")
