"""The prio3 kind, device side: each report is the value sharded with Prio3 and sealed to two aggregators.

Its parameters are ``client_sdk.spec_prio3``'s (validated by ``prio3_from_dict``), held with the campaign's epsilon
and domain in :class:`Prio3SpecParams`.  Its specs have ``trust: "distributed"`` (a spec without ``kind`` naming that
trust model is a prio3 one), and their identity keeps that member.  The ledger charges (epsilon, delta) once per
batch (the spec's ``window``: a UTC day by default), and the batch is the campaign's period: the batch's release is
what the aggregators' noise protects."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InvalidValue, InvalidValueType, SpecError, UnsupportedSpec
from ..spec_prio3 import DISTRIBUTED_FIELDS, Prio3SpecParams, prio3_from_dict
from .base import CampaignKind, register_kind

# Function-level imports: client_sdk.distributed (Prio3, HPKE) only when a prio3 report is made, and the limits
# of the JSON Schema only when it is asked for.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .context import DeviceContext

PRIO3_FIELDS = frozenset({"mechanism", "domain", *DISTRIBUTED_FIELDS}) - {"trust"}


class Prio3Kind(CampaignKind):
    "Prio3 aggregated by a leader and a helper, noised by them (or by the devices' coins)"

    name = "prio3"
    trust_models = ("distributed",)
    fields = PRIO3_FIELDS

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> Prio3SpecParams:
        epsilon, domain, params = prio3_from_dict(data, envelope["delta"])
        return Prio3SpecParams(epsilon, domain, params)

    def identity(self, spec: Any) -> dict:
        "Every Prio3 parameter with the trust model, epsilon and delta (the noise is calibrated from both)"
        params: Prio3SpecParams = spec.params
        out: dict[str, Any] = {"mechanism": "prio3", **params.prio3.identity(), "trust": spec.trust,
                               "epsilon": params.epsilon}
        if spec.delta is not None:
            out["delta"] = spec.delta
        if params.domain is not None:
            out["domain"] = list(params.domain)
        return out

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        prio3 = spec.params.prio3
        out.pop("chunk_length", None)  # derived, not an input
        if derived:
            out["derived"] = {"chunk_length": prio3.chunk_length, "sensitivity": prio3.sensitivity}
        return out

    def json_schema(self) -> dict:
        from ..spec_prio3 import MAX_PRIO3_LENGTH, NOISE_MODES, PRIO3_TYPES, WINDOWS

        integer = {"type": "integer", "minimum": 1}
        return {"type": "object", "properties": {
            "mechanism": {"const": "prio3"}, "prio3": {"enum": list(PRIO3_TYPES)},
            "domain": {"type": "array", "minItems": 2, "maxItems": MAX_PRIO3_LENGTH, "uniqueItems": True},
            "max_measurement": integer, "length": {**integer, "maximum": MAX_PRIO3_LENGTH}, "max_weight": integer,
            "noise": {"enum": list(NOISE_MODES)}, "coins": integer,
            "honest_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "min_batch": {"type": "integer", "minimum": 2}, "window": {"enum": list(WINDOWS)},
        }, "required": ["prio3", "noise"]}

    def batch_of(self, spec: Any, now: float) -> str | None:
        return str(spec.prio3.batch_at(now))

    def report_period(self, spec: Any) -> float:
        return float(spec.prio3.batch_seconds)

    def ledger_charge(self, spec: Any, ctx: DeviceContext | None = None) -> tuple[float, float]:
        return float(spec.epsilon), float(spec.delta or 0.0)

    def aggregators_of(self, listing: Mapping[str, Any]) -> Any:
        return listing.get("aggregators")

    def wants_sealing_configs(self, spec: Any) -> bool:
        return True

    def prio3_measurement(self, spec: Any, value: Any) -> object:
        from ..distributed import encode_prio3  # Prio3's encodings with the first report sealed

        return encode_prio3(spec, value)

    def require_randomizer(self, spec: Any) -> None:
        raise SpecError("trust", f"campaign {spec.name!r} is {spec.trust}: it has no local randomizer "
                                 "(client_sdk.distributed.seal_report makes its reports)")

    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        """The value sharded and sealed to the leader and the helper for the report's batch, with HPKE configs the
        listing names and the app's configuration vouches for; or the status saying why not (the device's)"""
        campaign = ctx.campaign
        assert ctx.batch is not None  # batch_of gives one
        if isinstance(value, float) and value != value:
            raise InvalidValue(f"campaign {spec.name!r} cannot report NaN")
        try:
            # imported here: the distributed module (+10 ms; Prio3 and HPKE after it) only for a prio3 campaign
            from .. import distributed

            configs = ctx.sealing_configs()  # or the RecordStatus saying why there are none
            if not isinstance(configs, tuple):
                return configs
        except SpecError as exc:
            raise UnsupportedSpec(f"campaign {campaign!r}: {exc}") from None
        except ImportError as exc:  # client_sdk.vdaf.MissingDependency: no `distributed` extra on this device
            raise UnsupportedSpec(f"campaign {campaign!r} is distributed: {exc}") from None
        try:
            return distributed.seal_report(spec, value, *configs, report_id=ctx.report_id, batch=ctx.batch)
        except distributed.SealError as exc:  # a listed public key HPKE cannot use
            raise UnsupportedSpec(f"campaign {campaign!r}: {exc}") from None
        except TypeError as exc:
            raise InvalidValueType(str(exc)) from None
        except ValueError as exc:  # ValueNotInDomain too
            raise InvalidValue(str(exc)) from None


PRIO3 = register_kind(Prio3Kind())
