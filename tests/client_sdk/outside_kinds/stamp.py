"""An outside campaign kind (registered by LDP_TELEMETRY_KINDS, not by the project): "stamp" reports a label of
its own spec field, and counts in its own device state how many reports this device made."""

from __future__ import annotations

from typing import Any

from client_sdk.errors import SpecError
from client_sdk.frozen import Frozen
from client_sdk.kinds import CampaignKind, register_kind


class StampParams(Frozen):
    __slots__ = _fields = ("epsilon", "label")
    epsilon: float
    label: str

    def __init__(self, epsilon: float, label: str) -> None:
        self._set(epsilon=epsilon, label=label)


class StampKind(CampaignKind):
    name = "stamp"
    fields = frozenset({"label"})

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> StampParams:
        label = data.get("label")
        if not isinstance(label, str) or not label:
            raise SpecError("label", "must be a non-empty string")
        epsilon = data.get("epsilon")
        if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool) or not epsilon > 0:
            raise SpecError("epsilon", "must be a positive number")
        return StampParams(float(epsilon), label)

    def identity(self, spec: Any) -> dict:
        return {**super().identity(spec), "label": spec.params.label}

    def json_schema(self) -> dict:
        return {"type": "object", "properties": {"label": {"type": "string", "minLength": 1}}, "required": ["label"]}

    def make_report(self, ctx: Any, spec: Any, value: Any) -> Any:
        state = ctx.state.load()
        state["made"] = state.get("made", 0) + 1
        ctx.finish_in_transaction(lambda payload: (ctx.state.save(state), payload)[1])
        return {"label": spec.params.label, "seq": state["made"]}


STAMP = register_kind(StampKind())
