"""A quantiles report on the device: clamp, bucket, choose a level, perturb the level's node with its oracle.

``make_report(rng, params, value)`` draws, in this order, the level (``rng.randbelow(h)``, uniform over 1..h) and
then the oracle's own draws for the node index (``client_sdk.mechanisms.categorical``: OLH or Hadamard at the
full epsilon over the level's B**l nodes).  The report is ``[level, oracle payload]``::

    [3, ["0123456789abcdef0123456789abcdef", 1]]   # olh: [seed, y]
    [5, [917, 0]]                                  # hadamard: [column, bit]

Privacy.  The level is drawn independently of the value and the oracle is epsilon-LDP on every level's domain, so
for any two values and any report, P(report | v) / P(report | v') = P(oracle output | node(v)) / P(oracle
output | node(v')) <= e^eps.  Clamping happens before, on the device, and leaves no trace in the report: a
"clamped" flag would be a deterministic function of the value (P(flag | v outside) = 1, P(flag | v inside) =
0), an unbounded privacy loss.  The device counts its clamps instead (``state["clamped"]``, kept locally, never
sent) so an application can see that its range is too narrow; the estimates show the clamped mass in the first
and last buckets.
"""

from __future__ import annotations

import math
import numbers
import warnings
from bisect import bisect_right
from functools import lru_cache

from ...errors import InvalidValue, PayloadError, PrivacyWarning
from ...mechanisms.categorical import OLH, Hadamard
from ...randomness import RandomSource
from ...spec import Spec, load_spec
from ...wire import require_int, require_list
from .params import QuantilesParams

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from collections.abc import MutableMapping
    from typing import Any

    from ...mechanisms.base import CategoricalMechanism

CLAMPED = "clamped"  # the device-state counter of clamped values


@lru_cache(maxsize=256)
def level_spec(params: QuantilesParams, level: int) -> Spec:
    """The local spec of ``level``'s oracle: OLH or Hadamard over the level's node indices at the campaign's
    epsilon (the device perturbs and the estimators de-bias with it)"""
    with warnings.catch_warnings():  # the campaign's spec has warned about a large epsilon already
        warnings.simplefilter("ignore", PrivacyWarning)
        return load_spec({"name": f"quantiles-level-{level}", "mechanism": params.oracle,
                          "epsilon": params.epsilon, "domain": list(range(params.level_size(level)))})


def level_oracle(params: QuantilesParams, level: int, rng: RandomSource | None = None) -> CategoricalMechanism:
    "The SDK's randomizer of ``level`` (OLH or Hadamard), drawing from ``rng`` (the OS CSPRNG by default)"
    oracle_class = OLH if params.oracle == "olh" else Hadamard
    return oracle_class(level_spec(params, level), rng=rng)


def clamp(params: QuantilesParams, value: Any) -> tuple[float, bool]:
    "(the value clamped into the range, whether it was outside); InvalidValue for NaN, TypeError for a non-number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or type(value).__name__ == "bool_":
        raise TypeError("a quantiles campaign takes a number")
    number = float(value)
    if math.isnan(number):
        raise InvalidValue("a quantiles campaign cannot report NaN")
    clamped = min(max(number, params.low), params.high)
    return clamped, clamped != number


def bucket_of(params: QuantilesParams, value: float) -> int:
    """The bucket (0..buckets-1) of a value in the range: uniform floor((v - low) * b / (high - low)); geometric
    the last boundary at or below v (``params.boundaries``, computed the same way in every SDK)"""
    if params.bucketing == "uniform":
        index = math.floor((value - params.low) * params.buckets / (params.high - params.low))
    else:
        index = bisect_right(params.boundaries, value) - 1
    return min(max(index, 0), params.buckets - 1)


def node_of(params: QuantilesParams, bucket: int, level: int) -> int:
    "The index of the level-``level`` node above leaf ``bucket``"
    return bucket // params.branching ** (params.height - level)


def make_report(rng: RandomSource, params: QuantilesParams, value: Any,
                state: MutableMapping[str, Any] | None = None) -> list:
    """The payload of one report of ``value`` (clamped into the range; ``state[CLAMPED]`` counts the clamps when a
    device-state slot is given)"""
    clamped, outside = clamp(params, value)
    if outside and state is not None:
        state[CLAMPED] = int(state.get(CLAMPED, 0)) + 1
    bucket = bucket_of(params, clamped)
    level = 1 + rng.randbelow(params.height)
    payload = level_oracle(params, level, rng).perturb_index(node_of(params, bucket, level))
    return QuantilesReport(level, payload).encode()


def prio3_measurement(params: QuantilesParams, value: Any, state: MutableMapping[str, Any] | None = None) -> int:
    """The Prio3 histogram measurement of ``value`` for a distributed quantiles campaign over the buckets: the index
    (0..buckets-1) of its bucket after clamping into the range, the clamp counted in ``state[CLAMPED]`` as for a
    local report (never in the measurement: a clamped value is the first or last bucket's, like any other there).
    One device changes one bucket's count, so the aggregators' noise is that of a histogram of ``buckets`` entries"""
    clamped, outside = clamp(params, value)
    if outside and state is not None:
        state[CLAMPED] = int(state.get(CLAMPED, 0)) + 1
    return bucket_of(params, clamped)


class QuantilesReport:
    "One report, decoded: the level (1..h) and the level oracle's payload"

    __slots__ = ("level", "payload")

    def __init__(self, level: int, payload: Any) -> None:
        self.level = level
        self.payload = payload

    def encode(self) -> list:
        "The JSON payload"
        return [self.level, self.payload]

    @classmethod
    def decode(cls, params: QuantilesParams, payload: Any) -> QuantilesReport:
        "The report in a JSON payload, checked: PayloadError naming the field (payload[0], payload[1][0], ...)"
        level_field, inner = require_list(payload, "payload", 2)
        level = require_int(level_field, "payload[0]", 1, params.height + 1)
        try:
            level_oracle(params, level).check_payload(inner)
        except PayloadError as error:
            raise PayloadError(f"payload[1]{error.field[len('payload'):]}", error.reason) from None
        return cls(level, inner)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuantilesReport) and (self.level, self.payload) == (other.level, other.payload)

    def __repr__(self) -> str:
        return f"QuantilesReport(level={self.level!r}, payload={self.payload!r})"


def check_payload(params: QuantilesParams, payload: Any) -> None:
    "Raise PayloadError naming the field unless a device could have sent ``payload`` for ``params``"
    QuantilesReport.decode(params, payload)
