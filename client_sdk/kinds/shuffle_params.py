"""A shuffled local campaign's parameters (``"trust": "shuffled"``): how its shuffler batches the reports.

Devices perturb exactly as for a local campaign; they send to a shuffler (``ldp-telemetry serve --role shuffler``),
which holds each campaign version's reports until it has ``shuffle_batch`` of them, shuffles them and forwards them
to the collector in one request.  ``shuffle_timeout`` (seconds since the first report of a batch arrived) with
``short_batch``: at the time limit a smaller batch is sent (``"send"``: its weaker amplification is stated per
batch) or held until it is full (``"hold"``, the default).  These members enter the fingerprint, with the trust
model: a shuffled spec is a version of its own, never a local one's.
"""

from __future__ import annotations

from ..errors import SpecError
from ..frozen import Frozen
from ..spec_fields import is_finite_number, validate_int
from .local_params import LocalParams

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

SHUFFLE_FIELDS = frozenset({"shuffle_batch", "shuffle_timeout", "short_batch"})
SHORT_BATCH_RULES = ("hold", "send")
MIN_SHUFFLE_BATCH = 2
MAX_SHUFFLE_BATCH = 1_000_000
MAX_SHUFFLE_TIMEOUT = 30 * 86400.0  # seconds
DEFAULT_DELTA = 1e-6  # the central delta of a shuffled batch's amplified guarantee when the spec names none


class ShuffleParams(Frozen):
    "How a shuffler batches a campaign version's reports"

    __slots__ = _fields = ("shuffle_batch", "shuffle_timeout", "short_batch")
    shuffle_batch: int
    shuffle_timeout: float | None
    short_batch: str

    def __init__(self, shuffle_batch: int, shuffle_timeout: float | None = None, short_batch: str = "hold") -> None:
        self._set(shuffle_batch=shuffle_batch, shuffle_timeout=shuffle_timeout, short_batch=short_batch)

    def identity(self) -> dict:
        out: dict[str, Any] = {"shuffle_batch": self.shuffle_batch, "short_batch": self.short_batch}
        if self.shuffle_timeout is not None:
            out["shuffle_timeout"] = self.shuffle_timeout
        return out

    def due(self, queued: int, waited: float) -> bool:
        "Whether a batch of ``queued`` reports whose first came ``waited`` seconds ago is forwarded now"
        if queued >= self.shuffle_batch:
            return True
        timed_out = self.shuffle_timeout is not None and waited >= self.shuffle_timeout
        return queued > 0 and timed_out and self.short_batch == "send"


class ShuffledLocalParams(LocalParams):
    "A local randomizer's parameters with the shuffler's batching rule"

    __slots__ = ("shuffle",)
    _fields = (*LocalParams._fields, "shuffle")  # type: ignore[assignment]
    shuffle: ShuffleParams

    def __init__(self, mechanism: str, epsilon: float, domain: Any = None, catch_all: Any = None,
                 range: Any = None, rappor: Any = None, candidates: Any = None, unit: str | None = None,
                 max_ones: int | None = None, shuffle: ShuffleParams | None = None) -> None:
        super().__init__(mechanism, epsilon, domain, catch_all, range, rappor, candidates, unit, max_ones)
        assert shuffle is not None
        self._set(shuffle=shuffle)

    def identity(self) -> dict:
        return {**super().identity(), "trust": "shuffled", **self.shuffle.identity()}


def shuffle_params_from_dict(data: dict, trust: str) -> ShuffleParams | None:
    "The batching rule of a shuffled spec (None for a local one); SpecError naming the field otherwise"
    if trust != "shuffled":
        for field in sorted(SHUFFLE_FIELDS & set(data)):
            raise SpecError(field, "only with trust 'shuffled'")
        return None
    if "shuffle_batch" not in data:
        raise SpecError("shuffle_batch", "is required with trust 'shuffled' (the fewest reports a shuffler forwards "
                                         "at once)")
    batch = _whole_number("shuffle_batch", data["shuffle_batch"], MIN_SHUFFLE_BATCH, MAX_SHUFFLE_BATCH)
    timeout = data.get("shuffle_timeout")
    if timeout is not None:
        if not is_finite_number(timeout) or not 0 < timeout <= MAX_SHUFFLE_TIMEOUT:
            raise SpecError("shuffle_timeout", f"must be a number of seconds in (0, {MAX_SHUFFLE_TIMEOUT:g}]")
        timeout = float(timeout)
    short_batch = data.get("short_batch", "hold")
    if short_batch not in SHORT_BATCH_RULES:
        raise SpecError("short_batch", f"must be one of {list(SHORT_BATCH_RULES)}")
    if short_batch == "send" and timeout is None:
        raise SpecError("shuffle_timeout", "is required with short_batch 'send' (when a short batch is sent)")
    return ShuffleParams(batch, timeout, short_batch)


def _whole_number(name: str, value: Any, low: int, high: int) -> int:
    """A JSON number with no fractional part in [low, high], as an int: ``2.0`` is ``2``, as JSON Schema's "integer"
    and the JavaScript SDK (whose ``JSON.parse`` cannot tell them apart) read it; never a bool"""
    if isinstance(value, float) and is_finite_number(value) and value.is_integer():
        value = int(value)
    return validate_int(name, value, low, high)


def with_shuffle(params: LocalParams, shuffle: ShuffleParams) -> ShuffledLocalParams:
    fields = dict(zip(LocalParams._fields, params._values()))
    return ShuffledLocalParams(**fields, shuffle=shuffle)


def shuffle_rule(spec: Any) -> ShuffleParams | None:
    "The batching rule of a shuffled campaign's spec, None for any other campaign"
    rule = getattr(spec.params, "shuffle", None)
    return rule if isinstance(rule, ShuffleParams) else None


def shuffle_json_schema() -> dict:
    return {
        "shuffle_batch": {"type": "integer", "minimum": MIN_SHUFFLE_BATCH, "maximum": MAX_SHUFFLE_BATCH},
        "shuffle_timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SHUFFLE_TIMEOUT},
        "short_batch": {"type": "string", "enum": list(SHORT_BATCH_RULES)},
    }
