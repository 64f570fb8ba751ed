"""ldp-telemetry client SDK: perturb values on the device under local differential privacy.

Standard library only.  ``mechanism_from_spec(spec).perturb(value)`` gives the payload of one report; randomness
comes from the OS CSPRNG (``secrets``).  ``Client(url, key, state_dir, campaigns=[...])`` records, queues and
delivers (see ``docs/sdk.md``).  The HTTP stack is imported on the first request, not here.
"""

from .client import Client, ClientStatus, FlushResult, Recorded, RecordStatus, delete_local_data
from .errors import (
    InvalidValue,
    InvalidValueType,
    LDPError,
    PayloadError,
    PrivacyWarning,
    RecordingError,
    SpecError,
    StateFileError,
    UnsupportedSpec,
    ValueNotInDomain,
)
from .ledger import ReportPolicy
from .mechanisms import mechanism_from_spec
from .queue import QueueLimits
from .randomness import DeterministicRandom, SecureRandom
from .spec import Spec, load_spec
from .transport import CampaignUnavailable, TransportError, UnknownCampaign

__version__ = "0.1.0"

__all__ = [
    "LDPError", "PayloadError", "PrivacyWarning", "SpecError", "ValueNotInDomain", "mechanism_from_spec",
    "DeterministicRandom", "SecureRandom", "Spec", "load_spec", "__version__",
    "Client", "FlushResult", "QueueLimits", "ReportPolicy", "TransportError", "CampaignUnavailable", "UnknownCampaign",
    "ClientStatus", "Recorded", "RecordStatus", "delete_local_data", "RecordingError", "InvalidValue",
    "InvalidValueType", "UnsupportedSpec", "StateFileError",
]
