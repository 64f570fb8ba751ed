"""The quantiles campaign kind, device side: the spec's parameters (:mod:`.params`) and reports (:mod:`.device`)
behind the :class:`~client_sdk.kinds.base.CampaignKind` interface.

A quantiles spec names ``"kind": "quantiles"``; its trust model is ``local`` (each report is epsilon-LDP on its
own, as a local campaign's).  Its identity holds the kind, trust model and epsilon with every parameter the
reports depend on (the resolved branching factor among them), so a fingerprint changes with the tree.  The
device counts the values it clamped into the range in the kind's own state slot (``ctx.state``, never sent: see
:mod:`.device` on why a clamp flag would leak)."""

from __future__ import annotations

from ...errors import InvalidValueType, SpecError
from ...spec_fields import validate_epsilon
from ..base import CampaignKind, register_kind
from ..prio3 import PRIO3
from .params import FIELDS, KIND_NAME, PRIO3_FIELDS, QuantilesParams, json_schema, parse_params, with_prio3

# Function-level imports: .device builds each level's oracle from a local spec (client_sdk.spec, which imports
# this package), so it is imported when a report is made, after the spec module finished loading.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from ..context import DeviceContext


class QuantilesKind(CampaignKind):
    "A bounded number's distribution as a hierarchical histogram: one level's node per report, at the full epsilon"

    name = KIND_NAME
    trust_models = ("local", "distributed")
    fields = FIELDS | PRIO3_FIELDS

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> QuantilesParams:
        if envelope["trust"] != "distributed":
            for member in sorted(PRIO3_FIELDS & set(data)):
                raise SpecError(member, "only allowed with trust 'distributed'")
            return parse_params(data, validate_epsilon(data.get("epsilon")))
        local = {key: value for key, value in data.items() if key not in ("branching", "oracle")}
        return with_prio3(parse_params(local, validate_epsilon(data.get("epsilon"))), data, envelope["delta"])

    def identity(self, spec: Any) -> dict:
        """kind, trust and epsilon (CampaignKind's) with the range, bucketing and tree; distributed: the Prio3
        circuit, noise and batch rules, and delta (the aggregators' noise is calibrated from epsilon and delta)"""
        out = {**super().identity(spec), **spec.params.identity()}
        if spec.prio3 is not None and spec.delta is not None:
            out["delta"] = spec.delta
        return out

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        shown = spec.params.to_dict()
        for member in set(spec.params.identity()) - set(shown):  # geometric: buckets is derived, not an input
            out.pop(member, None)
        out.update(shown)
        if derived:
            out["derived"] = spec.params.derived()
        return out

    def json_schema(self) -> dict:
        return json_schema()

    # -- trust "distributed": the prio3 kind's batches, ledger and sealing, with this kind's measurement ---------
    def batch_of(self, spec: Any, now: float) -> str | None:
        return PRIO3.batch_of(spec, now) if spec.prio3 is not None else None

    def report_period(self, spec: Any) -> float:
        return PRIO3.report_period(spec) if spec.prio3 is not None else super().report_period(spec)

    def ledger_charge(self, spec: Any, ctx: DeviceContext | None = None) -> tuple[float, float]:
        return PRIO3.ledger_charge(spec, ctx) if spec.prio3 is not None else super().ledger_charge(spec, ctx)

    def aggregators_of(self, listing: Any) -> Any:
        return listing.get("aggregators")  # a local campaign's listing has none

    def wants_sealing_configs(self, spec: Any) -> bool:
        return spec.prio3 is not None

    def prio3_measurement(self, spec: Any, value: Any) -> object:
        "The clamped value's bucket (``device.prio3_measurement``): a Prio3 histogram's index"
        from .device import prio3_measurement

        if spec.prio3 is None:
            return super().prio3_measurement(spec, value)
        try:
            return prio3_measurement(spec.params, value)
        except TypeError as exc:
            raise TypeError(f"campaign {spec.name!r}: {exc}") from None

    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        """``[level, oracle payload]`` (:func:`.device.make_report`); a value outside the range is clamped and
        counted in ``ctx.state`` (saved in the record's transaction, so a report the ledger refuses counts none)"""
        from ...randomness import SECURE_RANDOM
        from .device import CLAMPED, clamp, make_report

        state = ctx.state.load()
        before = int(state.get(CLAMPED, 0))
        try:
            if spec.prio3 is not None:  # the bucket sharded and sealed to the aggregators (prio3_measurement)
                if clamp(spec.params, value)[1]:
                    state[CLAMPED] = before + 1
                payload = PRIO3.make_report(ctx, spec, value)
            else:
                payload = make_report(ctx.rng if ctx.rng is not None else SECURE_RANDOM, spec.params, value, state)
        except TypeError as exc:  # not a number (InvalidValue, NaN, passes through)
            raise InvalidValueType(f"campaign {spec.name!r}: {exc}") from None
        if int(state.get(CLAMPED, 0)) != before:
            def save_clamps(made: Any) -> Any:
                ctx.state.save(state)
                return made

            ctx.finish_in_transaction(save_clamps)
        return payload


QUANTILES = register_kind(QuantilesKind())
