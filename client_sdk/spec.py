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
an aggregate means.  The optional ``budget`` (what one device may spend over the campaign's life,
``client_sdk.budget``) is part of it when given: a changed budget changes when devices stop.  Fields used only for
analysis (``delta``, ``description``, ``version``) are not part of it.

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
import re

from .budget import Budget, refusal
from .errors import SpecError
from .frozen import Frozen
from .kinds import kind_name, kind_names, kind_of
from .kinds.local_params import LocalParams
from .randomness import exp_rounded
from .rappor import RapporParams
from .spec_fields import (
    MAX_DOMAIN_SIZE,
    MAX_EPSILON,
    MAX_RANGE_MAGNITUDE,
    MIN_EPSILON,
    DomainValue,
    is_day,
    is_number,
    is_utf8,
    validate_day,
)
from .spec_prio3 import MAX_PRIO3_LENGTH, Prio3Params, Prio3SpecParams
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


# Above this many values an OUE report (one bit per value) gets large; OLH sends three integers instead.
AUTO_OUE_MAX_DOMAIN = 4096
# Always use fullmatch: with re.match, "$" also matches before a trailing newline ("g\n").
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")

# The envelope: the members every kind's spec has (each kind adds its own, ``CampaignKind.fields``)
ENVELOPE_FIELDS = frozenset({"name", "description", "version", "kind", "trust", "epsilon", "delta", "expires",
                             "unit", "derived", "fingerprint", "budget"})
# the trust models the built-in kinds support (CampaignKind.trust_models)
TRUST_MODELS = ("local", "shuffled", "distributed")


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
    """A validated campaign spec; build it with :meth:`from_dict`.

    The envelope's fields are the spec's own (name, description, version, delta, expires, trust and the ``kind``'s
    name); the rest is the kind's parameters object at ``params`` (``LocalParams``, the prio3 kind's parameters, an
    outside kind's), read through the properties below (``spec.mechanism``, ``spec.domain``, ``spec.prio3``...)."""

    # Shown by repr in this order; the value (compared, hashed, pickled) is the envelope and the parameters
    _fields = ("name", "mechanism", "epsilon", "domain", "catch_all", "range", "rappor", "candidates", "delta",
               "description", "version", "expires", "trust", "prio3", "unit", "max_ones", "budget")
    _state = ("name", "description", "version", "delta", "expires", "trust", "kind", "params", "budget")
    __slots__ = (*_state, "_index", "_fingerprint")  # the two memos: not compared, hashed or shown
    name: str
    description: str
    version: int
    delta: float | None
    expires: str | None  # the last UTC day (YYYY-MM-DD) on which the campaign records; part of the fingerprint
    trust: str  # the trust model: "local", "shuffled" (through a shuffler) or "distributed" (Prio3, two servers)
    kind: str  # the campaign kind's name (client_sdk.kinds)
    params: Any  # the kind's parameters
    budget: Budget | None  # what one device may spend over the campaign's life (client_sdk.budget); fingerprinted
    _index: dict[tuple[type, DomainValue], int]
    _fingerprint: str | None

    def __init__(self, name: str, mechanism: str | None = None, epsilon: float | None = None,
                 domain: tuple[DomainValue, ...] | None = None, catch_all: DomainValue | None = None,
                 range: tuple[float, float] | None = None, rappor: RapporParams | None = None,
                 candidates: tuple[str, ...] | None = None, delta: float | None = None, description: str = "",
                 version: int = 1, expires: str | None = None, trust: str = "local", prio3: Prio3Params | None = None,
                 unit: str | None = None, max_ones: int | None = None, budget: Budget | None = None, *,
                 kind: str | None = None, params: Any = None) -> None:
        "Either ``kind`` and ``params`` (what :meth:`from_dict` passes), or a local or prio3 spec's fields"
        if params is None:
            assert epsilon is not None
            if prio3 is not None:
                params = Prio3SpecParams(float(epsilon), domain, prio3)
            else:
                assert mechanism is not None
                params = LocalParams(mechanism, epsilon, domain, catch_all, range, rappor, candidates, unit,
                                     max_ones)
        self._set(name=name, description=description, version=version, delta=delta, expires=expires, trust=trust,
                  kind=kind_name({"trust": trust}) if kind is None else kind, params=params, budget=budget,
                  _index={}, _fingerprint=None)

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._state)

    def _replace(self, **changes: Any) -> Spec:
        return type(self)(**{**{name: getattr(self, name) for name in self._fields}, **changes})

    def __reduce__(self) -> tuple:
        return _rebuild, self._values()

    # -- the kind's parameters, as attributes -------------------------------------------------------------
    @property
    def mechanism(self) -> str:
        "The randomizer's name (a local campaign), else what the kind calls its reports (``prio3``)"
        return str(getattr(self.params, "mechanism", self.kind))

    @property
    def epsilon(self) -> float:
        return float(self.params.epsilon)

    @property
    def domain(self) -> tuple[DomainValue, ...] | None:
        return getattr(self.params, "domain", None)

    @property
    def catch_all(self) -> DomainValue | None:
        return getattr(self.params, "catch_all", None)

    @property
    def range(self) -> tuple[float, float] | None:
        return getattr(self.params, "range", None)

    @property
    def rappor(self) -> RapporParams | None:
        return getattr(self.params, "rappor", None)

    @property
    def candidates(self) -> tuple[str, ...] | None:
        return getattr(self.params, "candidates", None)

    @property
    def prio3(self) -> Prio3Params | None:
        return getattr(self.params, "prio3", None)

    @property
    def unit(self) -> str | None:
        "Numeric campaigns: what the values measure (\"ms\"); part of the fingerprint when given"
        return getattr(self.params, "unit", None)

    @property
    def max_ones(self) -> int | None:
        "SUE/OUE: the collector refuses reports with more bits set (estimators.ones_test)"
        return getattr(self.params, "max_ones", None)

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> Spec:
        "Validate a JSON-like dict (the envelope here, the rest by its kind) and build the spec (``auto`` resolved)"
        if not isinstance(data, dict):
            raise SpecError("spec", "must be a JSON object")
        kind = kind_of(data)  # SpecError('kind') for a kind no module registered
        if "kind" in data and data["kind"] != kind.name:  # e.g. an estimate type ("frequency"), no campaign kind
            raise SpecError("kind", f"must be one of {list(kind_names())}")
        trust = data.get("trust")
        trust = kind.trust_models[0] if trust is None else trust
        if trust not in kind.trust_models:
            raise SpecError("trust", f"must be one of {list(kind.trust_models)} for a {kind.name!r} campaign "
                                     f"(trust models: {list(TRUST_MODELS)})")
        known = ENVELOPE_FIELDS | kind.fields
        unknown = sorted(set(data) - known)
        if unknown:
            allowed = sorted(known - {"derived", "fingerprint"})
            raise SpecError(unknown[0], f"unknown field; allowed fields are {allowed}")
        name = data.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise SpecError("name", "must be 1-64 characters from A-Z a-z 0-9 _ . - starting with a letter or digit")
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
        envelope: dict[str, Any] = {"name": name, "description": description, "version": version, "delta": delta,
                                    "expires": validate_day("expires", data.get("expires")), "trust": trust}
        params = kind.parse_params(data, envelope)
        budget = None if data.get("budget") is None else Budget.from_json(data["budget"])
        spec = cls(**envelope, kind=kind.name, params=params, budget=budget)
        if budget is not None and refusal(budget, (0.0, 0.0), kind.ledger_charge(spec)) is not None:
            raise SpecError("budget", "is below one report's charge (the spec's epsilon, and delta): nothing could "
                                      "ever be reported")
        claimed = data.get("fingerprint")  # a spec as served: its fingerprint must be this spec's
        if claimed is not None and claimed != spec.fingerprint:
            raise SpecError("fingerprint", "does not match the spec's parameters (the spec was altered)")
        return spec

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
        "The fields that change what a report means: the input of the fingerprint (the kind gives its part)"
        out: dict[str, Any] = {"name": self.name, **kind_of(self).identity(self)}
        if self.expires is not None:
            out["expires"] = self.expires
        if self.budget is not None:  # only when given: a spec without one keeps its fingerprint
            out["budget"] = self.budget.to_json()
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
        "Plain JSON; ``derived`` adds the kind's derived parameters and the fingerprint (informational)"
        out = self.identity()
        if self.delta is not None:
            out["delta"] = self.delta
        if self.description:
            out["description"] = self.description
        out["version"] = self.version
        out = kind_of(self).to_dict(self, out, derived=derived)
        if derived:
            out["fingerprint"] = self.fingerprint
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def _rebuild(name: str, description: str, version: int, delta: float | None, expires: str | None, trust: str,
             kind: str, params: Any, budget: Budget | None = None) -> Spec:
    "A pickled spec, rebuilt"
    return Spec(name, description=description, version=version, delta=delta, expires=expires, trust=trust,
                kind=kind, params=params, budget=budget)


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
