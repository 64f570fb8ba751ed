"""A heavy_hitters campaign's parameters: the strings it takes, the algorithm and what the algorithm needs.

Spec fields (flat in the spec's JSON, beside the envelope's; ``epsilon`` is the envelope's):

=================  ================================================================================================
max_length         1..64: UTF-8 bytes, or characters when ``alphabet`` is given
alphabet           optional: 2..255 distinct characters (say "abcdefghijklmnopqrstuvwxyz."); absent: UTF-8 bytes
overflow           "truncate" (default: keep the first max_length; UTF-8 at a character boundary) or "refuse"
algorithm          "pem", "sfp" or "auto" (default): the planner picks the algorithm and its parameters with the
                   smallest detection threshold at ``expected_reports`` and epsilon (``planning.plan``)
expected_reports   the n the planner plans for: required with "auto", optional otherwise
segment_length     pem: symbols added per level (B**segment_length <= 4096, B = alphabet size + 1)
hash_count         pem: the public OLH hash functions a device draws one of (``encoding.olh_seed``); 1..65536
                   with hash_count * g <= 2**20 (default max(1, 2**12 // g), g = min(round(e^eps + 1), 4096))
sketch_width       sfp: the Count Mean Sketch's width m, a power of two in [16, 65536] (default 1024)
sketch_depth       sfp: its number of hash rows, 1..1024 (default 16), with sketch_width * sketch_depth <= 2**20
fragment_length    sfp: symbols per fragment (256 * B**fragment_length <= 2**24)
hash_family        sfp: "multiply_shift" (the only one; ``encoding.sketch_seeds``)
=================  ================================================================================================

Groups: a device draws one group uniformly (``device.make_report``).  PEM's groups 0..L-1 are its levels (level i
reports the prefix of min(max_length, (i+1) segment_length) symbols), SFP's groups 0..P-1 are its fragment
positions; the last group of both (``estimation_group``) reports the whole string and is used only to estimate the
frequencies of the strings the other groups discovered.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import SpecError
from ...frozen import Frozen
from ...spec_fields import validate_epsilon, validate_int
from .encoding import PUZZLE_BITS
from .limits import (
    DEFAULT_SKETCH_DEPTH,
    DEFAULT_SKETCH_WIDTH,
    FIELDS,  # noqa: F401  (re-exported: the kind's fields beside its parameters)
    HASH_FAMILIES,
    KIND_NAME,
    MAX_ALPHABET,
    MAX_EXPECTED_REPORTS,
    MAX_FRAGMENT_CANDIDATES,
    MAX_HASH_COUNT,
    MAX_LENGTH,
    MAX_LEVEL_BRANCHING,
    MAX_OLH_CELLS,
    MAX_SKETCH_CELLS,
    MIN_EXPECTED_REPORTS,
    PEM_FIELDS,
    SFP_FIELDS,
)
from .oracles import OlhConstants
from .planning import default_hash_count, plan

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

ALGORITHMS = ("pem", "sfp", "auto")
OVERFLOWS = ("truncate", "refuse")


class HeavyHittersParams(Frozen):
    "The validated parameters (``params_from_dict``); ``algorithm`` is the resolved one, ``requested`` the spec's"

    __slots__ = _fields = ("epsilon", "max_length", "alphabet", "overflow", "algorithm", "requested",
                           "expected_reports", "segment_length", "hash_count", "sketch_width", "sketch_depth",
                           "fragment_length", "hash_family")
    epsilon: float
    max_length: int
    alphabet: str | None
    overflow: str
    algorithm: str
    requested: str
    expected_reports: int | None
    segment_length: int | None
    hash_count: int | None
    sketch_width: int | None
    sketch_depth: int | None
    fragment_length: int | None
    hash_family: str | None

    def __init__(self, epsilon: float, max_length: int, alphabet: str | None = None, overflow: str = "truncate",
                 algorithm: str = "pem", requested: str | None = None, expected_reports: int | None = None,
                 segment_length: int | None = None, hash_count: int | None = None, sketch_width: int | None = None,
                 sketch_depth: int | None = None, fragment_length: int | None = None,
                 hash_family: str | None = None) -> None:
        self._set(epsilon=epsilon, max_length=max_length, alphabet=alphabet, overflow=overflow, algorithm=algorithm,
                  requested=requested or algorithm, expected_reports=expected_reports,
                  segment_length=segment_length, hash_count=hash_count, sketch_width=sketch_width,
                  sketch_depth=sketch_depth, fragment_length=fragment_length, hash_family=hash_family)

    @property
    def symbol_count(self) -> int:
        "B: the symbols a position can hold, END included"
        return (256 if self.alphabet is None else len(self.alphabet)) + 1

    @property
    def alphabet_index(self) -> dict[str, int]:
        "character -> symbol (1-based; 0 is END)"
        return {character: i + 1 for i, character in enumerate(self.alphabet or "")}

    @property
    def discovery_groups(self) -> int:
        "L levels (pem) or P fragment positions (sfp)"
        step = self.segment_length if self.algorithm == "pem" else self.fragment_length
        assert step is not None
        return -(-self.max_length // step)

    @property
    def estimation_group(self) -> int:
        "The group that reports the whole string, for the discovered strings' frequencies only"
        return self.discovery_groups

    @property
    def groups(self) -> int:
        return self.discovery_groups + 1

    def prefix_length(self, level: int) -> int:
        "pem: the symbols level ``level`` reports (the estimation group: the whole string)"
        assert self.segment_length is not None
        return min(self.max_length, (level + 1) * self.segment_length)

    def fragment(self, symbols: tuple[int, ...], position: int) -> tuple[int, ...]:
        "sfp: the fragment at ``position``, padded with END past max_length"
        assert self.fragment_length is not None
        start = position * self.fragment_length
        piece = symbols[start:start + self.fragment_length]
        return piece + (0,) * (self.fragment_length - len(piece))

    def identity(self) -> dict:
        "Every field that changes what a report means, for the fingerprint (the resolved algorithm's fields)"
        out: dict[str, Any] = {"kind": KIND_NAME, "max_length": self.max_length, "overflow": self.overflow,
                               "algorithm": self.algorithm}
        if self.alphabet is not None:
            out["alphabet"] = self.alphabet
        if self.requested != self.algorithm:
            out["requested_algorithm"] = self.requested
        if self.expected_reports is not None:
            out["expected_reports"] = self.expected_reports
        for key in PEM_FIELDS if self.algorithm == "pem" else SFP_FIELDS:
            out[key] = getattr(self, key)
        return out

    def to_dict(self) -> dict:
        "The spec's fields as given (``algorithm`` as requested; auto's choices are derived, not repeated)"
        out: dict[str, Any] = {"max_length": self.max_length, "overflow": self.overflow, "algorithm": self.requested}
        if self.alphabet is not None:
            out["alphabet"] = self.alphabet
        if self.expected_reports is not None:
            out["expected_reports"] = self.expected_reports
        if self.requested != "auto":
            for key in PEM_FIELDS if self.algorithm == "pem" else SFP_FIELDS:
                out[key] = getattr(self, key)
        return out


def params_from_dict(data: Mapping[str, Any], epsilon: Any) -> HeavyHittersParams:
    "The parameters from a spec's JSON (its kind fields; ``epsilon`` the envelope's); SpecError naming the field"
    epsilon = validate_epsilon(epsilon)
    max_length = validate_int("max_length", data.get("max_length"), 1, MAX_LENGTH)
    alphabet = _alphabet(data.get("alphabet"))
    overflow = data.get("overflow", "truncate")
    if overflow not in OVERFLOWS:
        raise SpecError("overflow", f"must be one of {list(OVERFLOWS)}")
    algorithm = data.get("algorithm", "auto")
    if algorithm not in ALGORITHMS:
        raise SpecError("algorithm", f"must be one of {list(ALGORITHMS)}")
    expected = data.get("expected_reports")
    if expected is not None or algorithm == "auto":
        if expected is None:
            raise SpecError("expected_reports", "is required with algorithm 'auto' (the n the planner plans for)")
        expected = validate_int("expected_reports", expected, MIN_EXPECTED_REPORTS, MAX_EXPECTED_REPORTS)
    for field, owner in [(f, "pem") for f in PEM_FIELDS] + [(f, "sfp") for f in SFP_FIELDS]:
        if field in data and algorithm != owner:
            why = "the planner chooses it with 'auto'" if algorithm == "auto" else f"it is an {owner} field"
            raise SpecError(field, f"not allowed with algorithm {algorithm!r}: {why}")
    base = HeavyHittersParams(epsilon, max_length, alphabet, overflow, "pem", algorithm, expected)
    if algorithm == "auto":
        assert expected is not None
        return plan(base, expected)
    if algorithm == "pem":
        return base._replace(segment_length=_segment_length(base, data.get("segment_length", 1)),
                             hash_count=_hash_count(base, data.get("hash_count")))
    width = data.get("sketch_width", DEFAULT_SKETCH_WIDTH)
    if isinstance(width, bool) or not isinstance(width, int) or width < 16 or width > 65536 or width & (width - 1):
        raise SpecError("sketch_width", "must be a power of two in [16, 65536]")
    depth = validate_int("sketch_depth", data.get("sketch_depth", DEFAULT_SKETCH_DEPTH), 1, 1024)
    if width * depth > MAX_SKETCH_CELLS:
        raise SpecError("sketch_depth", f"sketch_width * sketch_depth = {width} * {depth} exceeds {MAX_SKETCH_CELLS} "
                                        "(the count table of a group)")
    hash_family = data.get("hash_family", HASH_FAMILIES[0])
    if hash_family not in HASH_FAMILIES:
        raise SpecError("hash_family", f"must be one of {list(HASH_FAMILIES)}")
    fragment = _fragment_length(base, data.get("fragment_length", 1))
    return base._replace(algorithm="sfp", sketch_width=width, sketch_depth=depth, fragment_length=fragment,
                         hash_family=hash_family)


def _alphabet(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 2 <= len(value) <= MAX_ALPHABET:
        raise SpecError("alphabet", f"must be a string of 2 to {MAX_ALPHABET} distinct characters")
    if len(set(value)) != len(value):
        raise SpecError("alphabet", "must not repeat a character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SpecError("alphabet", "must be valid UTF-8 (no lone surrogates)") from None
    return value


def _segment_length(base: HeavyHittersParams, value: Any) -> int:
    length = validate_int("segment_length", value, 1, base.max_length)
    if base.symbol_count**length > MAX_LEVEL_BRANCHING:
        raise SpecError("segment_length", f"{base.symbol_count}**{length} extensions per prefix exceed "
                                          f"{MAX_LEVEL_BRANCHING} (B = alphabet size + 1 for END)")
    return length


def _hash_count(base: HeavyHittersParams, value: Any) -> int:
    g = OlhConstants(base.epsilon).g
    if value is None:
        return default_hash_count(base.epsilon)
    count = validate_int("hash_count", value, 1, MAX_HASH_COUNT)
    if count * g > MAX_OLH_CELLS:
        raise SpecError("hash_count", f"hash_count * g = {count} * {g} exceeds {MAX_OLH_CELLS} (the count table of a "
                                      "group)")
    return count


def _fragment_length(base: HeavyHittersParams, value: Any) -> int:
    length = validate_int("fragment_length", value, 1, base.max_length)
    if (1 << PUZZLE_BITS) * base.symbol_count**length > MAX_FRAGMENT_CANDIDATES:
        raise SpecError("fragment_length", f"256 * {base.symbol_count}**{length} (puzzle hash, fragment) pairs "
                                           f"exceed {MAX_FRAGMENT_CANDIDATES}")
    return length


def json_schema() -> dict:
    "JSON Schema of the kind's fields (the cross-field rules are params_from_dict's)"
    integer = {"type": "integer"}
    return {
        "type": "object",
        "required": ["max_length"],
        "properties": {
            "max_length": {**integer, "minimum": 1, "maximum": MAX_LENGTH},
            "alphabet": {"type": "string", "minLength": 2, "maxLength": MAX_ALPHABET},
            "overflow": {"enum": list(OVERFLOWS), "default": "truncate"},
            "algorithm": {"enum": list(ALGORITHMS), "default": "auto"},
            "expected_reports": {**integer, "minimum": MIN_EXPECTED_REPORTS, "maximum": MAX_EXPECTED_REPORTS},
            "segment_length": {**integer, "minimum": 1, "maximum": MAX_LENGTH, "default": 1},
            "hash_count": {**integer, "minimum": 1, "maximum": MAX_HASH_COUNT},
            "sketch_width": {**integer, "enum": [1 << k for k in range(4, 17)], "default": DEFAULT_SKETCH_WIDTH},
            "sketch_depth": {**integer, "minimum": 1, "maximum": 1024, "default": DEFAULT_SKETCH_DEPTH},
            "fragment_length": {**integer, "minimum": 1, "maximum": MAX_LENGTH, "default": 1},
            "hash_family": {"enum": list(HASH_FAMILIES), "default": HASH_FAMILIES[0]},
        },
    }
