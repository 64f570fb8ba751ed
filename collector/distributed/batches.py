"""A batch's window on an aggregator's own clock, for the leader and the helper alike: a batch (the spec's
``window``: a UTC day by default, or minutes or hours) takes reports until its end plus the collection grace
(``COLLECT_GRACE``: reports devices queued late in the batch, or sent by devices that were offline), and is
collected only after that (before: ``batch-open``)."""

from __future__ import annotations

from client_sdk.spec_prio3 import Prio3Params


class BatchOpen(Exception):
    "The batch's window (its end plus the grace) has not ended on this aggregator's clock"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def batch_closes(params: Prio3Params, batch: str, grace: float) -> float:
    "The POSIX time at which ``batch`` closes: its end plus ``grace``; ValueError if it is no batch of the window"
    return params.batch_end(batch) + grace


def check_closed(params: Prio3Params, batch: str, *, now: float, grace: float, role: str) -> None:
    "BatchOpen, saying when to come back, unless ``batch`` closed at ``now`` (``role``: whose clock, in the message)"
    closes = batch_closes(params, batch, grace)
    if now < closes:
        length = "UTC day" if params.window == "day" else f"{params.window} batch"
        raise BatchOpen(f"batch {batch} is still open on the {role}'s clock: it takes reports until the end of that "
                        f"{length} plus a grace of {grace:g} s (COLLECT_GRACE) for reports devices queued in it; "
                        f"collect it in {int(closes - now) + 1} s")
