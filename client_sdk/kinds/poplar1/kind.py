"""The poplar1 kind, device side: a string secret-shared as Poplar1's IDPF and sealed to the two aggregators
through the distributed envelope of a Prio3 report (``client_sdk.distributed.seal_report``).

Its identity is the parameters' with the trust model, epsilon and delta (each level's noise is calibrated from
them); a report's batch is a UTC day, and the ledger charges (epsilon, delta) once per batch: the whole walk over
the batch, every level of it, is what the aggregators' noise protects (``estimators.kinds.poplar1``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...clock import utc_day
from ...errors import InvalidValue, InvalidValueType, SpecError, UnsupportedSpec
from ..base import CampaignKind, register_kind
from .limits import FIELDS, KIND_NAME

# Function-level imports: the parameters, Poplar1 and HPKE load when a spec is parsed or a report made, not when
# client_sdk.kinds registers the kind at start-up.

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from ..context import DeviceContext
    from .params import Poplar1Params


class Poplar1Kind(CampaignKind):
    "Frequent strings found by a Poplar1 prefix-tree walk of a leader and a helper, each level noised by both"

    name = KIND_NAME
    trust_models = ("distributed",)
    fields = FIELDS - {"trust"}

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> Poplar1Params:
        from .params import params_from_dict

        return params_from_dict(data, envelope["delta"])

    def identity(self, spec: Any) -> dict:
        return {**spec.params.identity(), "trust": spec.trust, "epsilon": spec.epsilon, "delta": spec.delta}

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        params: Poplar1Params = spec.params
        out.pop("noise", None)  # part of the identity, not a field
        out.update(params.to_dict())
        if derived:
            out["derived"] = {"levels": list(params.levels), "bytes": params.length}
        return out

    def json_schema(self) -> dict:
        from .params import json_schema

        return json_schema()

    def batch_of(self, spec: Any, now: float) -> str | None:
        return utc_day(now)

    def ledger_charge(self, spec: Any, ctx: DeviceContext | None = None) -> tuple[float, float]:
        "The whole collection's (epsilon, delta), once per batch"
        return float(spec.epsilon), float(spec.delta or 0.0)

    def aggregators_of(self, listing: Mapping[str, Any]) -> Any:
        return listing.get("aggregators")

    def wants_sealing_configs(self, spec: Any) -> bool:
        return True

    def require_randomizer(self, spec: Any) -> None:
        raise SpecError("kind", f"campaign {spec.name!r} is a poplar1 campaign: it has no local randomizer "
                                "(client_sdk.distributed.seal_report makes its reports)")

    def vdaf_of(self, spec: Any) -> Any:
        "The campaign's Poplar1 instance (memoized per input length)"
        from .device import poplar1_for

        return poplar1_for(spec.params.bits)

    def measurement_of(self, spec: Any, value: Any) -> Any:
        from .params import encode_value

        return encode_value(spec.params, value)

    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        "The string sharded and sealed to the leader and the helper, or the status saying why not"
        assert ctx.batch is not None  # batch_of gives one
        try:
            from ... import distributed  # here: Poplar1 and HPKE only for a distributed campaign

            configs = ctx.sealing_configs()
            if not isinstance(configs, tuple):
                return configs
        except SpecError as exc:
            raise UnsupportedSpec(f"campaign {ctx.campaign!r}: {exc}") from None
        except ImportError as exc:  # no `distributed` extra on this device
            raise UnsupportedSpec(f"campaign {ctx.campaign!r} is distributed: {exc}") from None
        try:
            return distributed.seal_report(spec, value, *configs, report_id=ctx.report_id, batch=ctx.batch)
        except distributed.SealError as exc:
            raise UnsupportedSpec(f"campaign {ctx.campaign!r}: {exc}") from None
        except TypeError as exc:
            raise InvalidValueType(str(exc)) from None
        except ValueError as exc:
            raise InvalidValue(str(exc)) from None


POPLAR1 = register_kind(Poplar1Kind())
