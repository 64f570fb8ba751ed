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
estimate.  Fields used only for analysis (``delta``, Bloom-filter RAPPOR's ``candidates``, ``description``,
``version``) are not part of it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from .errors import PrivacyWarning, SpecError

CATEGORICAL_MECHANISMS = ("grr", "sue", "oue", "olh", "hadamard")
NUMERIC_MECHANISMS = ("laplace", "duchi", "piecewise", "hybrid")
SET_MECHANISMS = ("rappor",)
MECHANISMS = CATEGORICAL_MECHANISMS + NUMERIC_MECHANISMS + SET_MECHANISMS
ALLOWED_MECHANISM_NAMES = MECHANISMS + ("auto",)

EPSILON_WARNING_THRESHOLD = 10.0
MAX_DOMAIN_SIZE = 1 << 20
# Above this many values an OUE report (one bit per value) gets large; OLH sends three integers instead.
AUTO_OUE_MAX_DOMAIN = 4096
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")

DomainValue = str | int
_KNOWN_FIELDS = {
    "name", "mechanism", "epsilon", "domain", "catch_all", "range", "rappor", "candidates", "delta",
    "description", "version", "derived", "fingerprint",
}


def resolve_auto(domain_size: int, epsilon: float) -> str:
    """The lowest-variance frequency oracle for ``domain_size`` values at ``epsilon``.

    GRR's per-report variance factor is ``(d-2+e)/(e-1)^2`` and OUE's ``4e/(e-1)^2``, so GRR wins exactly when
    ``d < 3e + 2``.  OLH ties OUE in theory and is never strictly lower with an integer hash range, so it is only
    chosen for domains above ``AUTO_OUE_MAX_DOMAIN``, where OUE's d-bit reports get large."""
    e = math.exp(epsilon)
    if domain_size < 3 * e + 2:
        return "grr"
    if domain_size <= AUTO_OUE_MAX_DOMAIN:
        return "oue"
    return "olh"


@dataclass(frozen=True)
class Spec:
    "A validated campaign spec; build it with :meth:`from_dict`"

    name: str
    mechanism: str
    epsilon: float
    domain: tuple[DomainValue, ...] | None = None
    catch_all: DomainValue | None = None
    range: tuple[float, float] | None = None
    rappor: Any = None  # client_sdk.rappor.RapporParams for mechanism "rappor"
    candidates: tuple[str, ...] | None = None
    delta: float | None = None
    description: str = ""
    version: int = 1
    _index: dict = field(default_factory=dict, repr=False, compare=False)

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
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise SpecError("name", "must be 1-64 characters from A-Z a-z 0-9 _ . - starting with a letter or digit")
        mechanism = data.get("mechanism")
        if mechanism not in ALLOWED_MECHANISM_NAMES:
            raise SpecError("mechanism", f"must be one of {list(ALLOWED_MECHANISM_NAMES)}")
        description = data.get("description", "")
        if not isinstance(description, str) or len(description) > 1000:
            raise SpecError("description", "must be a string of at most 1000 characters")
        version = data.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise SpecError("version", "must be a positive integer")
        delta = data.get("delta")
        if delta is not None:
            if not _is_number(delta) or not 0 < delta < 1:
                raise SpecError("delta", "must be a number with 0 < delta < 1 (used for the central Gaussian baseline)")
            delta = float(delta)
        common = {"name": name, "description": description, "version": version, "delta": delta}

        if mechanism == "rappor":
            return cls._rappor_from_dict(data, common)
        for forbidden in ("rappor", "candidates"):
            if forbidden in data:
                raise SpecError(forbidden, f"only allowed with mechanism 'rappor', not {mechanism!r}")
        epsilon = _validate_epsilon(data.get("epsilon"))

        if mechanism in NUMERIC_MECHANISMS:
            for forbidden in ("domain", "catch_all"):
                if forbidden in data:
                    raise SpecError(forbidden, f"numeric mechanism {mechanism!r} takes 'range', not {forbidden!r}")
            value_range = _validate_range(data.get("range"))
            return cls(mechanism=mechanism, epsilon=epsilon, range=value_range, **common)._checked(data)

        if "range" in data:
            raise SpecError("range", f"categorical mechanism {mechanism!r} takes 'domain', not 'range'")
        domain = _validate_domain(data.get("domain"))
        catch_all = data.get("catch_all")
        if catch_all is not None and catch_all not in domain:
            raise SpecError("catch_all", "must be one of the domain's entries")
        if mechanism == "auto":
            mechanism = resolve_auto(len(domain), epsilon)
        return cls(mechanism=mechanism, epsilon=epsilon, domain=domain, catch_all=catch_all, **common)._checked(data)

    def _checked(self, data: dict) -> Spec:
        "A fingerprint carried in ``data`` (a spec as served) must be this spec's"
        claimed = data.get("fingerprint")
        if claimed is not None and claimed != self.fingerprint:
            raise SpecError("fingerprint", "does not match the spec's parameters (the spec was altered)")
        return self

    @classmethod
    def _rappor_from_dict(cls, data: dict, common: dict) -> Spec:
        from .rappor import RapporParams

        for forbidden in ("domain", "range", "catch_all"):
            if forbidden in data:
                raise SpecError(forbidden, "not allowed with mechanism 'rappor' (use 'candidates' for decoding)")
        params = RapporParams.from_dict(data.get("rappor"))
        if "epsilon" in data and data["epsilon"] is not None:
            if not _is_number(data["epsilon"]) or not math.isclose(data["epsilon"], params.epsilon_one, rel_tol=1e-9):
                raise SpecError("epsilon", f"is derived for RAPPOR (epsilon_1 = {params.epsilon_one:.6g}); omit it")
        candidates = data.get("candidates")
        if candidates is not None:
            if not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
                raise SpecError("candidates", "must be a list of strings")
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
        "Position of ``value`` in the domain, or None"
        if not self._index and self.domain is not None:
            self._index.update({(type(v), v): i for i, v in enumerate(self.domain)})
        return self._index.get((type(value), value))

    def identity(self) -> dict:
        "The fields that change what a report means: the input of the fingerprint"
        out: dict[str, Any] = {"name": self.name, "mechanism": self.mechanism}
        if self.mechanism == "rappor":
            out["rappor"] = self.rappor.to_dict()
            if self.rappor.encoding == "basic":  # one bit per candidate: the list defines what a bit means
                out["candidates"] = list(self.candidates or ())
        else:
            out["epsilon"] = self.epsilon
        if self.domain is not None:
            out["domain"] = list(self.domain)
        if self.catch_all is not None:
            out["catch_all"] = self.catch_all
        if self.range is not None:
            out["range"] = list(self.range)
        return out

    @property
    def fingerprint(self) -> str:
        "SHA-256 (hex, first 32 characters) of the canonical JSON of :meth:`identity`"
        return hashlib.sha256(canonical_json(self.identity()).encode()).hexdigest()[:32]

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
        if derived:
            from .mechanisms import derived_parameters

            out["derived"] = derived_parameters(self)
            out["fingerprint"] = self.fingerprint
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _validate_epsilon(epsilon: Any) -> float:
    if not _is_number(epsilon) or not math.isfinite(epsilon) or epsilon <= 0:
        raise SpecError("epsilon", "must be a positive finite number")
    if epsilon > EPSILON_WARNING_THRESHOLD:
        warnings.warn(
            f"epsilon = {epsilon} gives almost no privacy (above {EPSILON_WARNING_THRESHOLD})", PrivacyWarning,
            stacklevel=3,
        )
    return float(epsilon)


def _validate_range(value_range: Any) -> tuple[float, float]:
    if not isinstance(value_range, (list, tuple)) or len(value_range) != 2:
        raise SpecError("range", "must be a list [low, high] of two numbers")
    low, high = value_range
    if not (_is_number(low) and _is_number(high)) or not (math.isfinite(low) and math.isfinite(high)):
        raise SpecError("range", "low and high must be finite numbers")
    if not low < high:
        raise SpecError("range", "low must be below high")
    return float(low), float(high)


def _validate_domain(domain: Any) -> tuple[DomainValue, ...]:
    if not isinstance(domain, (list, tuple)) or not domain:
        raise SpecError("domain", "must be a non-empty list of strings or integers")
    if len(domain) < 2:
        raise SpecError("domain", "needs at least 2 entries")
    if len(domain) > MAX_DOMAIN_SIZE:
        raise SpecError("domain", f"has more than {MAX_DOMAIN_SIZE} entries")
    for entry in domain:
        if isinstance(entry, bool) or not isinstance(entry, (str, int)):
            raise SpecError("domain", f"entries must be strings or integers, got {entry!r}")
    keys = {(type(v), v) for v in domain}
    if len(keys) != len(domain):
        raise SpecError("domain", "entries must be unique")
    return tuple(domain)
