"""A poplar1 campaign's parameters and its one encoding of a string as Poplar1's measurement.

Spec fields (flat in the spec's JSON, beside the envelope's; ``epsilon`` and ``delta`` are the whole collection's):

===========  ========================================================================================================
bits         the input length in bits, a multiple of 8 in [8, 256]: a string is ``bits // 8`` bytes
overflow     "truncate" (default: the first ``bits // 8`` bytes) or "refuse" (a longer string: InvalidValue)
threshold    the threshold rule: a prefix is kept when its de-biased count reaches threshold x the batch's reports
stride       bits a level of the walk adds (1..8, dividing ``bits``): levels stride-1, 2 stride-1, ..., bits-1
min_batch    the fewest reports a level may aggregate (>= 2, required); both aggregators refuse fewer
===========  ========================================================================================================

A string is its UTF-8 bytes (``bytes`` as given), then padded with 0x00 to ``bits // 8`` bytes; its bits are
the measurement, most significant bit of the first byte first (``encode_value``; ``decode_prefix`` inverts it).
"""

from __future__ import annotations

from ...errors import SpecError
from ...frozen import Frozen
from ...spec_fields import is_finite_number, validate_epsilon, validate_int
from .limits import (
    DEFAULT_STRIDE,
    KIND_NAME,
    MAX_BITS,
    MAX_MIN_BATCH,
    MAX_STRIDE,
    MIN_BITS,
    NOISE,
    OVERFLOWS,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any


class Poplar1Params(Frozen):
    "The validated parameters of a poplar1 campaign (``params_from_dict``)"

    __slots__ = _fields = ("epsilon", "delta", "bits", "overflow", "threshold", "stride", "min_batch")
    epsilon: float
    delta: float
    bits: int
    overflow: str
    threshold: float
    stride: int
    min_batch: int

    def __init__(self, epsilon: float, delta: float, bits: int, overflow: str = "truncate", threshold: float = 0.01,
                 stride: int = DEFAULT_STRIDE, min_batch: int = 2) -> None:
        self._set(epsilon=epsilon, delta=delta, bits=bits, overflow=overflow, threshold=threshold, stride=stride,
                  min_batch=min_batch)

    @property
    def length(self) -> int:
        "The bytes of one input"
        return self.bits // 8

    @property
    def levels(self) -> tuple[int, ...]:
        "The levels the walk visits, in order (0-based: level l aggregates prefixes of l + 1 bits)"
        return tuple(range(self.stride - 1, self.bits, self.stride))

    def identity(self) -> dict:
        return {"kind": KIND_NAME, "bits": self.bits, "overflow": self.overflow, "threshold": self.threshold,
                "stride": self.stride, "min_batch": self.min_batch, "noise": NOISE}

    def to_dict(self) -> dict:
        return {"bits": self.bits, "overflow": self.overflow, "threshold": self.threshold, "stride": self.stride,
                "min_batch": self.min_batch}


def params_from_dict(data: dict, delta: float | None) -> Poplar1Params:
    "The parameters of a spec's JSON (``delta`` the envelope's); SpecError naming the field otherwise"
    epsilon = validate_epsilon(data.get("epsilon"))
    if delta is None:
        raise SpecError("delta", "is required: each level's noise is discrete Gaussian, calibrated at delta")
    bits = data.get("bits")
    if isinstance(bits, bool) or not isinstance(bits, int) or not MIN_BITS <= bits <= MAX_BITS or bits % 8:
        raise SpecError("bits", f"must be a multiple of 8 in [{MIN_BITS}, {MAX_BITS}] (strings are bits / 8 bytes)")
    overflow = data.get("overflow", "truncate")
    if overflow not in OVERFLOWS:
        raise SpecError("overflow", f"must be one of {list(OVERFLOWS)}")
    threshold: Any = data.get("threshold")
    if not is_finite_number(threshold) or not 0 < threshold < 1:
        raise SpecError("threshold", "must be a number with 0 < threshold < 1 (a fraction of the batch's reports)")
    stride = validate_int("stride", data.get("stride", DEFAULT_STRIDE), 1, MAX_STRIDE)
    if bits % stride:
        raise SpecError("stride", f"must divide bits = {bits}")
    if "min_batch" not in data:
        raise SpecError("min_batch", "is required: the fewest reports a level may aggregate (at least 2)")
    min_batch = validate_int("min_batch", data["min_batch"], 2, MAX_MIN_BATCH)
    return Poplar1Params(epsilon, float(delta), bits, overflow, float(threshold), stride, min_batch)


def json_schema() -> dict:
    "The JSON Schema of the kind's own fields"
    return {"type": "object", "properties": {
        "kind": {"const": KIND_NAME}, "trust": {"const": "distributed"},
        "bits": {"type": "integer", "minimum": MIN_BITS, "maximum": MAX_BITS, "multipleOf": 8},
        "overflow": {"enum": list(OVERFLOWS)},
        "threshold": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "stride": {"type": "integer", "minimum": 1, "maximum": MAX_STRIDE},
        "min_batch": {"type": "integer", "minimum": 2, "maximum": MAX_MIN_BATCH},
    }, "required": ["kind", "bits", "threshold", "min_batch"]}


def encode_value(params: Poplar1Params, value: Any) -> tuple[bool, ...]:
    """The measurement of ``value`` (str as UTF-8, or bytes): its bits after cutting (``truncate``) or refusing
    (``refuse``: ValueError) at ``params.length`` bytes and padding with 0x00.  TypeError for another type."""
    if isinstance(value, str):
        data = value.encode("utf-8")  # a lone surrogate: UnicodeEncodeError, a ValueError
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    else:
        raise TypeError(f"a poplar1 campaign takes a str or bytes, got {type(value).__name__}")
    if len(data) > params.length:
        if params.overflow == "refuse":
            raise ValueError(f"the value is {len(data)} bytes, above the campaign's {params.length} "
                             "(bits / 8; overflow 'refuse')")
        data = data[:params.length]
    data = data.ljust(params.length, b"\0")
    number = int.from_bytes(data, "big")
    return tuple(bool(number >> (params.bits - 1 - i) & 1) for i in range(params.bits))


def decode_prefix(bits: tuple[bool, ...] | int, width: int) -> bytes:
    "The whole bytes of a ``width``-bit prefix (bits, or an int, most significant first), trailing 0x00 cut"
    number = bits if isinstance(bits, int) else int("".join("1" if b else "0" for b in bits) or "0", 2)
    whole = width // 8
    return (number >> (width - 8 * whole)).to_bytes(whole, "big").rstrip(b"\0")
