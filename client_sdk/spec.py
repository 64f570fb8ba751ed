"""The campaign spec: one serialisable object that the SDK perturbs with, the collector validates against and
the estimators de-bias with.

A spec is plain JSON, for example::

    {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "other"]}
    {"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 5000]}
    {"name": "homepage", "mechanism": "rappor", "rappor": {"k": 128, "h": 2, "m": 64, "f": 0.5, "p": 0.5, "q": 0.75}}

``Spec.from_dict`` validates every field and raises :class:`~client_sdk.errors.SpecError` naming the field and
the allowed values.  ``mechanism: "auto"`` is resolved here to the oracle with the lowest variance for the
domain size and epsilon (Wang et al., USENIX Security 2017) and the resolved name is what the spec holds afterwards.

The fingerprint is the SHA-256 of the canonical JSON of every field that changes what a report means (name,
mechanism, epsilon, domain, catch-all, range, RAPPOR parameters, and the candidates of basic RAPPOR, where they
define the bits).  Every report carries it, so reports made under other parameters can never be mixed into an
estimate.  Bloom-filter RAPPOR's ``candidates`` are part of it when present, so a changed candidate list is a
new version.  ``expires`` (the last UTC day on which devices record) is part of it too, and so is a numeric
campaign's ``unit`` ("ms", "MB": what the recorded numbers measure, shown on the reports' axes and headers) when one
is given: a changed unit changes what a value means, so it is a new version.  A spec without these fields keeps the
fingerprint it always had.  A unary campaign's ``max_ones`` is part of it too: the collector keeps only reports
with at most that many bits set (a defence against crafted reports, ``estimators.ones_test``), which changes what
an aggregate means.  Fields used only for analysis (``delta``, ``description``, ``version``) are not part of
it.

A distributed campaign (``"trust": "distributed"``) is aggregated by two servers with Prio3 instead of being
perturbed on the device (``client_sdk.distributed``)::

    {"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": ["a", "b", "c"],
     "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "min_batch": 100}

Its ``mechanism`` is ``"prio3"`` (no local randomizer has that name: code that perturbs or de-biases on its own
checks ``spec.trust``) and its parameters are :class:`Prio3Params` (``client_sdk.spec_prio3``) at ``spec.prio3``.
Its fingerprint covers all of them with epsilon and delta (the noise is calibrated from both); a local spec's
identity and fingerprint do not change (``trust`` enters identity() only for distributed specs).
"""

from __future__ import annotations

import hashlib
import json
import math
import re

from .errors import SpecError
from .frozen import Frozen
from .kinds import kind_of
from .randomness import exp_rounded
from .rappor import RapporParams
from .spec_fields import (
    MAX_DOMAIN_SIZE,
    MAX_EPSILON,
    MAX_RANGE_MAGNITUDE,
    MIN_EPSILON,
    DomainValue,
    is_day,
    is_finite_number,
    is_number,
    is_utf8,
    validate_day,
    validate_domain,
    validate_epsilon,
    validate_int,
    validate_range,
    validate_unit,
)
from .spec_prio3 import DISTRIBUTED_FIELDS, MAX_PRIO3_LENGTH, Prio3Params, prio3_from_dict
from .wire import is_integer

# The spec's public names; the limits and the Prio3 parameters are defined in spec_fields and spec_prio3.
__all__ = [
    "ALLOWED_MECHANISM_NAMES", "AUTO_OUE_MAX_DOMAIN", "CATEGORICAL_MECHANISMS", "FAMILIES", "MAX_DOMAIN_SIZE",
    "MAX_EPSILON", "MAX_PRIO3_LENGTH", "MAX_RANGE_MAGNITUDE", "MECHANISMS", "MIN_EPSILON", "NAME_PATTERN",
    "NUMERIC_MECHANISMS", "SET_MECHANISMS", "TRUST_MODELS", "DomainValue", "Prio3Params", "Spec", "canonical_json",
    "is_day", "load_spec", "register_mechanism", "resolve_auto", "resolve_auto_numeric", "set_derived_parameters",
]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# The mechanism names a spec may use, by family.  The randomizers build on the spec, so this module imports none
# of them: each class in client_sdk.mechanisms enters its names here as it is defined (``register_mechanism``),
# and ``import client_sdk`` (which always runs before this module is used) imports them all.  So a new mechanism
# is one new module on the device side.  ``resolve_auto`` names grr, oue and olh explicitly.
CATEGORICAL_MECHANISMS: tuple[str, ...] = ()
NUMERIC_MECHANISMS: tuple[str, ...] = ()
SET_MECHANISMS: tuple[str, ...] = ()
MECHANISMS: tuple[str, ...] = ()
ALLOWED_MECHANISM_NAMES: tuple[str, ...] = ("auto",)
FAMILIES = ("categorical", "numeric", "set")


def register_mechanism(name: str, family: str) -> None:
    "Allow ``name`` in specs, as a mechanism of ``family`` (called by client_sdk.mechanisms)"
    global CATEGORICAL_MECHANISMS, NUMERIC_MECHANISMS, SET_MECHANISMS, MECHANISMS, ALLOWED_MECHANISM_NAMES
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}")
    if name in ALLOWED_MECHANISM_NAMES:
        raise ValueError(f"mechanism name {name!r} is taken")
    if family == "categorical":
        CATEGORICAL_MECHANISMS += (name,)
    elif family == "numeric":
        NUMERIC_MECHANISMS += (name,)
    else:
        SET_MECHANISMS += (name,)
    MECHANISMS = CATEGORICAL_MECHANISMS + NUMERIC_MECHANISMS + SET_MECHANISMS
    ALLOWED_MECHANISM_NAMES = MECHANISMS + ("auto",)


UNARY_MECHANISMS = ("sue", "oue")  # one bit per value: a report's count of ones is what ``max_ones`` bounds
# Above this many values an OUE report (one bit per value) gets large; OLH sends three integers instead.
AUTO_OUE_MAX_DOMAIN = 4096
# Always use fullmatch: with re.match, "$" also matches before a trailing newline ("g\n").
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")

_KNOWN_FIELDS = {
    "name", "mechanism", "epsilon", "domain", "catch_all", "range", "rappor", "candidates", "delta",
    "description", "version", "derived", "fingerprint", "expires", "unit", "max_ones",
}
_KNOWN_FIELDS |= set(DISTRIBUTED_FIELDS)
TRUST_MODELS = ("local", "distributed")  # the built-in campaign kinds (client_sdk.kinds registers each)
def resolve_auto(domain_size: int, epsilon: float) -> str:
    """The lowest-variance frequency oracle for ``domain_size`` values at ``epsilon``.

    GRR's per-report variance factor is ``(d-2+e)/(e-1)^2`` and OUE's ``4e/(e-1)^2``, so GRR wins exactly when
    ``d < 3e + 2``.  OLH ties OUE in theory and is never strictly lower with an integer hash range, so it is only
    chosen for domains above ``AUTO_OUE_MAX_DOMAIN``, where OUE's d-bit reports get large."""
    e = exp_rounded(epsilon)
    if domain_size < 3 * e + 2:
        return "grr"
    if domain_size <= AUTO_OUE_MAX_DOMAIN:
        return "oue"
    return "olh"


def resolve_auto_numeric(epsilon: float) -> str:
    """The mean mechanism with the lowest worst-case variance at ``epsilon``: Hybrid at every epsilon.

    N. Wang et al. (ICDE 2019) show Hybrid's per-report variance at or below Piecewise's and Duchi's for every t
    and epsilon (it is Duchi at eps <= 0.61); Laplace's 8/eps^2 is above Duchi's C^2 < 4/eps^2 + 1 at small
    epsilon and above Piecewise's at large (``tests/client_sdk/test_spec.py`` checks this against the planner)."""
    del epsilon  # the same answer at every epsilon; kept so the rule reads like resolve_auto
    return "hybrid"


class Spec(Frozen):
    "A validated campaign spec; build it with :meth:`from_dict`"

    _fields = ("name", "mechanism", "epsilon", "domain", "catch_all", "range", "rappor", "candidates", "delta",
               "description", "version", "expires", "trust", "prio3", "unit", "max_ones")
    __slots__ = (*_fields, "_index", "_fingerprint")  # the two memos: not compared, hashed or shown
    name: str
    mechanism: str
    epsilon: float
    domain: tuple[DomainValue, ...] | None
    catch_all: DomainValue | None
    range: tuple[float, float] | None
    rappor: RapporParams | None  # for mechanism "rappor"
    candidates: tuple[str, ...] | None
    delta: float | None
    description: str
    version: int
    expires: str | None  # the last UTC day (YYYY-MM-DD) on which the campaign records; part of the fingerprint
    trust: str  # "distributed": aggregated with Prio3 by two servers (mechanism "prio3", prio3 below)
    prio3: Prio3Params | None
    unit: str | None  # numeric campaigns: what the values measure ("ms"); part of the fingerprint when given
    max_ones: int | None  # SUE/OUE: the collector refuses reports with more bits set (estimators.ones_test)
    _index: dict[tuple[type, DomainValue], int]
    _fingerprint: str | None

    def __init__(self, name: str, mechanism: str, epsilon: float, domain: tuple[DomainValue, ...] | None = None,
                 catch_all: DomainValue | None = None, range: tuple[float, float] | None = None,
                 rappor: RapporParams | None = None, candidates: tuple[str, ...] | None = None,
                 delta: float | None = None, description: str = "", version: int = 1, expires: str | None = None,
                 trust: str = "local", prio3: Prio3Params | None = None, unit: str | None = None,
                 max_ones: int | None = None) -> None:
        self._set(name=name, mechanism=mechanism, epsilon=epsilon, domain=domain, catch_all=catch_all, range=range,
                  rappor=rappor, candidates=candidates, delta=delta, description=description, version=version,
                  expires=expires, trust=trust, prio3=prio3, unit=unit, max_ones=max_ones, _index={},
                  _fingerprint=None)

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> Spec:
        "Validate a JSON-like dict and build the spec (``auto`` resolved)"
        if not isinstance(data, dict):
            raise SpecError("spec", "must be a JSON object")
        unknown = sorted(set(data) - _KNOWN_FIELDS)
        if unknown:
            allowed = sorted(_KNOWN_FIELDS - {"derived", "fingerprint"})
            raise SpecError(unknown[0], f"unknown field; allowed fields are {allowed}")
        name = data.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise SpecError("name", "must be 1-64 characters from A-Z a-z 0-9 _ . - starting with a letter or digit")
        kind = kind_of(data)  # SpecError('trust') for a kind no module registered
        mechanism = data.get("mechanism")
        if mechanism not in ALLOWED_MECHANISM_NAMES and kind.takes_mechanism:
            raise SpecError("mechanism", f"must be one of {list(ALLOWED_MECHANISM_NAMES)}")
        description = data.get("description", "")
        if not isinstance(description, str) or len(description) > 1000 or not is_utf8(description):
            raise SpecError("description", "must be a string of at most 1000 characters")
        version = data.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= 2**31:
            raise SpecError("version", "must be a positive integer")
        delta = data.get("delta")
        if delta is not None:
            if not is_number(delta) or not 0 < delta < 1:
                raise SpecError("delta", "must be a number with 0 < delta < 1 (used for the central Gaussian baseline)")
            delta = float(delta)
        common: dict[str, Any] = {"name": name, "description": description, "version": version, "delta": delta,
                                  "expires": validate_day("expires", data.get("expires"))}
        return kind.spec_from_dict(cls, data, common)._checked(data)  # a carried fingerprint must be the spec's

    @classmethod
    def _local_from_dict(cls, data: dict, common: dict[str, Any]) -> Spec:
        "A local-DP campaign: a randomizer's mechanism with its domain or range (``client_sdk.kinds.local``)"
        mechanism = data.get("mechanism")
        for forbidden in DISTRIBUTED_FIELDS[1:]:
            if forbidden in data:
                raise SpecError(forbidden, "only allowed with trust 'distributed'")
        assert isinstance(mechanism, str)  # one of ALLOWED_MECHANISM_NAMES (checked above)
        if mechanism == "rappor":
            return cls._rappor_from_dict(data, common)
        for forbidden in ("rappor", "candidates"):
            if forbidden in data:
                raise SpecError(forbidden, f"only allowed with mechanism 'rappor', not {mechanism!r}")
        epsilon = validate_epsilon(data.get("epsilon"))

        if mechanism == "auto" and "range" in data and "domain" not in data:
            mechanism = resolve_auto_numeric(epsilon)
        if mechanism in NUMERIC_MECHANISMS:
            for forbidden in ("domain", "catch_all", "max_ones"):
                if forbidden in data:
                    raise SpecError(forbidden, f"numeric mechanism {mechanism!r} takes 'range', not {forbidden!r}")
            value_range = validate_range(data.get("range"))
            return cls(mechanism=mechanism, epsilon=epsilon, range=value_range, unit=validate_unit(data.get("unit")),
                       **common)._checked(data)

        for forbidden in ("range", "unit"):
            if forbidden in data:
                raise SpecError(forbidden, f"categorical mechanism {mechanism!r} takes 'domain', not {forbidden!r}")
        domain = validate_domain(data.get("domain"))
        catch_all = data.get("catch_all")
        if catch_all is not None and catch_all not in domain:
            raise SpecError("catch_all", "must be one of the domain's entries")
        if mechanism == "auto":
            mechanism = resolve_auto(len(domain), epsilon)
        max_ones = data.get("max_ones")
        if max_ones is not None:
            if mechanism not in UNARY_MECHANISMS:
                raise SpecError("max_ones", f"only with a unary encoding {list(UNARY_MECHANISMS)} (it bounds the bits "
                                            f"a report sets), not {mechanism!r}")
            max_ones = validate_int("max_ones", max_ones, 1, len(domain))
        return cls(mechanism=mechanism, epsilon=epsilon, domain=domain, catch_all=catch_all, max_ones=max_ones,
                   **common)._checked(data)

    def _checked(self, data: dict) -> Spec:
        "A fingerprint carried in ``data`` (a spec as served) must be this spec's"
        claimed = data.get("fingerprint")
        if claimed is not None and claimed != self.fingerprint:
            raise SpecError("fingerprint", "does not match the spec's parameters (the spec was altered)")
        return self

    @classmethod
    def _distributed_from_dict(cls, data: dict, common: dict[str, Any]) -> Spec:
        "A distributed (Prio3) campaign: its parameters are ``client_sdk.spec_prio3``'s"
        epsilon, domain, params = prio3_from_dict(data, common["delta"])
        return cls(mechanism="prio3", epsilon=epsilon, domain=domain, trust="distributed", prio3=params,
                   **common)._checked(data)


    @classmethod
    def _rappor_from_dict(cls, data: dict, common: dict[str, Any]) -> Spec:
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
        spec = cls(mechanism="rappor", epsilon=params.epsilon_one, rappor=params, candidates=candidates, **common)
        return spec._checked(data)

    # -- views --------------------------------------------------------------------------------------------
    @property
    def is_categorical(self) -> bool:
        return self.mechanism in CATEGORICAL_MECHANISMS

    @property
    def is_numeric(self) -> bool:
        return self.mechanism in NUMERIC_MECHANISMS

    @property
    def domain_size(self) -> int:
        if self.domain is None:
            raise SpecError("domain", f"mechanism {self.mechanism!r} has no domain")
        return len(self.domain)

    def index_of(self, value: Any) -> int | None:
        "Position of ``value`` in the domain, or None; numpy integers are integers (bools never are)"
        if not self._index and self.domain is not None:
            self._index.update({(type(v), v): i for i, v in enumerate(self.domain)})
        if type(value) is not int and is_integer(value):
            value = int(value)
        return self._index.get((type(value), value))

    def identity(self) -> dict:
        "The fields that change what a report means: the input of the fingerprint"
        out: dict[str, Any] = {"name": self.name, "mechanism": self.mechanism, **kind_of(self).identity(self)}
        if self.prio3 is not None:  # distributed: every Prio3 parameter, with epsilon and delta (noise calibration)
            out.update(self.prio3.identity(), trust=self.trust, epsilon=self.epsilon)
            if self.delta is not None:
                out["delta"] = self.delta
        elif self.rappor is not None:
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
        if self.expires is not None:
            out["expires"] = self.expires
        if self.unit is not None:
            out["unit"] = self.unit
        if self.max_ones is not None:  # the collector keeps only the reports with at most this many bits set
            out["max_ones"] = self.max_ones
        return out

    def expired_on(self, day: str) -> bool:
        "Whether the campaign no longer records on UTC ``day`` (YYYY-MM-DD): true on the days after ``expires``"
        return self.expires is not None and day > self.expires

    @property
    def fingerprint(self) -> str:
        "SHA-256 (hex, first 32 characters) of the canonical JSON of :meth:`identity`"
        if self._fingerprint is None:  # memoized: the JSON of a large domain costs milliseconds (a Spec is frozen)
            self._set(_fingerprint=hashlib.sha256(canonical_json(self.identity()).encode()).hexdigest()[:32])
        assert self._fingerprint is not None
        return self._fingerprint

    def to_dict(self, *, derived: bool = True) -> dict:
        "Plain JSON; ``derived`` adds the mechanism's derived probabilities and the fingerprint (informational)"
        out = self.identity()
        if self.mechanism == "rappor":
            out.pop("epsilon", None)
        if self.candidates is not None:
            out["candidates"] = list(self.candidates)
        if self.delta is not None:
            out["delta"] = self.delta
        if self.description:
            out["description"] = self.description
        out["version"] = self.version
        if self.prio3 is not None:
            out.pop("chunk_length", None)  # derived, not an input
            if derived:
                out["derived"] = {"chunk_length": self.prio3.chunk_length, "sensitivity": self.prio3.sensitivity}
                out["fingerprint"] = self.fingerprint
            return out
        if derived:
            if _derived_parameters is None:
                raise RuntimeError("client_sdk.mechanisms is not imported")  # cannot happen: client_sdk imports it
            if kind_of(self).takes_mechanism:  # the randomizer's probabilities
                out["derived"] = _derived_parameters(self)
            out["fingerprint"] = self.fingerprint
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


# The mechanisms build on the spec, so the spec cannot import them; client_sdk.mechanisms registers here the
# function that gives a spec's derived parameters for ``to_dict``.
_derived_parameters: Callable[[Spec], dict] | None = None


def set_derived_parameters(function: Callable[[Spec], dict]) -> None:
    "Called once by client_sdk.mechanisms"
    global _derived_parameters
    _derived_parameters = function


def load_spec(source: Any) -> Spec:
    "A spec from a dict, a JSON string, or an existing Spec"
    if isinstance(source, Spec):
        return source
    if isinstance(source, (str, bytes)):
        try:
            source = json.loads(source)
        except json.JSONDecodeError as exc:
            raise SpecError("spec", f"is not valid JSON ({exc.msg})") from None
    return Spec.from_dict(source)


def canonical_json(data: Any) -> str:
    "Sorted keys, no whitespace, UTF-8 as is: the same bytes for the same content"
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
