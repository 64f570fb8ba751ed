"""An estimate as one typed object with one JSON form: what the reports read instead of dicts and ``.get()``.

Every kind's estimate side (``estimators.kinds``) makes its estimate's JSON (estimators/report/report.schema.json:
``kind``, ``campaign``, ``n``, ``confidence``, ``values`` and, per kind, the mean, the central-DP baseline, the
trust models of a distributed release...) and reads it into its own type: a subclass of :class:`Estimate`, which
holds what every estimate has (:class:`EstimatedMean` adds a mean's members).  :meth:`Estimate.from_json` reads
that JSON once, wherever it came from (the collector's ``/estimate``, a database, a file), as its kind's type;
:meth:`Estimate.to_json` gives back the JSON it was read from, member for member, so a JSON report's bytes do not
depend on which members a renderer reads.  Rows are read by the names the estimators write, and by the reference
RAPPOR decoder's column names (``string``, ``proportion``, ``prop_*``), the first present winning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeGuard, TypeVar

# Field names tried in order when reading a row.  Proportions come first: in the RAPPOR decoder's rows (the
# reference decoder's columns) "estimate" and "std_error" are counts and "proportion", "prop_*" the fractions.
_VALUE_FIELDS = ("value", "string", "candidate", "name")
_ESTIMATE_FIELDS = ("proportion", "estimate", "fraction", "frequency")
_STD_ERROR_FIELDS = ("prop_std_error", "proportion_std_error", "std_error")
_CI_LOW_FIELDS = ("prop_low_95", "proportion_ci_low", "ci_low")
_CI_HIGH_FIELDS = ("prop_high_95", "proportion_ci_high", "ci_high")
ROW_LIST_FIELDS = ("values", "estimates", "candidates", "rows")
COMPARED_MODELS = ("local", "shuffled", "distributed", "central")  # the trust models a report compares under
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class ValueRow:
    "One row of a frequency-like estimate, whatever the estimator called its fields"

    value: str
    estimate: float
    std_error: float | None
    ci_low: float | None
    ci_high: float | None
    norm_sub: float | None

    @property
    def includes_zero(self) -> bool:
        "True when the interval contains 0: the value is not distinguishable from absent"
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low <= 0.0 <= self.ci_high

    @property
    def below_zero(self) -> bool:
        "True when the whole interval is negative (happens by chance about (1 - confidence)/2 of the time)"
        return self.ci_high is not None and self.ci_high < 0.0


@dataclass(frozen=True)
class EstimateFlag:
    "One warning on an estimate: a code from ``estimators.flags.FLAG_CODES`` and the sentence every report prints"

    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}

    @classmethod
    def from_json(cls, raw: Any) -> EstimateFlag | None:
        "A flag from its JSON, None for anything that is not one"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("code"), str):
            return None
        return cls(raw["code"], str(raw.get("message") or raw["code"]))


@dataclass(frozen=True)
class Defence:
    "The test that refused reports at ingestion (``defence``): a unary spec's ``max_ones`` (estimators.ones_test)"

    test: str
    max_ones: int | None
    false_rejection: float | None  # the share of honest reports it refuses


@dataclass(frozen=True)
class TrustModel:
    "One trust model's error for the same question and epsilon (a distributed release states four)"

    std_error: float | None
    ci_halfwidth: float | None
    mechanism: str | None
    mode: str | None  # the distributed model's noise mode
    epsilon0: float | None = None  # the shuffled model's local epsilon
    delta: float | None = None


@dataclass(frozen=True)
class CentralBaseline:
    "What a trusted curator would report at the same epsilon, replace-one (``central_dp``, estimators.central)"

    mechanism: str | None
    ci_halfwidth: float | None
    std_error: float | None
    ldp_to_central_ratio: float | None
    laplace_scale: float | None
    gaussian_delta: float | None


@dataclass(frozen=True)
class Estimate:
    """What every estimate has, of any kind: one window's estimate of one campaign, typed from its JSON.

    Each kind's estimate side reads its JSON into its own subclass (``estimators.kinds``: the local kind's
    frequencies, mean and RAPPOR candidates, Prio3's release), and the report side of the same kind lays it out;
    nothing asks an estimate which members it has.  ``Estimate.from_json`` reads the JSON as its kind's estimate
    (the base for a kind with no subclass of its own); ``Sub.from_json`` reads it as ``Sub``.  :meth:`to_json`
    gives back the JSON it was read from, member for member.  Numbers the JSON lacks (or holds as null or as
    something else) are None."""

    trust: str
    kind: str | None  # the estimate's type ("frequency", "mean", "rappor"), not its campaign's kind
    campaign: str | None
    n: int | None
    confidence: float | None  # None: the JSON's is not a number (absent: DEFAULT_CONFIDENCE)
    mechanism: str | None
    epsilon: float | None  # RAPPOR's: its epsilon_one
    delta: float | None
    unit: str | None
    target: str | None
    status: str | None
    message: str
    values: tuple[ValueRow, ...]  # the per-value rows (none for a mean)
    central: CentralBaseline | None
    flags: tuple[EstimateFlag, ...]  # warnings to print before the numbers (estimators.flags)
    json: Mapping[str, Any] = field(repr=False)
    quantity: ClassVar[str] = "one value's fraction"  # what one standard error is of, as the reports name it

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        "Read an estimate's JSON (a dict as the estimators, the API or a file give it): as its kind's on the base"
        if cls is Estimate:
            # imported here: the registry loads the kinds, whose estimate types import this module
            from .kinds.base import read_estimate

            return read_estimate(data)
        return cls.read(data)

    @classmethod
    def read(cls: type[E], data: Mapping[str, Any]) -> E:
        "The JSON read as this class, whatever kind it names"
        return cls(**cls.members(data))

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        "This class's members from the JSON (a subclass adds its own to its base's)"
        confidence = data.get("confidence", DEFAULT_CONFIDENCE)
        central = data.get("central_dp")
        n = data.get("n", data.get("reports"))
        return dict(
            trust=str(data.get("trust") or "local"), kind=_text(data.get("kind")), campaign=_text(data.get("campaign")),
            n=n if isinstance(n, int) and not isinstance(n, bool) else None,
            confidence=float(confidence) if is_number(confidence) else None,
            mechanism=_text(data.get("mechanism")),
            epsilon=_number(data["epsilon"] if "epsilon" in data else data.get("epsilon_one")),
            delta=_number(data.get("delta")), unit=_text(data.get("unit")) or None, target=_text(data.get("target")),
            status=_text(data.get("status")), message=str(data.get("message") or ""),
            values=_rows(data),
            central=_central(central) if isinstance(central, Mapping) else None,
            flags=tuple(flag for flag in map(EstimateFlag.from_json, data.get("flags") or [])
                        if flag is not None) if isinstance(data.get("flags"), list) else (),
            json=MappingProxyType(dict(data)),
        )

    def to_json(self) -> dict[str, Any]:
        "The JSON this estimate was read from, member for member"
        return dict(self.json)

    @property
    def z_confidence(self) -> float:
        "The confidence level, the default where the JSON's is not a number"
        return DEFAULT_CONFIDENCE if self.confidence is None else self.confidence

    def typical_halfwidth(self) -> float | None:
        "The CI half-width a report compares with other trust models': the mean one over the values"
        widths = [(r.ci_high - r.ci_low) / 2 for r in self.values if r.ci_low is not None and r.ci_high is not None]
        return sum(widths) / len(widths) if widths else None


E = TypeVar("E", bound=Estimate)


@dataclass(frozen=True)
class EstimatedMean(Estimate):
    "An estimate of one mean (a local numeric campaign's, a Prio3 sum's): a kind's mean estimate subclasses it"

    mean: float | None
    mean_clamped: float | None
    std_error: float | None
    ci_low: float | None
    ci_high: float | None
    range: tuple[float, float] | None  # the value range
    quantity: ClassVar[str] = "the mean"

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().members(data), "mean": _number(data.get("mean")),
                "mean_clamped": _number(data.get("mean_clamped")), "std_error": _number(data.get("std_error")),
                "ci_low": _number(data.get("ci_low")), "ci_high": _number(data.get("ci_high")),
                "range": _pair(data.get("range"))}

    def typical_halfwidth(self) -> float | None:
        "The mean's CI half-width"
        low, high = self.ci_low, self.ci_high
        return (high - low) / 2 if low is not None and high is not None else None


EstimateLike = Estimate | Mapping[str, Any]  # an estimate, or its JSON (read on the spot)


def as_estimate(result: Estimate | Mapping[str, Any]) -> Estimate:
    "``result`` as an :class:`Estimate` (read from its JSON as its kind's when it is one)"
    return result if isinstance(result, Estimate) else Estimate.from_json(result)


def typed_as(cls: type[E], result: Estimate | Mapping[str, Any]) -> E:
    """``result`` as ``cls``, the type a kind's report side laid it out as (read from its JSON when it is one);
    TypeError when it is another"""
    estimate = as_estimate(result)
    if not isinstance(estimate, cls):
        raise TypeError(f"a {cls.__name__} was expected, not a {type(estimate).__name__}")
    return estimate


def row_list_key(data: Mapping[str, Any]) -> str | None:
    "Which member of an estimate's JSON holds the per-value rows"
    return next((key for key in ROW_LIST_FIELDS if isinstance(data.get(key), list)), None)


def parse_row(raw: Any, index: int = 0) -> ValueRow | None:
    "One row, whatever the estimator called its fields; None when it has no estimate"
    if not isinstance(raw, Mapping):
        return None
    estimate = _first_number(raw, _ESTIMATE_FIELDS)
    if estimate is None:
        return None
    return ValueRow(
        value=str(next((raw[name] for name in _VALUE_FIELDS if raw.get(name) is not None), f"#{index}")),
        estimate=estimate,
        std_error=_first_number(raw, _STD_ERROR_FIELDS),
        ci_low=_first_number(raw, _CI_LOW_FIELDS),
        ci_high=_first_number(raw, _CI_HIGH_FIELDS),
        norm_sub=_first_number(raw, ("norm_sub",)),
    )


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _rows(data: Mapping[str, Any]) -> tuple[ValueRow, ...]:
    "The per-value rows (none for a mean); rows without an estimate are skipped"
    key = row_list_key(data) if data.get("kind") != "mean" else None
    rows = (parse_row(raw, index) for index, raw in enumerate(data[key] if key is not None else []))
    return tuple(row for row in rows if row is not None)


def _central(block: Mapping[str, Any]) -> CentralBaseline:
    laplace, gaussian = block.get("laplace"), block.get("gaussian")
    return CentralBaseline(
        mechanism=_text(block.get("mechanism")), ci_halfwidth=_number(block.get("ci_halfwidth")),
        std_error=_number(block.get("std_error")), ldp_to_central_ratio=_number(block.get("ldp_to_central_ratio")),
        laplace_scale=_number(laplace.get("scale")) if isinstance(laplace, Mapping) else None,
        gaussian_delta=_number(gaussian.get("delta")) if isinstance(gaussian, Mapping) else None)


def defence_of(block: Mapping[str, Any]) -> Defence:
    max_ones = block.get("max_ones")
    return Defence(test=str(block.get("test") or ""), false_rejection=_number(block.get("false_rejection")),
                   max_ones=max_ones if isinstance(max_ones, int) and not isinstance(max_ones, bool) else None)


def trust_model(model: Mapping[str, Any]) -> TrustModel:
    return TrustModel(std_error=_number(model.get("std_error")), ci_halfwidth=_number(model.get("ci_halfwidth")),
                      mechanism=_text(model.get("mechanism")), mode=_text(model.get("mode")),
                      epsilon0=_number(model.get("epsilon0")), delta=_number(model.get("delta")))


def _first_number(raw: Mapping[str, Any], names: Sequence[str]) -> float | None:
    "The value of the first of ``names`` the row has (None if that one is null or not a number)"
    value = next((raw[name] for name in names if name in raw), None)
    return float(value) if is_number(value) else None


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, Sequence) and len(value) == 2 and is_number(value[0]) and is_number(value[1]):
        return float(value[0]), float(value[1])
    return None


def _number(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
