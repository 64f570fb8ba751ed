"""Step 2, the device side and the spec: the "bins" kind owns the spec fields ``bins`` (how many, 2 to 64) and
``per_device`` (the most reports one device makes per campaign, counted in the kind's own device state).  A report
is generalized randomized response over the bins: the true bin with probability e^eps / (e^eps + bins - 1),
quantized down to a multiple of 2**-32 as the project's randomizers do, else one of the others uniformly."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from client_sdk.errors import InvalidValue, SpecError
from client_sdk.frozen import Frozen
from client_sdk.kinds import CampaignKind, DeviceContext, register_kind
from client_sdk.randomness import SecureRandom, bernoulli, exp_rounded, quantize_down
from client_sdk.runtime.status import RecordStatus

NAME = "bins"
MAX_BINS = 64


class BinsParams(Frozen):
    "The kind's parameters: what one report spends, how many bins, how many reports per device"

    __slots__ = _fields = ("epsilon", "bins", "per_device")
    epsilon: float
    bins: int
    per_device: int

    def __init__(self, epsilon: float, bins: int, per_device: int) -> None:
        self._set(epsilon=epsilon, bins=bins, per_device=per_device)


def _integer(data: dict, field: str, low: int, high: int | None, default: int | None = None) -> int:
    value = data.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        raise SpecError(field, f"must be an integer in [{low}, {high}]" if high else f"must be an integer >= {low}")
    return value


def keep_probability(spec: Any) -> Fraction:
    "The probability that a report is its true bin (the estimator's p; each other bin has (1 - p) / (bins - 1))"
    e = Fraction(exp_rounded(spec.epsilon))
    return quantize_down(e / (e + spec.params.bins - 1))


class BinsKind(CampaignKind):
    "Device side of the bins kind"

    name = NAME
    fields = frozenset({"bins", "per_device"})

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> BinsParams:
        epsilon = data.get("epsilon")
        if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool) or not 0.01 <= epsilon <= 20:
            raise SpecError("epsilon", "must be a number in [0.01, 20]")
        return BinsParams(float(epsilon), _integer(data, "bins", 2, MAX_BINS), _integer(data, "per_device", 1, None, 1))

    def identity(self, spec: Any) -> dict:
        return {**super().identity(spec), "bins": spec.params.bins}  # per_device changes no report's meaning

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        return {**out, "bins": spec.params.bins, "per_device": spec.params.per_device}

    def json_schema(self) -> dict:
        return {"type": "object", "required": ["bins"], "properties": {
            "bins": {"type": "integer", "minimum": 2, "maximum": MAX_BINS, "description": "how many bins"},
            "per_device": {"type": "integer", "minimum": 1, "default": 1,
                           "description": "the most reports one device makes to the campaign"}}}

    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        bins = spec.params.bins
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < bins:
            raise InvalidValue(f"campaign {spec.name}: a bin in [0, {bins})")
        state = ctx.state.load()  # {campaign: reports made}, this kind's slot of the device state file
        made = int(state.get(ctx.campaign, 0))
        if made >= spec.params.per_device:
            return RecordStatus.REFUSED_BY_POLICY
        rng = ctx.rng or SecureRandom()
        if bernoulli(rng, keep_probability(spec)):
            reported = value
        else:
            other = rng.randbelow(bins - 1)
            reported = other if other < value else other + 1
        ctx.finish_in_transaction(lambda payload: (ctx.state.save({**state, ctx.campaign: made + 1}), payload)[1])
        return {"bin": reported}


BINS = register_kind(BinsKind())
