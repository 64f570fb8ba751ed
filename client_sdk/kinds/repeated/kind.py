"""The repeated-collection kind, device side: the ``CampaignKind`` a spec with ``"kind": "repeated"`` names.

A device's state for every repeated campaign lives in the kind's slot of the device state file (``ctx.state``), one
entry per campaign name (:mod:`.device` describes an entry).  An entry is drawn on first use, so a state file from
before the kind existed simply has none yet.  Each report is made from a copy of the entry; in the record's
transaction the kind reads the entry again (another client on the same directory may have written it since: the
report is then made again from that one), the ledger charges epsilon only when the report memoized a new answer
(:meth:`RepeatedKind.ledger_charge`), and the entry is saved with the report that used it.  One report per period:
the batch is the period's label, so the ledger refuses a second one and a clock set back.
"""

from __future__ import annotations

import copy

from ...randomness import SecureRandom
from ..base import CampaignKind, register_kind
from . import device
from .codec import encode_report
from .params import FIELDS, KIND_NAME, RepeatedParams, json_schema, parse_params, to_dict
from .periods import period_of, period_start

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from ..context import DeviceContext


class RepeatedKind(CampaignKind):
    "Repeated collection (1BitMean, dBitFlip): memoized answers, one report per period, epsilon per new answer"

    name = KIND_NAME
    trust_models = ("local",)
    fields = FIELDS

    # -- the spec -------------------------------------------------------------------------------------------------
    def parse_params(self, data: dict, envelope: dict[str, Any]) -> RepeatedParams:
        return parse_params(data)

    def identity(self, spec: Any) -> dict:
        "``kind``, ``trust``, ``epsilon`` and every field of the kind"
        return {**super().identity(spec), **to_dict(spec.params)}

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        if derived:
            params: RepeatedParams = spec.params
            p, q = params.sent_probabilities()
            out["derived"] = {"p": p, "q": q, "answer_limit": params.answer_limit(),
                              "lifetime_epsilon": params.lifetime_epsilon(), "period_seconds": params.period_seconds}
        return out

    def json_schema(self) -> dict:
        return json_schema()

    # -- the device -----------------------------------------------------------------------------------------------
    def batch_of(self, spec: Any, now: float) -> str | None:
        "The period's label: the ledger takes one report per period, and periods only move forward"
        return period_of(spec.params, now)

    def report_period(self, spec: Any) -> float:
        return float(spec.params.period_seconds)

    def period_origin(self, spec: Any) -> float:
        "The start of the period holding the epoch: the weeks' cap starts on Mondays, as their labels do"
        return float(period_start(spec.params, 0))

    def ledger_charge(self, spec: Any, ctx: DeviceContext | None = None) -> tuple[float, float]:
        "epsilon when this report memoized a new answer, nothing when it reuses one (the guarantee's point 2)"
        if ctx is None or "payload" not in ctx.notes:
            return float(spec.epsilon), 0.0
        stored = _entry(ctx, spec)
        if stored != ctx.notes["start"]:  # another client on this directory saved this campaign's state since
            self._draw(ctx, spec, stored, ctx.notes["value"])
        return (float(spec.epsilon) if ctx.notes["new_answer"] else 0.0), 0.0

    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        device.clamped_fraction(spec.params, value)  # InvalidValue(Type) before anything is drawn
        self._draw(ctx, spec, _entry(ctx, spec), value)
        ctx.finish_in_transaction(lambda payload: self._save(ctx, spec))
        return ctx.notes["payload"]

    def _draw(self, ctx: DeviceContext, spec: Any, start: dict, value: Any) -> None:
        entry = copy.deepcopy(start)  # a damaged one: DeviceStateError (a STATE_ERROR; nothing is redrawn)
        answer, new_answer = device.make_report(ctx.rng or SecureRandom(), spec.params, entry, value)
        assert ctx.batch is not None  # batch_of gives one: the period's label
        payload = encode_report(ctx.batch, answer)
        ctx.notes.update(start=start, entry=entry, payload=payload, new_answer=new_answer, value=value)

    def _save(self, ctx: DeviceContext, spec: Any) -> Any:
        "Save the campaign's state with the report (in the record's transaction, after the ledger said yes)"
        slot = ctx.state.load()
        slot[spec.name] = ctx.notes["entry"]
        ctx.state.save(slot)
        return ctx.notes["payload"]


def _entry(ctx: DeviceContext, spec: Any) -> dict:
    "The campaign's state in the kind's slot (empty when the device has none yet)"
    entry = ctx.state.load().get(spec.name)
    return entry if isinstance(entry, dict) else {}


REPEATED = register_kind(RepeatedKind())
