"""The leader's walk of a poplar1 batch: level by level, the candidate prefixes are the extensions of the prefixes
the previous level kept, both aggregators prepare the level (``prepare.Poplar1Aggregator``), their noisy shares
add up to each candidate's noisy count, and a prefix is kept when its count reaches ``threshold`` x the batch's
report count lowered by the noise's one-sided margin (``estimators.kinds.poplar1.prune``: a prefix of true count
at the threshold survives the whole walk with probability at least 1 - beta).  The release: every level's
candidates and noisy counts, and the last level's kept prefixes, the heavy hitters
(``estimators.kinds.poplar1.estimate_walk`` adds their intervals).

The helper is reached through :class:`HelperLevels` (its three calls); the leader learns the prefixes it asks
about and their noisy counts, nothing else.  Each step runs on both aggregators at once (the helper's request
from a thread while the leader prepares its own share: the preparation is most of a level's time, so a walk over
two processes takes the time of one aggregator's, not the sum); each still checks the level on its own records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

from estimators.kinds.poplar1.prune import minimum_walk_reports, pruning_rule

from .prepare import Poplar1Aggregator
from .rules import AggParam, Prefix


def signed(value: int, modulus: int) -> int:
    "The field element as the signed integer it encodes"
    value %= modulus
    return value if value <= (modulus - 1) // 2 else value - modulus


class HelperLevels(Protocol):
    "The helper's side of a level: the same three steps as the leader's"

    def round_one(self, batch: str, agg_param: AggParam, reports: Sequence[tuple[bytes, bytes, Any]]) -> dict: ...

    def round_two(self, peer: dict) -> dict: ...

    def finish(self, peer: dict) -> tuple[list[bytes], list[int]]: ...


@dataclass
class LevelRelease:
    "One level of the walk as released: its candidates, their noisy counts, and the reports it aggregated"

    level: int
    prefixes: tuple[Prefix, ...]
    counts: list[int]
    reports: int

    def to_dict(self) -> dict:
        width = self.level + 1
        return {"level": self.level, "reports": self.reports,
                "prefixes": [format(int("".join("1" if b else "0" for b in prefix), 2), f"0{width}b")
                             for prefix in self.prefixes], "counts": self.counts}


@dataclass
class WalkRelease:
    "The whole walk's release"

    batch: str
    reports: int
    threshold_count: float
    keep_count: float
    levels: list[LevelRelease] = field(default_factory=list)
    stopped: dict | None = None  # why the walk ended before its last level with prefixes still kept

    def to_dict(self) -> dict:
        out = {"batch": self.batch, "reports": self.reports, "threshold_count": self.threshold_count,
               "keep_count": self.keep_count, "levels": [level.to_dict() for level in self.levels]}
        return out if self.stopped is None else {**out, "stopped": self.stopped}


def extensions(kept: Sequence[Prefix], stride: int) -> tuple[Prefix, ...]:
    "Every prefix ``stride`` bits longer than a kept one, sorted"
    tails = [tuple(bool(i >> (stride - 1 - j) & 1) for j in range(stride)) for i in range(1 << stride)]
    return tuple(sorted(prefix + tail for prefix in kept for tail in tails))


Ours = TypeVar("Ours")
Theirs = TypeVar("Theirs")


def both(background: ThreadPoolExecutor, helper_step: Callable[[], Theirs],
         leader_step: Callable[[], Ours]) -> tuple[Ours, Theirs]:
    "The leader's and the helper's results of one step, the helper's run in ``background`` meanwhile"
    theirs: Future[Theirs] = background.submit(helper_step)
    try:
        ours = leader_step()
    except BaseException:
        wait([theirs])  # the helper's answer is not needed: never leave its request running past the walk
        raise
    return ours, theirs.result()


def walk(leader: Poplar1Aggregator, helper: HelperLevels, batch: str,
         reports: Sequence[tuple[bytes, bytes, Any, Any]]) -> WalkRelease:
    """Walk ``batch``'s reports, each (report id, public share, the leader's share, the helper's sealed share),
    over the spec's levels; stops early when a level keeps no prefix, or after the first level when the reports it
    accepted are fewer than ``minimum_walk_reports`` (the noise's candidates would multiply level by level: a batch
    padded with reports the aggregators reject passes the leader's check of the batch's size, not this one)"""
    params = leader.params
    kept: tuple[Prefix, ...] = ((),)
    ids = {report_id for report_id, _, _, _ in reports}
    current = list(reports)
    release: WalkRelease | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="poplar1-helper") as background:
        for level in params.levels:
            prefixes = extensions(kept, params.stride)
            agg_param = (level, prefixes)
            ours, theirs = both(background,
                                partial(helper.round_one, batch, agg_param, [(r, p, h) for r, p, _, h in current]),
                                partial(leader.round_one, batch, agg_param, [(r, p, s) for r, p, s, _ in current]))
            leader_second, helper_second = both(background, partial(helper.round_two, ours),
                                                partial(leader.round_two, theirs))
            (accepted, leader_share), (helper_accepted, helper_share) = both(
                background, partial(helper.finish, leader_second), partial(leader.finish, helper_second))
            if set(accepted) != set(helper_accepted):
                raise ValueError("the aggregators accepted different reports")
            modulus = leader.vdaf.idpf.current_field(level).MODULUS
            counts = [signed(a + b, modulus) for a, b in zip(leader_share, helper_share)]
            if release is None:
                rule = pruning_rule(leader.spec.epsilon, float(leader.spec.delta or 0.0), len(params.levels),
                                    params.threshold, len(accepted))
                release = WalkRelease(batch, len(accepted), rule.threshold_count, rule.keep_count)
                needed = minimum_walk_reports(leader.spec.epsilon, float(leader.spec.delta or 0.0),
                                              len(params.levels), params.threshold, params.stride)
                if len(accepted) < needed:
                    release.stopped = {"reason": "too_few_reports", "accepted": len(accepted), "needed": needed}
            release.levels.append(LevelRelease(level, prefixes, counts, len(accepted)))
            kept = tuple(prefix for prefix, count in zip(prefixes, counts) if rule.keeps(count))
            if release.stopped is not None:
                break
            accepted_ids = set(accepted)
            current = [report for report in current if report[0] in accepted_ids and report[0] in ids]
            if not kept:
                break
    assert release is not None, "a walk has at least one level"
    return release
