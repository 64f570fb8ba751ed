"""The local-DP kind, device side: each report is the value perturbed on the device by the campaign's randomizer.

Its parameters are :class:`~client_sdk.kinds.local_params.LocalParams`.  A device builds each randomizer once per
spec and keeps it in the kind's memo (``DeviceContext.memo``); a RAPPOR one holds the device secret
(``DeviceContext.secret``), so its memoized responses are the same across restarts.  A secret drawn for this
report is stored in the record's transaction; if another client on the directory stored one first, the value is
perturbed again with that one, so a value never gets two permanent responses."""

from __future__ import annotations

from ..errors import InvalidValue, InvalidValueType, LDPError, SpecError, UnsupportedSpec, ValueNotInDomain
from .base import CampaignKind, register_kind
from .local_params import LOCAL_FIELDS, local_json_schema, local_params_from_dict
from .shuffle_params import SHUFFLE_FIELDS, shuffle_json_schema, shuffle_params_from_dict, with_shuffle

# Function-level imports: client_sdk.spec (which imports this package) and client_sdk.mechanisms (which build
# on the spec) are imported when a spec is parsed or a report made, after both finished loading (import order).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from ..mechanisms import Mechanism
    from .context import DeviceContext
    from .local_params import LocalParams

_SHARED_MECHANISMS: dict[str, Any] = {}


class LocalKind(CampaignKind):
    """Local differential privacy: pure epsilon per report, no batch; with trust ``shuffled`` the reports pass
    through a shuffler (``client_sdk.kinds.shuffle_params``)"""

    name = "local"
    trust_models = ("local", "shuffled")
    fields = LOCAL_FIELDS | SHUFFLE_FIELDS

    def parse_params(self, data: dict, envelope: dict[str, Any]) -> LocalParams:
        shuffle = shuffle_params_from_dict(data, envelope["trust"])
        params = local_params_from_dict(data)
        return params if shuffle is None else with_shuffle(params, shuffle)

    def identity(self, spec: Any) -> dict:
        """The randomizer's parameters; no ``kind`` member, and ``trust`` only for a shuffled campaign (with its
        batching rule): a local one's fingerprint is the one from before kinds existed"""
        return spec.params.identity()

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        if spec.candidates is not None:
            out["candidates"] = list(spec.candidates)
        if derived:
            from .. import spec as spec_module

            if spec_module._derived_parameters is None:
                raise RuntimeError("client_sdk.mechanisms is not imported")  # cannot happen: client_sdk imports it
            out["derived"] = spec_module._derived_parameters(spec)  # the randomizer's probabilities
        return out

    def json_schema(self) -> dict:
        schema = local_json_schema()
        schema["properties"].update(shuffle_json_schema())
        return schema

    def require_randomizer(self, spec: Any) -> None:
        "Its reports are made by the randomizer its ``mechanism`` names"

    # -- the device -----------------------------------------------------------------------------------------------
    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        mechanism = self.randomizer_of(ctx, spec)
        payload = _perturbed(spec, value, mechanism)
        if spec.rappor is not None:
            ctx.finish_in_transaction(lambda drawn: self._with_stored_secret(ctx, spec, value, mechanism, drawn))
        return payload

    def randomizer_of(self, ctx: DeviceContext, spec: Any) -> Mechanism:
        "The device's randomizer for ``spec`` (built once, kept in the kind's memo); UnsupportedSpec if none fits"
        try:
            return self._randomizer(ctx, spec)
        except (SpecError, TypeError) as exc:
            raise UnsupportedSpec(f"campaign {spec.name!r}: {exc}") from None

    def _randomizer(self, ctx: DeviceContext, spec: Any) -> Mechanism:
        from ..mechanisms import mechanism_from_spec
        from ..rappor import cohort_from_secret

        mechanism = ctx.memo.get(spec.fingerprint)
        if mechanism is None:
            if spec.rappor is not None:  # its memoized responses belong to this device's secret
                secret = ctx.secret.value
                mechanism = mechanism_from_spec(spec, rng=ctx.rng, secret=secret,
                                                cohort=cohort_from_secret(secret, spec.rappor.m))
            elif ctx.rng is None:
                mechanism = _shared_mechanism(spec)
            else:
                mechanism = mechanism_from_spec(spec, rng=ctx.rng)
            ctx.memo[spec.fingerprint] = mechanism
        return mechanism

    def _with_stored_secret(self, ctx: DeviceContext, spec: Any, value: Any, mechanism: Mechanism,
                            payload: Any) -> Any:
        "The RAPPOR payload drawn with the secret the state file holds (in the record's transaction)"
        drawn = ctx.secret.value
        if ctx.secret.store() != drawn:  # another client on this directory stored its secret first
            for fingerprint in [key for key, held in ctx.memo.items() if getattr(held, "secret", None) is not None]:
                del ctx.memo[fingerprint]
        if getattr(mechanism, "secret", None) == ctx.secret.value:
            return payload
        return _perturbed(spec, value, self.randomizer_of(ctx, spec))


def _perturbed(spec: Any, value: Any, mechanism: Mechanism) -> Any:
    if isinstance(value, float) and value != value:
        raise InvalidValue(f"campaign {spec.name!r} cannot report NaN")
    try:
        return mechanism.perturb(value)
    except (ValueNotInDomain, SpecError) as exc:
        raise InvalidValue(str(exc)) from None
    except LDPError:
        raise
    except TypeError as exc:
        raise InvalidValueType(str(exc)) from None
    except (ValueError, ArithmeticError) as exc:
        raise InvalidValue(str(exc)) from None


def _shared_mechanism(spec: Any) -> Mechanism:
    """The process's randomizer for ``spec`` drawing from the OS CSPRNG (built once per spec: it keeps no state
    between reports); never a RAPPOR one, whose memoized responses belong to one device"""
    from ..mechanisms import mechanism_from_spec

    mechanism = _SHARED_MECHANISMS.get(spec.fingerprint)
    if mechanism is None:
        if len(_SHARED_MECHANISMS) >= 256:
            _SHARED_MECHANISMS.clear()
        mechanism = _SHARED_MECHANISMS[spec.fingerprint] = mechanism_from_spec(spec)
    return mechanism


LOCAL = register_kind(LocalKind())
