"""A distributed campaign's Prio3 parameters (``"trust": "distributed"`` in its spec): the circuit, the noise that
the aggregators add and the release's batch rules, validated by :func:`prio3_from_dict` for ``Spec.from_dict``."""

from __future__ import annotations

import math

from .clock import DAY_SECONDS, batch_at, batch_start
from .errors import SpecError
from .frozen import Frozen
from .spec_fields import DomainValue, is_finite_number, validate_domain, validate_epsilon, validate_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

# Distributed (Prio3) campaigns: the fields of Prio3Params, given flat in the JSON ("prio3" names the type).
PRIO3_TYPES = ("count", "sum", "histogram", "sumvec", "multihot")
NOISE_MODES = ("gaussian", "laplace", "coins")
# A batch's length (DAP's time precision): whole minutes or hours that divide a day, so batches align to UTC days.
WINDOW_SECONDS = {**{f"{n}m": 60 * n for n in (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)},
                  **{f"{n}h": 3600 * n for n in (1, 2, 3, 4, 6, 8, 12)}, "day": DAY_SECONDS}
WINDOWS = tuple(WINDOW_SECONDS)
DISTRIBUTED_FIELDS = ("trust", "prio3", "max_measurement", "length", "max_weight", "noise", "coins",
                      "honest_fraction", "min_batch", "window")
# A Histogram(4096) leader share is about 16 bytes * 4096 plus the proof: it still fits the SDK's 1 MiB request.
MAX_PRIO3_LENGTH = 4096
# Any circuit: at most this many encoded field elements (sumvec: length * bits, coins: buckets * (1 + coins)); a
# leader share of 16,384 Field128 elements is 256 KiB, about 350 KB of base64url JSON: still a 1 MiB request.
MAX_PRIO3_ENCODED_LENGTH = 16384
# sum: the Field64 aggregate must stay below p/2 (signed unsharding) for up to 2**31 reports.
MAX_PRIO3_MEASUREMENT = (1 << 32) - 1
MAX_COINS = 64
MAX_MIN_BATCH = 1 << 31


class Prio3Params(Frozen):
    """The Prio3 circuit and the release's DP parameters of a distributed campaign (validated by Spec.from_dict).

    ``chunk_length`` is derived: about the square root of the encoded measurement's length, the draft's
    recommendation for ParallelSum(Mul) circuits (draft-irtf-cfrg-vdaf, "Selection of ParallelSum chunk length");
    None for count and sum, whose circuits have no chunks."""

    __slots__ = _fields = ("type", "length", "max_measurement", "max_weight", "chunk_length", "noise", "coins",
                           "honest_fraction", "min_batch", "window")
    type: str
    length: int | None  # buckets (histogram, multihot) or entries (sumvec)
    max_measurement: int | None  # sum, sumvec
    max_weight: int | None  # multihot
    chunk_length: int | None
    noise: str
    coins: int | None  # noise "coins" only
    honest_fraction: float | None  # noise "coins" only
    min_batch: int
    window: str

    def __init__(self, type: str, length: int | None = None, max_measurement: int | None = None,
                 max_weight: int | None = None, chunk_length: int | None = None, noise: str = "gaussian",
                 coins: int | None = None, honest_fraction: float | None = None, min_batch: int = 100,
                 window: str = "day") -> None:
        self._set(type=type, length=length, max_measurement=max_measurement, max_weight=max_weight,
                  chunk_length=chunk_length, noise=noise, coins=coins, honest_fraction=honest_fraction,
                  min_batch=min_batch, window=window)

    @property
    def shift(self) -> tuple[int, int]:
        """(coordinates, size): replacing one report's measurement (n public: replace-one) moves at most
        ``coordinates`` coordinates of the aggregate, each by at most ``size``; the noise is calibrated to it"""
        if self.type == "sum":
            assert self.max_measurement is not None
            return 1, self.max_measurement
        if self.type == "multihot":
            assert self.max_weight is not None
            return 2 * self.max_weight, 1  # the old set's buckets -1, the new set's +1
        if self.type == "sumvec":
            assert self.length is not None and self.max_measurement is not None
            return self.length, self.max_measurement
        if self.type == "histogram":
            return 2, 1  # the old bucket -1, the new one +1
        return 1, 1  # count

    @property
    def sensitivity(self) -> int:
        "L1 sensitivity of the aggregate under replace-one (n public)"
        coordinates, size = self.shift
        return coordinates * size

    @property
    def encoded_length(self) -> int:
        "The number of field elements of the encoded measurement (what the range checks run over)"
        length, top, weight = self.length or 0, self.max_measurement or 0, self.max_weight or 0
        sizes = {"count": 1, "sum": top.bit_length(), "histogram": length * (1 + (self.coins or 0)),
                 "sumvec": length * top.bit_length(), "multihot": length + weight.bit_length()}
        return sizes[self.type]

    @property
    def batch_seconds(self) -> int:
        "The length of one batch, in seconds (``window``)"
        return WINDOW_SECONDS[self.window]

    def batch_at(self, now: float) -> str:
        "The name of the batch the POSIX time ``now`` falls in (a UTC day, or a shorter batch's start)"
        return batch_at(now, self.batch_seconds)

    def batch_end(self, batch: str) -> float:
        "The POSIX time at which ``batch`` ends; ValueError if ``batch`` names no batch of this ``window``"
        try:
            start = batch_start(batch)
        except ValueError:
            start = math.nan
        if not start % self.batch_seconds == 0 or batch_at(start, self.batch_seconds) != batch:
            named = "YYYY-MM-DD" if self.batch_seconds == DAY_SECONDS else "YYYY-MM-DDTHH:MMZ"
            raise ValueError(f"{batch!r} is not a batch of window {self.window!r} (named {named}, one every "
                             f"{self.batch_seconds} s from 00:00 UTC)")
        return start + self.batch_seconds

    def identity(self) -> dict:
        "Every field, for the spec's identity (None fields left out; a domain's length is the domain's)"
        out: dict[str, Any] = {"prio3": self.type, "noise": self.noise, "min_batch": self.min_batch,
                               "window": self.window}
        if self.type == "sumvec":
            out["length"] = self.length
        for key in ("max_measurement", "max_weight", "chunk_length", "coins", "honest_fraction"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


class Prio3SpecParams(Frozen):
    "A prio3 campaign's parameters: the release's epsilon, the domain (histogram, multihot) and the circuit's"

    __slots__ = _fields = ("epsilon", "domain", "prio3")
    epsilon: float
    domain: tuple[DomainValue, ...] | None
    prio3: Prio3Params

    def __init__(self, epsilon: float, domain: tuple[DomainValue, ...] | None, prio3: Prio3Params) -> None:
        self._set(epsilon=epsilon, domain=domain, prio3=prio3)

    mechanism = "prio3"  # no local randomizer has this name


def prio3_from_dict(data: dict, delta: float | None) -> tuple[float, tuple[DomainValue, ...] | None, Prio3Params]:
    """A distributed campaign's epsilon, domain (histogram, multihot) and Prio3 parameters from its spec's JSON:
    the circuit's parameters, the noise and the release's batch rules (``delta``: the spec's, validated)"""
    if data.get("mechanism", "prio3") != "prio3":
        raise SpecError("mechanism", "must be 'prio3' (or absent) with trust 'distributed'")
    for forbidden in ("range", "catch_all", "rappor", "candidates", "unit"):
        if forbidden in data:
            raise SpecError(forbidden, "not allowed with trust 'distributed'")
    kind = data.get("prio3")
    if kind not in PRIO3_TYPES:
        raise SpecError("prio3", f"must be one of {list(PRIO3_TYPES)}")
    epsilon = validate_epsilon(data.get("epsilon"))
    noise = data.get("noise")
    if noise not in NOISE_MODES:
        raise SpecError("noise", f"must be one of {list(NOISE_MODES)}")
    if noise == "coins" and kind != "histogram":
        raise SpecError("noise", "'coins' is only available for prio3 'histogram'")
    if noise in ("gaussian", "coins") and delta is None:
        raise SpecError("delta", f"is required with noise {noise!r} (a number with 0 < delta < 1)")

    def wanted(field_name: str, used: bool, why: str) -> bool:
        if field_name in data and not used:
            raise SpecError(field_name, f"only allowed {why}")
        if used and field_name not in data and field_name in ("domain", "max_measurement", "length",
                                                              "max_weight"):
            raise SpecError(field_name, f"is required for prio3 {kind!r}")
        return used

    domain = None
    if wanted("domain", kind in ("histogram", "multihot"), "for prio3 'histogram' and 'multihot'"):
        domain = validate_domain(data["domain"])
        if len(domain) > MAX_PRIO3_LENGTH:
            raise SpecError("domain", f"has more than {MAX_PRIO3_LENGTH} entries (the Prio3 limit)")
    max_measurement = length = max_weight = None
    if wanted("max_measurement", kind in ("sum", "sumvec"), "for prio3 'sum' and 'sumvec'"):
        max_measurement = validate_int("max_measurement", data["max_measurement"], 1, MAX_PRIO3_MEASUREMENT)
    if wanted("length", kind == "sumvec", "for prio3 'sumvec' (histogram and multihot take 'domain')"):
        length = validate_int("length", data["length"], 1, MAX_PRIO3_LENGTH)
    if domain is not None:
        length = len(domain)
    if wanted("max_weight", kind == "multihot", "for prio3 'multihot'"):
        max_weight = validate_int("max_weight", data["max_weight"], 1, len(domain or ()))
    coins = honest_fraction = None
    if wanted("coins", noise == "coins", "with noise 'coins'"):
        coins = validate_int("coins", data.get("coins", 1), 1, MAX_COINS)
        honest = data.get("honest_fraction", 0.5)
        if not is_finite_number(honest) or not 0 < honest <= 1:
            raise SpecError("honest_fraction", "must be a number with 0 < honest_fraction <= 1")
        honest_fraction = float(honest)
    elif "honest_fraction" in data:
        raise SpecError("honest_fraction", "only allowed with noise 'coins'")
    min_batch = validate_int("min_batch", data.get("min_batch", 100), 2, MAX_MIN_BATCH)
    window = data.get("window", "day")
    if window not in WINDOWS:
        raise SpecError("window", f"must be one of {list(WINDOWS)} (a batch's length: minutes, hours or a day)")
    params = Prio3Params(type=kind, length=length, max_measurement=max_measurement, max_weight=max_weight,
                         noise=noise, coins=coins, honest_fraction=honest_fraction, min_batch=min_batch,
                         window=window)
    if params.encoded_length > MAX_PRIO3_ENCODED_LENGTH:
        field_name = "coins" if noise == "coins" else "length"
        raise SpecError(field_name, f"the encoded measurement would have {params.encoded_length} field elements "
                                    f"(at most {MAX_PRIO3_ENCODED_LENGTH}: one report must fit a request)")
    if kind not in ("count", "sum"):
        params = params._replace(chunk_length=max(1, math.isqrt(params.encoded_length)))
    return epsilon, domain, params
