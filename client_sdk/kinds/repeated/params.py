"""The repeated-collection kind's parameters: parsed and validated from a spec's JSON, described as JSON Schema, and
the exact (quantized) probabilities the device draws with and the estimators de-bias with.

Fields (top level of the spec JSON, beside the envelope's ``epsilon``)::

    mode             "mean" (1BitMean with alpha-point rounding) or "histogram" (dBitFlip)
    range            [low, high]: values are clamped to it
    period           "hour", "day" (default) or "week": one report per device per period
    rounding_points  mean only: s >= 2 rounding points low, low + (high - low)/(s - 1), ..., high
    buckets          histogram only: k >= 2 equal buckets of the range
    bits             histogram only: d in [1, k] buckets each device samples once and reports a bit for
    gamma            optional output perturbation: every sent bit is flipped with probability gamma in (0, 1/2)

Probabilities are multiples of 2**-32 (``client_sdk.randomness``), quantized in the direction that keeps every
privacy ratio at or below e**eps: 1BitMean's ``q = quantize_up(1 / (1 + exp_rounded(eps)))``, dBitFlip's
``q = quantize_up(1 / (1 + exp_rounded(eps / 2)))``, ``p = 1 - q`` in both, gamma quantized up.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ...errors import SpecError
from ...frozen import Frozen
from ...randomness import PROB_DENOMINATOR, exp_rounded, quantize_up
from ...spec_fields import validate_epsilon, validate_int, validate_range

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

KIND_NAME = "repeated"
MODES = ("mean", "histogram")
PERIOD_SECONDS = {"hour": 3600, "day": 86400, "week": 7 * 86400}
DEFAULT_PERIOD = "day"
# s and k bound the device state (one memoized answer per rounding point) and a device's lifetime charge (s eps)
MAX_ROUNDING_POINTS = 4096
MAX_BUCKETS = 1 << 16
FIELDS = frozenset({"mode", "range", "period", "rounding_points", "buckets", "bits", "gamma"})
_MODE_FIELDS = {"mean": frozenset({"rounding_points"}), "histogram": frozenset({"buckets", "bits"})}


class RepeatedParams(Frozen):
    """One repeated-collection campaign's parameters (validated: build with :func:`parse_params`)

    ``epsilon`` is what one memoized answer costs (the envelope's epsilon)."""

    __slots__ = ("mode", "low", "high", "epsilon", "period", "rounding_points", "buckets", "bits", "gamma",
                 "flip_threshold", "gamma_threshold")
    _fields = ("mode", "low", "high", "epsilon", "period", "rounding_points", "buckets", "bits", "gamma")
    mode: str
    low: float
    high: float
    epsilon: float
    period: str
    rounding_points: int | None
    buckets: int | None
    bits: int | None
    gamma: float | None
    flip_threshold: int  # q * 2**32: P(bit = 1) at the bottom rounding point (mean) or for another bucket
    gamma_threshold: int  # gamma * 2**32 (0 without output perturbation): a sent bit flips when randbits(32) < it

    def __init__(self, mode: str, low: float, high: float, epsilon: float, period: str = DEFAULT_PERIOD,
                 rounding_points: int | None = None, buckets: int | None = None, bits: int | None = None,
                 gamma: float | None = None) -> None:
        self._set(mode=mode, low=low, high=high, epsilon=epsilon, period=period, rounding_points=rounding_points,
                  buckets=buckets, bits=bits, gamma=gamma)
        exponent = epsilon if mode == "mean" else epsilon / 2
        q = quantize_up(1 / (1 + Fraction(exp_rounded(exponent))))
        self._set(flip_threshold=int(q * PROB_DENOMINATOR),
                  gamma_threshold=0 if gamma is None else int(quantize_up(gamma) * PROB_DENOMINATOR))

    @property
    def period_seconds(self) -> int:
        return PERIOD_SECONDS[self.period]

    @property
    def keep_threshold(self) -> int:
        "p * 2**32: P(bit = 1) at the top rounding point (mean) or for the device's own bucket (histogram)"
        return PROB_DENOMINATOR - self.flip_threshold

    def point_threshold(self, point: int) -> tuple[int, int]:
        """(numerator, denominator) of P(memoized bit = 1) at rounding point ``point`` (mean mode):
        q + (p - q) point / (s - 1), over the fixed denominator 2**32 (s - 1) (never reduced)"""
        assert self.rounding_points is not None
        steps = self.rounding_points - 1
        q = self.flip_threshold
        return q * steps + (PROB_DENOMINATOR - 2 * q) * point, PROB_DENOMINATOR * steps

    def sent_probabilities(self) -> tuple[float, float]:
        """(p', q'): P(sent bit = 1) for a memoized bit drawn with p (resp. q), after gamma's flip:
        p' = g + (1 - 2g) p, q' = g + (1 - 2g) q.  The estimators de-bias with these."""
        g = Fraction(self.gamma_threshold, PROB_DENOMINATOR)
        p = Fraction(self.keep_threshold, PROB_DENOMINATOR)
        q = Fraction(self.flip_threshold, PROB_DENOMINATOR)
        return float(g + (1 - 2 * g) * p), float(g + (1 - 2 * g) * q)

    def answer_limit(self) -> int:
        "The most distinct memoized answers a device can ever use: s (mean), min(d + 1, k) (histogram)"
        if self.mode == "mean":
            assert self.rounding_points is not None
            return self.rounding_points
        assert self.bits is not None and self.buckets is not None
        return min(self.bits + 1, self.buckets)

    def lifetime_epsilon(self) -> float:
        "The most a device's ledger can ever be charged for this campaign: epsilon per distinct memoized answer"
        return self.epsilon * self.answer_limit()


def parse_params(data: Mapping[str, Any], envelope: Any = None) -> RepeatedParams:
    """The parameters of a repeated-collection spec from its JSON; SpecError naming the field otherwise.

    ``envelope`` (anything with ``.epsilon``) supplies epsilon when the envelope has parsed it already; without one
    ``data["epsilon"]`` is validated here.  Fields of the other mode are refused (``bits`` in a mean campaign)."""
    if not isinstance(data, Mapping):
        raise SpecError("spec", "must be a JSON object")
    epsilon = float(envelope.epsilon) if envelope is not None else validate_epsilon(data.get("epsilon"))
    mode = data.get("mode")
    if mode not in MODES:
        raise SpecError("mode", f"must be one of {list(MODES)}")
    for field in sorted(FIELDS - {"mode", "range", "period", "gamma"} - _MODE_FIELDS[mode]):
        if field in data:
            raise SpecError(field, f"only a {'histogram' if mode == 'mean' else 'mean'} campaign takes {field}")
    low, high = validate_range(data.get("range"))
    period = data.get("period", DEFAULT_PERIOD)
    if period not in PERIOD_SECONDS:
        raise SpecError("period", f"must be one of {list(PERIOD_SECONDS)}")
    gamma = _validate_gamma(data.get("gamma"))
    if mode == "mean":
        s = _required_int(data, "rounding_points", 2, MAX_ROUNDING_POINTS)
        return RepeatedParams(mode, low, high, epsilon, period, rounding_points=s, gamma=gamma)
    k = _required_int(data, "buckets", 2, MAX_BUCKETS)
    d = _required_int(data, "bits", 1, k)
    return RepeatedParams(mode, low, high, epsilon, period, buckets=k, bits=d, gamma=gamma)


def _required_int(data: Mapping[str, Any], field: str, low: int, high: int) -> int:
    if field not in data:
        raise SpecError(field, f"is required: an integer in [{low}, {high}]")
    return validate_int(field, data[field], low, high)


def _validate_gamma(gamma: Any) -> float | None:
    if gamma is None:
        return None
    allowed = "must be a number in (0, 0.5): the probability that a sent bit is flipped"
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0 < gamma < 0.5:
        raise SpecError("gamma", allowed)
    if quantize_up(gamma) >= Fraction(1, 2):
        raise SpecError("gamma", f"{allowed} (at least 2**-32 below 0.5)")
    return float(gamma)


def to_dict(params: RepeatedParams) -> dict[str, Any]:
    "The kind's fields as the spec JSON holds them (``parse_params`` reads them back)"
    out: dict[str, Any] = {"mode": params.mode, "range": [params.low, params.high], "period": params.period}
    if params.mode == "mean":
        out["rounding_points"] = params.rounding_points
    else:
        out["buckets"], out["bits"] = params.buckets, params.bits
    if params.gamma is not None:
        out["gamma"] = params.gamma
    return out


def identity(params: RepeatedParams) -> dict[str, Any]:
    "The kind's part of a spec's identity (its fingerprint): its name and every field that changes a report"
    return {"kind": KIND_NAME, **to_dict(params)}


def json_schema() -> dict[str, Any]:
    "JSON Schema (draft 2020-12) of the kind's fields (the envelope's, epsilon included, are described elsewhere)"
    number = {"type": "number"}
    return {
        "type": "object",
        "properties": {
            "mode": {"enum": list(MODES), "description": "mean: 1BitMean; histogram: dBitFlip"},
            "range": {"type": "array", "items": number, "minItems": 2, "maxItems": 2,
                      "description": "[low, high]; values are clamped to it"},
            "period": {"enum": list(PERIOD_SECONDS), "default": DEFAULT_PERIOD,
                       "description": "one report per device per period"},
            "rounding_points": {"type": "integer", "minimum": 2, "maximum": MAX_ROUNDING_POINTS,
                                "description": "mean: alpha-point rounding onto s equally spaced points"},
            "buckets": {"type": "integer", "minimum": 2, "maximum": MAX_BUCKETS,
                        "description": "histogram: k equal buckets of the range"},
            "bits": {"type": "integer", "minimum": 1, "maximum": MAX_BUCKETS,
                     "description": "histogram: d buckets sampled once per device (d <= buckets)"},
            "gamma": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5,
                      "description": "output perturbation: each sent bit flipped with this probability"},
        },
        "required": ["mode", "range"],
        "allOf": [
            {"if": {"properties": {"mode": {"const": "mean"}}},
             "then": {"required": ["rounding_points"], "not": {"anyOf": [{"required": ["buckets"]},
                                                                        {"required": ["bits"]}]}}},
            {"if": {"properties": {"mode": {"const": "histogram"}}},
             "then": {"required": ["buckets", "bits"], "not": {"required": ["rounding_points"]}}},
        ],
    }
