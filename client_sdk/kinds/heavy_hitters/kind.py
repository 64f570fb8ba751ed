"""The heavy_hitters campaign kind, device side: a spec's parameters (``params``) and one report per string
(``device.make_report``), from the device's CSPRNG.

A string the campaign refuses (too long with overflow "refuse", not UTF-8, a character outside the alphabet, not
a string) raises ``InvalidValue`` / ``InvalidValueType`` from ``Client.record``, as a value outside a local
campaign's domain does: nothing is charged, nothing queued.  Its identity is the parameters' (with ``kind``), the
trust model and epsilon; the ledger charges epsilon per report, and the report policy applies as for every kind.
"""

from __future__ import annotations

from ...randomness import SECURE_RANDOM
from ..base import CampaignKind, register_kind
from .limits import FIELDS, KIND_NAME, PEM_FIELDS, SFP_FIELDS

# Function-level imports: the parameters and reports (which hash with client_sdk.mechanisms, whose package imports
# client_sdk.spec and so this one) are imported when a spec is parsed or a report made, after both finished loading.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from ..context import DeviceContext
    from .params import HeavyHittersParams


class HeavyHittersKind(CampaignKind):
    "Frequent strings of an unknown dictionary (PEM or SFP), each report epsilon-LDP for the whole string"

    name = KIND_NAME
    trust_models = ("local",)
    fields = FIELDS

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> HeavyHittersParams:
        from .params import params_from_dict

        return params_from_dict(data, data.get("epsilon"))

    def identity(self, spec: Any) -> dict:
        "The parameters that change what a report means (the resolved algorithm's), the trust model and epsilon"
        return {**spec.params.identity(), "trust": spec.trust, "epsilon": spec.epsilon}

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        "The fields as given (``algorithm`` as requested); ``derived``: the resolved algorithm and its fields"
        params: HeavyHittersParams = spec.params
        for key in params.identity():
            if key != "kind":
                out.pop(key, None)
        out.update(params.to_dict())
        if derived:
            chosen = PEM_FIELDS if params.algorithm == "pem" else SFP_FIELDS
            out["derived"] = {"algorithm": params.algorithm, "groups": params.groups,
                              "estimation_group": params.estimation_group,
                              **{key: getattr(params, key) for key in chosen}}
        return out

    def json_schema(self) -> dict:
        from .params import json_schema

        return json_schema()

    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        "The payload (the report's cell, ``device.report_cell``); InvalidValue(Type) for a refused string"
        from .device import make_report

        return make_report(ctx.rng if ctx.rng is not None else SECURE_RANDOM, spec.params, value)


HEAVY_HITTERS = register_kind(HeavyHittersKind())
