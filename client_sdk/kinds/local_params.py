"""The local kind's spec parameters (:class:`LocalParams`): a randomizer's mechanism with its domain or range, or
RAPPOR's parameters and candidates, validated by :func:`local_params_from_dict` with field-named SpecErrors.

The mechanism names come from ``client_sdk.spec`` (each randomizer registers its names there as it is defined);
``mechanism: "auto"`` is resolved here, with ``client_sdk.spec.resolve_auto`` and ``resolve_auto_numeric``."""

from __future__ import annotations

import math

from ..errors import SpecError
from ..frozen import Frozen
from ..rappor import RapporParams
from ..spec_fields import (
    MAX_DOMAIN_SIZE,
    MAX_EPSILON,
    MIN_EPSILON,
    DomainValue,
    is_finite_number,
    is_utf8,
    validate_domain,
    validate_epsilon,
    validate_int,
    validate_range,
    validate_unit,
)

# Function-level imports: client_sdk.spec (which imports this package) and client_sdk.mechanisms (which build
# on the spec) are imported when a spec is parsed or a report made, after both finished loading (import order).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

# The top-level members of a local spec beside the envelope's (``unit`` is the envelope's: a numeric campaign's)
LOCAL_FIELDS = frozenset({"mechanism", "domain", "catch_all", "range", "rappor", "candidates", "max_ones"})
UNARY_MECHANISMS = ("sue", "oue")  # one bit per value: a report's count of ones is what ``max_ones`` bounds


class LocalParams(Frozen):
    "A local campaign's randomizer and what it reports on (its domain or range), validated"

    __slots__ = _fields = ("mechanism", "epsilon", "domain", "catch_all", "range", "rappor", "candidates", "unit",
                           "max_ones")
    mechanism: str
    epsilon: float
    domain: tuple[DomainValue, ...] | None
    catch_all: DomainValue | None
    range: tuple[float, float] | None
    rappor: RapporParams | None  # for mechanism "rappor"
    candidates: tuple[str, ...] | None
    unit: str | None  # numeric campaigns: what the values measure ("ms"); part of the fingerprint when given
    max_ones: int | None  # SUE/OUE: the collector refuses reports with more bits set (estimators.ones_test)

    def __init__(self, mechanism: str, epsilon: float, domain: tuple[DomainValue, ...] | None = None,
                 catch_all: DomainValue | None = None, range: tuple[float, float] | None = None,
                 rappor: RapporParams | None = None, candidates: tuple[str, ...] | None = None,
                 unit: str | None = None, max_ones: int | None = None) -> None:
        self._set(mechanism=mechanism, epsilon=epsilon, domain=domain, catch_all=catch_all, range=range,
                  rappor=rappor, candidates=candidates, unit=unit, max_ones=max_ones)

    def identity(self) -> dict:
        "The fields that change what a report means (the envelope adds name and expiry)"
        out: dict[str, Any] = {"mechanism": self.mechanism}
        if self.rappor is not None:
            out["rappor"] = self.rappor.to_dict()
            if self.rappor.encoding == "basic":  # one bit per candidate: the list defines what a bit means
                out["candidates"] = list(self.candidates or ())
            elif self.candidates is not None:  # a changed candidate list is a new version (decoding changes)
                out["candidates"] = list(self.candidates)
        else:
            out["epsilon"] = self.epsilon
        if self.domain is not None:
            out["domain"] = list(self.domain)
        if self.catch_all is not None:
            out["catch_all"] = self.catch_all
        if self.range is not None:
            out["range"] = list(self.range)
        if self.unit is not None:
            out["unit"] = self.unit
        if self.max_ones is not None:  # the collector keeps only the reports with at most this many bits set
            out["max_ones"] = self.max_ones
        return out


def local_params_from_dict(data: dict) -> LocalParams:
    "A local-DP campaign's parameters from its spec's JSON; SpecError naming the field otherwise"
    from .. import spec as names  # the mechanism names the randomizers registered (spec imports this package)

    mechanism = data.get("mechanism")
    if mechanism not in names.ALLOWED_MECHANISM_NAMES:
        raise SpecError("mechanism", f"must be one of {list(names.ALLOWED_MECHANISM_NAMES)}")
    assert isinstance(mechanism, str)
    if mechanism == "rappor":
        return _rappor_from_dict(data)
    for forbidden in ("rappor", "candidates"):
        if forbidden in data:
            raise SpecError(forbidden, f"only allowed with mechanism 'rappor', not {mechanism!r}")
    epsilon = validate_epsilon(data.get("epsilon"))
    if mechanism == "auto" and "range" in data and "domain" not in data:
        mechanism = names.resolve_auto_numeric(epsilon)
    if mechanism in names.NUMERIC_MECHANISMS:
        for forbidden in ("domain", "catch_all", "max_ones"):
            if forbidden in data:
                raise SpecError(forbidden, f"numeric mechanism {mechanism!r} takes 'range', not {forbidden!r}")
        return LocalParams(mechanism, epsilon, range=validate_range(data.get("range")),
                           unit=validate_unit(data.get("unit")))
    for forbidden in ("range", "unit"):
        if forbidden in data:
            raise SpecError(forbidden, f"categorical mechanism {mechanism!r} takes 'domain', not {forbidden!r}")
    domain = validate_domain(data.get("domain"))
    catch_all = data.get("catch_all")
    if catch_all is not None and catch_all not in domain:
        raise SpecError("catch_all", "must be one of the domain's entries")
    if mechanism == "auto":
        mechanism = names.resolve_auto(len(domain), epsilon)
    max_ones = data.get("max_ones")
    if max_ones is not None:
        if mechanism not in UNARY_MECHANISMS:
            raise SpecError("max_ones", f"only with a unary encoding {list(UNARY_MECHANISMS)} (it bounds the bits "
                                        f"a report sets), not {mechanism!r}")
        max_ones = validate_int("max_ones", max_ones, 1, len(domain))
    return LocalParams(mechanism, epsilon, domain=domain, catch_all=catch_all, max_ones=max_ones)


def _rappor_from_dict(data: dict) -> LocalParams:
    for forbidden in ("domain", "range", "catch_all", "unit", "max_ones"):
        if forbidden in data:
            raise SpecError(forbidden, "not allowed with mechanism 'rappor' (use 'candidates' for decoding)")
    params = RapporParams.from_dict(data.get("rappor"))
    if not MIN_EPSILON <= params.epsilon_one <= MAX_EPSILON:
        raise SpecError("rappor", f"f, p, q and h give epsilon_1 = {params.epsilon_one:.6g}; it must be in "
                                  f"[{MIN_EPSILON}, {MAX_EPSILON}], as epsilon for the other mechanisms")
    if "epsilon" in data and data["epsilon"] is not None:
        claimed = data["epsilon"]
        if not is_finite_number(claimed) or not math.isclose(claimed, params.epsilon_one, rel_tol=1e-9):
            raise SpecError("epsilon", f"is derived for RAPPOR (epsilon_1 = {params.epsilon_one:.6g}); omit it")
    candidates = data.get("candidates")
    if candidates is not None:
        if not isinstance(candidates, list) or not all(isinstance(c, str) and is_utf8(c) for c in candidates):
            raise SpecError("candidates", "must be a list of strings")
        if len(candidates) > MAX_DOMAIN_SIZE:
            raise SpecError("candidates", f"has more than {MAX_DOMAIN_SIZE} entries")
        if len(set(candidates)) != len(candidates):
            raise SpecError("candidates", "entries must be unique")
        candidates = tuple(candidates)
    return LocalParams("rappor", params.epsilon_one, rappor=params, candidates=candidates)


def local_json_schema() -> dict:
    "The JSON Schema of a local spec's own members (the randomizers' names as they registered)"
    from .. import spec as names
    from ..spec_fields import MAX_RANGE_MAGNITUDE

    entry = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    return {"type": "object", "properties": {
        "mechanism": {"type": "string", "enum": list(names.ALLOWED_MECHANISM_NAMES)},
        "domain": {"type": "array", "items": entry, "minItems": 2, "maxItems": MAX_DOMAIN_SIZE, "uniqueItems": True},
        "catch_all": entry,
        "range": {"type": "array", "items": {"type": "number", "minimum": -MAX_RANGE_MAGNITUDE,
                                             "maximum": MAX_RANGE_MAGNITUDE}, "minItems": 2, "maxItems": 2},
        "rappor": {"type": "object", "properties": {name: {"type": "number"} for name in ("k", "h", "m", "f", "p",
                                                                                           "q")}},
        "candidates": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "max_ones": {"type": "integer", "minimum": 1},
    }, "required": ["mechanism"]}
