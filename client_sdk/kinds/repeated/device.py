"""The device side of repeated collection: alpha-point rounding, the d sampled buckets, memoized answers and the
output perturbation (standard library only; exact integer draws from a ``RandomSource``).

The device keeps one JSON-able state dict per campaign (the kind's slot of the device state file)::

    mean:       {"version": 1, "identity": {...}, "alpha": a,             "answers": {"<point>": 0 | 1}}
    histogram:  {"version": 1, "identity": {...}, "buckets": [j_1..j_d],  "answers": {"<bucket>" | "other": "<hex>"}}

``identity`` is the campaign's (:func:`~.params.identity`) with its epsilon (:func:`state_identity`): a state made
for other parameters is dropped and drawn afresh, and every answer of the new one is charged again.  Nothing else
ever redraws: clearing the app's state is the only way, and it costs a new epsilon per answer then used.

Byte consumption (every SDK reproduces payloads byte-identically from the same stream; ``randbits(n)`` reads
ceil(n/8) bytes big-endian and drops the excess low bits, ``randbelow(n)`` repeats ``randbits(n.bit_length())``
until below n, exactly as :class:`client_sdk.randomness.ByteStreamRandom`).  One call of :func:`make_report` draws,
in this order and nothing else:

1. only when the state is new: mean ``alpha = randbits(32)``; histogram the d buckets by a partial Fisher-Yates
   shuffle of 0..k-1: for i = 0..d-1, ``r = i + randbelow(k - i)``, swap positions i and r, take position i; the
   state keeps them sorted ascending.
2. only when the answer for this key is not memoized yet: mean one draw ``randbelow(2**32 (s - 1)) < N_j``
   (``RepeatedParams.point_threshold``, never reduced); histogram d draws ``randbits(32) < T``, one per sampled
   bucket in ascending order, T = p * 2**32 for the device's own bucket and q * 2**32 for the others.
3. only with gamma: one ``randbits(32) < gamma * 2**32`` per sent bit (ascending bucket order), True flips it.

Rounding (mean): the value, clamped to the range, sits at position ``u = (v - low) (s - 1) / (high - low)`` (exact
rationals of the doubles); with ``j = floor(u)`` and ``f = u - j`` it is rounded to point j + 1 when
``alpha < f * 2**32`` and to j otherwise (alpha uniform on [0, 2**32) once per device), so that over devices
P(up) = ceil(f 2**32) / 2**32: unbiased within 2**-32 of a step.  A bucket (histogram) is
``min(floor((v - low) k / (high - low)), k - 1)``; the key of its answer is the bucket when it is one of the d
sampled buckets and "other" otherwise (every other bucket has the same answer distribution, so one answer serves
them all: at most d + 1 distinct answers per device).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import MutableMapping
from fractions import Fraction

from ...errors import DeviceStateError, InvalidValue, InvalidValueType
from ...randomness import PROB_BITS, PROB_DENOMINATOR, RandomSource
from ...wire import bits_to_hex, hex_length
from .codec import encode_payload
from .params import RepeatedParams, identity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

STATE_VERSION = 1
OTHER = "other"  # the answer key of every bucket the device did not sample


def clamped_fraction(params: RepeatedParams, value: Any) -> Fraction:
    "The value clamped to the range as an exact rational; InvalidValueType/InvalidValue before any draw"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or type(value).__name__ == "bool_":
        raise InvalidValueType(f"a repeated campaign takes a number, not {type(value).__name__}")
    number = float(value)
    if math.isnan(number):
        raise InvalidValue("a repeated campaign cannot report NaN")
    return Fraction(min(max(number, params.low), params.high))


def rounded_point(params: RepeatedParams, alpha: int, value: Any) -> int:
    "The rounding point (0..s-1) a device with ``alpha`` reports ``value`` at (alpha-point rounding)"
    assert params.rounding_points is not None
    steps = params.rounding_points - 1
    position = (clamped_fraction(params, value) - Fraction(params.low)) * steps / \
        (Fraction(params.high) - Fraction(params.low))
    point = math.floor(position)
    if point >= steps:
        return steps
    fraction = position - point
    return point + 1 if alpha * fraction.denominator < fraction.numerator * PROB_DENOMINATOR else point


def bucket_of(params: RepeatedParams, value: Any) -> int:
    "The bucket (0..k-1) of ``value``"
    assert params.buckets is not None
    scaled = (clamped_fraction(params, value) - Fraction(params.low)) * params.buckets / \
        (Fraction(params.high) - Fraction(params.low))
    return min(math.floor(scaled), params.buckets - 1)


def draw_buckets(rng: RandomSource, k: int, d: int) -> list[int]:
    "d distinct buckets of 0..k-1, uniformly (partial Fisher-Yates, d draws), sorted ascending"
    moved: dict[int, int] = {}  # the shuffled positions that no longer hold their own index
    chosen = []
    for i in range(d):
        r = i + rng.randbelow(k - i)
        chosen.append(moved.get(r, r))
        moved[r] = moved.get(i, i)
    return sorted(chosen)


def state_identity(params: RepeatedParams) -> dict[str, Any]:
    "What a state was drawn for: the campaign's identity and its epsilon (the memoized answers' probabilities)"
    return {**identity(params), "epsilon": params.epsilon}


def new_state(rng: RandomSource, params: RepeatedParams) -> dict[str, Any]:
    "A device's state for a campaign: alpha (mean) or its d buckets (histogram), drawn once, and no answers yet"
    state: dict[str, Any] = {"version": STATE_VERSION, "identity": state_identity(params)}
    if params.mode == "mean":
        state["alpha"] = rng.randbits(PROB_BITS)
    else:
        assert params.buckets is not None and params.bits is not None
        state["buckets"] = draw_buckets(rng, params.buckets, params.bits)
    state["answers"] = {}
    return state


def make_report(rng: RandomSource, params: RepeatedParams, state: MutableMapping[str, Any],
                value: Any) -> tuple[Any, bool]:
    """(payload, new_answer) for one period's ``value``; ``state`` (the campaign's persisted dict) is updated in
    place and must be saved before the payload leaves the device.

    ``new_answer`` is True when this report memoized a new answer: the ledger charges epsilon then and nothing
    for a reused answer (see the guarantee in :mod:`client_sdk.kinds.repeated`)."""
    key_value = clamped_fraction(params, value)  # InvalidValue(Type) before any draw or state change
    _ensure_state(rng, params, state)
    answers = state["answers"]
    if params.mode == "mean":
        key = str(rounded_point(params, state["alpha"], key_value))
    else:
        bucket = bucket_of(params, key_value)
        key = str(bucket) if bucket in state["buckets"] else OTHER
    new_answer = key not in answers
    if new_answer:
        answers[key] = _draw_answer(rng, params, state, key)
    bits = [answers[key]] if params.mode == "mean" else _unpack(answers[key], len(state["buckets"]))
    if params.gamma_threshold:
        bits = [bit ^ (rng.randbits(PROB_BITS) < params.gamma_threshold) for bit in bits]
    return encode_payload(params, state.get("buckets"), bits), new_answer


def answer_count(state: MutableMapping[str, Any]) -> int:
    "How many distinct answers a device has memoized (its ledger's charges for the campaign)"
    return len(state.get("answers", {}))


def _draw_answer(rng: RandomSource, params: RepeatedParams, state: MutableMapping[str, Any], key: str) -> Any:
    if params.mode == "mean":
        numerator, denominator = params.point_threshold(int(key))
        return int(rng.randbelow(denominator) < numerator)
    own, other = params.keep_threshold, params.flip_threshold
    bits = [int(rng.randbits(PROB_BITS) < (own if str(bucket) == key else other)) for bucket in state["buckets"]]
    return bits_to_hex(bytearray(bits), len(bits))


def _unpack(packed: str, width: int) -> list[int]:
    number = int(packed, 16) >> (4 * len(packed) - width)
    return [(number >> (width - 1 - i)) & 1 for i in range(width)]


def _ensure_state(rng: RandomSource, params: RepeatedParams, state: MutableMapping[str, Any]) -> None:
    "Draw the state when it is empty or was made for other parameters; DeviceStateError when it is damaged"
    if state.get("version") == STATE_VERSION and state.get("identity") == state_identity(params):
        _check_state(params, state)
        return
    if state and state.get("version") not in (None, STATE_VERSION):
        raise DeviceStateError("version", f"{state.get('version')!r} is not a readable version of this state")
    state.clear()
    state.update(new_state(rng, params))


def _check_state(params: RepeatedParams, state: MutableMapping[str, Any]) -> None:
    answers = state.get("answers")
    if not isinstance(answers, dict):
        raise DeviceStateError("answers", "must be an object")
    if params.mode == "mean":
        alpha = state.get("alpha")
        if type(alpha) is not int or not 0 <= alpha < PROB_DENOMINATOR or \
                any(answer not in (0, 1) or isinstance(answer, bool) for answer in answers.values()):
            raise DeviceStateError("alpha", "alpha or an answer is damaged")
        return
    assert params.buckets is not None and params.bits is not None
    buckets = state.get("buckets")
    if not isinstance(buckets, list) or len(buckets) != params.bits or buckets != sorted(set(buckets)) or \
            not all(type(b) is int and 0 <= b < params.buckets for b in buckets):
        raise DeviceStateError("buckets", "must be the d sampled buckets, distinct and ascending")
    width = hex_length(params.bits)
    if any(not isinstance(answer, str) or len(answer) != width for answer in answers.values()):
        raise DeviceStateError("answers", f"each answer must be {width} hex digits")
