"""A batch's window on an aggregator's own clock, for the leader and the helper alike: a batch (the spec's
``window``: a UTC day by default, or minutes or hours) takes reports until its end plus the collection grace
(``COLLECT_GRACE``: reports devices queued late in the batch, or sent by devices that were offline), and is
collected only after that (before: ``batch-open``)."""

from __future__ import annotations

from client_sdk.spec_prio3 import Prio3Params


def batch_closes(params: Prio3Params, batch: str, grace: float) -> float:
    "The POSIX time at which ``batch`` closes: its end plus ``grace``; ValueError if it is no batch of the window"
    return params.batch_end(batch) + grace


def still_open(params: Prio3Params, batch: str, *, now: float, grace: float, role: str) -> str | None:
    """Why ``batch`` cannot be collected at ``now``, saying when to come back (``role``: whose clock, for the
    message), or None once it has closed; ValueError if it is no batch of the window"""
    closes = batch_closes(params, batch, grace)
    if now >= closes:
        return None
    length = "UTC day" if params.window == "day" else f"{params.window} batch"
    return (f"batch {batch} is still open on the {role}'s clock: it takes reports until the end of that {length} "
            f"plus a grace of {grace:g} s (COLLECT_GRACE) for reports devices queued in it; collect it in "
            f"{int(closes - now) + 1} s")
