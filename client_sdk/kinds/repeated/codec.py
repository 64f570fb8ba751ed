"""The repeated-collection kind's payloads: one encoder and one checker, used by the device, the collector and the
estimators alike (standard library only).

=========  =====================================================================================================
mean       the sent bit, a JSON integer 0 or 1
histogram  ``{"buckets": [j_1, ..., j_d], "bits": "<hex>"}``: the device's d sampled buckets, distinct and
           ascending, and the d sent bits in the same order packed most significant first into
           2 ceil(d / 8) lowercase hex digits, padding bits 0 (``client_sdk.wire.bits_to_hex``)
=========  =====================================================================================================

A report's payload is ``{"period": "<label>", "answer": <one of the above>}``: the label of the period the device
made it for (:mod:`.periods`; its ledger's batch), so a report uploaded late still counts in its own period
(:func:`encode_report`, :func:`check_report`).
"""

from __future__ import annotations

from ...errors import PayloadError
from ...wire import bits_to_hex, is_integer, require_int, require_packed_bits
from .params import RepeatedParams
from .periods import period_label_start

REPORT_KEYS = frozenset({"period", "answer"})

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

HISTOGRAM_KEYS = frozenset({"buckets", "bits"})


def encode_payload(params: RepeatedParams, buckets: list[int] | None, bits: list[int]) -> Any:
    "The payload of sent ``bits`` (mean: one bit, ``buckets`` None; histogram: the sampled buckets, ascending)"
    if params.mode == "mean":
        return int(bits[0])
    return {"buckets": list(buckets or []), "bits": bits_to_hex(bytearray(bits), len(bits))}


def check_payload(params: RepeatedParams, payload: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(buckets, bits) of a valid payload (mean: buckets empty, one bit); PayloadError naming the field otherwise"""
    if params.mode == "mean":
        return (), (require_int(payload, "payload", 0, 2),)
    assert params.buckets is not None and params.bits is not None
    if not isinstance(payload, dict) or set(payload) != HISTOGRAM_KEYS:
        raise PayloadError("payload", 'must be an object {"buckets": [...], "bits": "<hex>"}')
    buckets = payload["buckets"]
    if not isinstance(buckets, list) or len(buckets) != params.bits:
        raise PayloadError("payload.buckets", f"must be a list of {params.bits} integers")
    previous = -1
    for index, bucket in enumerate(buckets):
        if not is_integer(bucket) or not previous < bucket < params.buckets:
            raise PayloadError(f"payload.buckets[{index}]", f"must be an integer in [0, {params.buckets}), "
                                                           "the buckets distinct and ascending")
        previous = bucket
    raw = require_packed_bits(payload["bits"], "payload.bits", params.bits)
    number = int.from_bytes(raw, "big") >> (8 * len(raw) - params.bits)
    bits = tuple((number >> (params.bits - 1 - i)) & 1 for i in range(params.bits))
    return tuple(int(bucket) for bucket in buckets), bits


def encode_report(period: str, answer: Any) -> dict[str, Any]:
    "A report's payload: the period's label and the answer (:func:`encode_payload`'s)"
    return {"period": period, "answer": answer}


def check_report(params: RepeatedParams, payload: Any) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    "(period, buckets, bits) of a valid report payload; PayloadError naming the field otherwise"
    if not isinstance(payload, dict) or set(payload) != REPORT_KEYS:
        raise PayloadError("payload", 'must be an object {"period": "<label>", "answer": ...}')
    period = payload["period"]
    if not isinstance(period, str) or period_label_start(params, period) is None:
        raise PayloadError("payload.period", f"must be the label of a {params.period} (UTC)")
    try:
        buckets, bits = check_payload(params, payload["answer"])
    except PayloadError as error:
        raise PayloadError("payload.answer" + error.field[len("payload"):], error.reason) from None
    return period, buckets, bits
