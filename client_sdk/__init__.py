"""ldp-telemetry client SDK: perturb values on the device under local differential privacy.

Standard library only.  ``mechanism_from_spec(spec).perturb(value)`` gives the payload of one report; randomness
comes from the OS CSPRNG (``secrets``).  ``Client(url, key, state_dir, campaigns=[...])`` records, queues and
delivers (see ``docs/sdk.md``).

The device runtime (``Client`` and its queue, ledger, state file and transport: ``sqlite3``, ``logging``,
``threading``) is imported on first use of one of its names, and the HTTP stack on the first request, so
``import client_sdk`` for spec parsing and perturbation (the collector, the estimators) stays cheap.
"""

from __future__ import annotations

from .errors import (
    CampaignUnavailable,
    ClientClosed,
    InvalidValue,
    InvalidValueType,
    LDPError,
    PayloadError,
    PrivacyWarning,
    RecordingError,
    SpecError,
    StateFileError,
    TransportError,
    UnknownCampaign,
    UnsupportedSpec,
    ValueNotInDomain,
)
from .mechanisms import mechanism_from_spec
from .randomness import DeterministicRandom, SecureRandom
from .spec import Spec, load_spec

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .runtime.client import Client, delete_local_data
    from .runtime.ledger import ReportPolicy
    from .runtime.queue import QueueLimits
    from .runtime.status import ClientStatus, FlushResult, Recorded, RecordStatus

_LAZY = {
    "Client": ".runtime.client", "delete_local_data": ".runtime.client",
    **dict.fromkeys(["ClientStatus", "FlushResult", "Recorded", "RecordStatus"], ".runtime.status"),
    "ReportPolicy": ".runtime.ledger", "QueueLimits": ".runtime.queue",
}

__version__ = "0.1.0"

__all__ = [
    "LDPError", "PayloadError", "PrivacyWarning", "SpecError", "ValueNotInDomain", "mechanism_from_spec",
    "DeterministicRandom", "SecureRandom", "Spec", "load_spec", "__version__",
    "Client", "FlushResult", "QueueLimits", "ReportPolicy", "TransportError", "CampaignUnavailable", "UnknownCampaign",
    "ClientStatus", "Recorded", "RecordStatus", "delete_local_data", "RecordingError", "InvalidValue",
    "InvalidValueType", "UnsupportedSpec", "StateFileError", "ClientClosed",
]


def __getattr__(name: str) -> Any:
    "Import the device runtime on first use (PEP 562)"
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # imported here: only a runtime name needs importlib (import client_sdk stays cheap)
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
