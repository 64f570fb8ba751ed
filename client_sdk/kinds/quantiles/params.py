"""The parameters of a quantiles campaign: the range, its buckets, the tree over them and each level's oracle.

A quantiles spec is flat, like every spec; its own fields are

==========  ========================================================================================
range       [low, high]: values are clamped into it (geometric bucketing: 0 < low)
bucketing   "uniform" (default): ``buckets`` buckets of equal width; "geometric": boundaries
            low, low*growth, low*growth**2, ... (HDR / Prometheus native histograms), the last one high
buckets     uniform: the number of buckets, 2..MAX_BUCKETS; geometric: derived from growth
growth      geometric only: the factor between consecutive boundaries, in (1, MAX_GROWTH]
branching   the tree's branching factor B in 2..MAX_BRANCHING, or "auto" (default): the B minimising the
            average variance of range queries (``tree.best_branching``)
oracle      the frequency oracle of every level: "olh" (default) or "hadamard"
unit        (the envelope's member) what the values measure, "ms": part of the identity when given
==========  ========================================================================================

Epsilon is the envelope's: each report spends all of it on one level (``device.make_report``).

Geometric boundaries are computed by repeated multiplication (``low * growth`` in IEEE doubles, never ``pow``
or ``log``), so every SDK computes the same boundaries bit for bit and puts a value in the same bucket.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import SpecError
from ...frozen import Frozen
from ...spec_fields import is_finite_number, validate_int, validate_range, validate_unit
from ...spec_prio3 import DISTRIBUTED_FIELDS, MAX_PRIO3_LENGTH, WINDOWS, Prio3Params, prio3_from_dict
from .tree import MAX_LEAVES, best_branching, tree_height

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

KIND_NAME = "quantiles"
FIELDS = frozenset({"range", "bucketing", "buckets", "growth", "branching", "oracle"})
BUCKETINGS = ("uniform", "geometric")
ORACLES = ("olh", "hadamard")
MIN_BUCKETS = 2
MAX_BUCKETS = 4096
MIN_BRANCHING = 2
MAX_BRANCHING = 16
MAX_GROWTH = 10.0
MIN_GROWTH = 1.0 + 1e-6  # a factor closer to 1 needs more than MAX_BUCKETS buckets over any useful range
AUTO = "auto"


class QuantilesParams(Frozen):
    """A quantiles campaign's own parameters, validated (:func:`parse_params`); ``branching`` is resolved
    (``branching_requested`` keeps what the spec said, "auto" or the number)"""

    __slots__ = _fields = ("low", "high", "bucketing", "buckets", "growth", "branching", "branching_requested",
                           "oracle", "epsilon", "unit", "prio3")
    low: float
    high: float
    bucketing: str
    buckets: int
    growth: float | None
    branching: int
    branching_requested: int | str
    oracle: str
    epsilon: float
    unit: str | None
    prio3: Prio3Params | None  # trust "distributed": a Prio3 histogram over the buckets (``with_prio3``)

    def __init__(self, low: float, high: float, bucketing: str, buckets: int, growth: float | None,
                 branching: int, branching_requested: int | str, oracle: str, epsilon: float,
                 unit: str | None = None, prio3: Prio3Params | None = None) -> None:
        self._set(low=low, high=high, bucketing=bucketing, buckets=buckets, growth=growth, branching=branching,
                  branching_requested=branching_requested, oracle=oracle, epsilon=epsilon, unit=unit, prio3=prio3)

    @property
    def height(self) -> int:
        "h: the number of reported levels (level l has B**l nodes; level h holds the leaves)"
        return tree_height(self.buckets, self.branching)

    @property
    def leaves(self) -> int:
        "B**h >= buckets: the leaves past the last bucket are padding (true frequency 0)"
        return int(self.branching ** self.height)

    def level_size(self, level: int) -> int:
        "The number of nodes at ``level`` (1..h)"
        return int(self.branching ** level)

    @property
    def boundaries(self) -> tuple[float, ...]:
        "The buckets+1 boundaries, low first and high last"
        return bucket_boundaries(self.low, self.high, self.bucketing, self.buckets, self.growth)

    def identity(self) -> dict:
        "This kind's part of the spec's identity (its fingerprint): every field the reports depend on"
        out: dict[str, Any] = {"range": [self.low, self.high], "bucketing": self.bucketing, "buckets": self.buckets,
                               "branching": self.branching, "oracle": self.oracle}
        if self.growth is not None:
            out["growth"] = self.growth
        if self.unit is not None:
            out["unit"] = self.unit
        if self.prio3 is not None:  # distributed: the circuit, noise and batch rules (no tree, no oracle)
            for member in ("branching", "oracle"):
                del out[member]
            out.update(self.prio3.identity())
        return out

    def to_dict(self) -> dict:
        """The fields as a spec's JSON shows them, parsed back to the same params (``branching`` as requested;
        geometric bucketing shows ``growth`` only: its bucket count is derived)"""
        out = self.identity()
        if self.prio3 is None:
            out["branching"] = self.branching_requested
        else:
            out.pop("chunk_length", None)  # derived, not an input
        if self.bucketing == "geometric":
            del out["buckets"]
        return out

    def derived(self) -> dict:
        "What a served spec shows under ``derived``"
        if self.prio3 is not None:
            return {"buckets": self.buckets, "chunk_length": self.prio3.chunk_length,
                    "sensitivity": self.prio3.sensitivity}
        return {"branching": self.branching, "height": self.height, "leaves": self.leaves, "buckets": self.buckets}


def bucket_boundaries(low: float, high: float, bucketing: str, buckets: int,
                      growth: float | None) -> tuple[float, ...]:
    "The boundaries of ``buckets`` buckets over [low, high] (module docstring: deterministic in every SDK)"
    if bucketing == "uniform":
        width = high - low
        return tuple([low + width * i / buckets for i in range(buckets)] + [high])
    assert growth is not None
    out = [low]
    for _ in range(buckets - 1):
        out.append(out[-1] * growth)
    return tuple(out + [high])


def geometric_bucket_count(low: float, high: float, growth: float) -> int:
    "The number of geometric buckets: the smallest b with low * growth**b >= high (repeated multiplication)"
    boundary, count = low, 0
    while boundary < high:
        boundary *= growth
        count += 1
        if count > MAX_BUCKETS:
            raise SpecError("growth", f"gives more than {MAX_BUCKETS} buckets over the range: use a larger factor")
    return max(count, MIN_BUCKETS)


def parse_params(data: Mapping[str, Any], epsilon: float) -> QuantilesParams:
    """The params of a quantiles spec from its JSON (``data``: the whole flat spec; only this kind's fields are
    read) and the envelope's validated epsilon; SpecError naming the field otherwise"""
    if "range" not in data:
        raise SpecError("range", "is required: [low, high], the values' range")
    low, high = validate_range(data["range"])
    bucketing = data.get("bucketing", "uniform")
    if bucketing not in BUCKETINGS:
        raise SpecError("bucketing", f"must be one of {list(BUCKETINGS)}")
    growth: float | None = None
    if bucketing == "uniform":
        if "growth" in data:
            raise SpecError("growth", "applies to geometric bucketing only")
        if "buckets" not in data:
            raise SpecError("buckets", f"is required for uniform bucketing: an integer in [{MIN_BUCKETS}, "
                                       f"{MAX_BUCKETS}]")
        buckets = validate_int("buckets", data["buckets"], MIN_BUCKETS, MAX_BUCKETS)
    else:
        if "buckets" in data:
            raise SpecError("buckets", "is derived from growth for geometric bucketing: give growth only")
        if low <= 0:
            raise SpecError("range", "geometric bucketing needs low > 0 (the first boundary)")
        growth = data.get("growth")
        if not is_finite_number(growth) or not MIN_GROWTH <= growth <= MAX_GROWTH:  # type: ignore[operator]
            raise SpecError("growth", f"must be a number in ({MIN_GROWTH - 1e-6:g}, {MAX_GROWTH:g}] for geometric "
                                      "bucketing")
        growth = float(growth)  # type: ignore[arg-type]
        buckets = geometric_bucket_count(low, high, growth)
    oracle = data.get("oracle", "olh")
    if oracle not in ORACLES:
        raise SpecError("oracle", f"must be one of {list(ORACLES)}")
    requested = data.get("branching", AUTO)
    if requested == AUTO:
        branching = best_branching(buckets, MAX_BRANCHING)
    else:
        branching = validate_int("branching", requested, MIN_BRANCHING, MAX_BRANCHING)
        if branching ** tree_height(buckets, branching) > MAX_LEAVES:
            raise SpecError("branching", f"pads {buckets} buckets to more than {MAX_LEAVES} leaves: choose another "
                                         "branching factor or 'auto'")
    return QuantilesParams(low, high, bucketing, buckets, growth, branching, requested, oracle, float(epsilon),
                           validate_unit(data.get("unit")))


# trust "distributed": the Prio3 fields a quantiles spec may give (the circuit is always a histogram of the buckets)
PRIO3_FIELDS = frozenset(DISTRIBUTED_FIELDS) - {"trust", "max_measurement", "length", "max_weight", "coins",
                                                 "honest_fraction"}
DISTRIBUTED_NOISE = ("gaussian", "laplace")  # the aggregators' noise ("coins" is for prio3 campaigns only)


def with_prio3(params: QuantilesParams, data: Mapping[str, Any], delta: float | None) -> QuantilesParams:
    """``params`` of a distributed quantiles spec: a Prio3 histogram of ``buckets`` entries (one device adds one to
    one bucket: the aggregators' noise is a histogram's), its noise and batch rules from ``data``"""
    if params.buckets > MAX_PRIO3_LENGTH:
        raise SpecError("buckets", f"at most {MAX_PRIO3_LENGTH} buckets with trust 'distributed' (the Prio3 limit)")
    for member in ("branching", "oracle"):
        if member in data:
            raise SpecError(member, "not allowed with trust 'distributed' (the aggregators count every bucket)")
    if data.get("prio3", "histogram") != "histogram":
        raise SpecError("prio3", "must be 'histogram' (or absent) for a distributed quantiles campaign")
    if data.get("noise") not in DISTRIBUTED_NOISE:
        raise SpecError("noise", f"must be one of {list(DISTRIBUTED_NOISE)} for a distributed quantiles campaign")
    source = {key: data[key] for key in PRIO3_FIELDS if key in data}
    source.update({"prio3": "histogram", "epsilon": params.epsilon, "domain": list(range(params.buckets))})
    _, _, prio3 = prio3_from_dict(source, delta)
    return params._replace(prio3=prio3)


def json_schema() -> dict:
    "JSON Schema (draft 2020-12) of this kind's fields"
    return {
        "type": "object",
        "required": ["range"],
        "properties": {
            "range": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
                      "description": "[low, high]; values outside are clamped (geometric: low > 0)"},
            "bucketing": {"enum": list(BUCKETINGS), "default": "uniform"},
            "buckets": {"type": "integer", "minimum": MIN_BUCKETS, "maximum": MAX_BUCKETS,
                        "description": "uniform bucketing: the number of buckets (required there)"},
            "growth": {"type": "number", "exclusiveMinimum": 1, "maximum": MAX_GROWTH,
                       "description": "geometric bucketing: the ratio of consecutive boundaries (required there)"},
            "branching": {"oneOf": [{"type": "integer", "minimum": MIN_BRANCHING, "maximum": MAX_BRANCHING},
                                    {"const": AUTO}], "default": AUTO},
            "oracle": {"enum": list(ORACLES), "default": "olh"},
            # trust "distributed": the aggregators' Prio3 histogram of the buckets (with_prio3)
            "prio3": {"const": "histogram"}, "noise": {"enum": list(DISTRIBUTED_NOISE)},
            "min_batch": {"type": "integer", "minimum": 2}, "window": {"enum": list(WINDOWS)},
        },
        "allOf": [
            {"if": {"properties": {"trust": {"const": "distributed"}}, "required": ["trust"]},
             "then": {"required": ["noise"], "not": {"anyOf": [{"required": ["branching"]},
                                                               {"required": ["oracle"]}]}},
             "else": {"not": {"anyOf": [{"required": [name]} for name in ("prio3", "noise", "min_batch",
                                                                              "window")]}}},
            {"if": {"properties": {"bucketing": {"const": "geometric"}}, "required": ["bucketing"]},
             "then": {"required": ["growth"], "not": {"required": ["buckets"]}},
             "else": {"required": ["buckets"], "not": {"required": ["growth"]}}},
        ],
    }
