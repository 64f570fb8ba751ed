"""Exceptions and warnings raised by ldp-telemetry on purpose.

Hierarchy::

    LDPError                      base of everything below
    ├── SpecError (ValueError)    a campaign spec is invalid; ``.field`` names the offending field
    ├── ValueNotInDomain (ValueError)
    │                             a categorical value outside the campaign's domain (raised before any draw)
    ├── PayloadError (ValueError) a report payload does not match its campaign's spec; ``.field`` names it
    ├── RecordingError            ``Client.record`` called wrongly (programming errors only)
    │   ├── InvalidValue (ValueError)      value outside the domain, NaN, ...
    │   ├── InvalidValueType (TypeError)   a string for a numeric campaign, ...
    │   └── UnsupportedSpec (ValueError)   the campaign's spec names a mechanism this SDK does not know
    └── StateFileError            the SDK's state file is damaged or cannot be opened

    PrivacyWarning (UserWarning)  parameters that are legal but give weak privacy (for example epsilon > 10)

All of these are permanent: retrying the same call gives the same error.  Transport errors (retryable) live in
``client_sdk.transport``.
"""

from __future__ import annotations


class LDPError(Exception):
    "Base class for every error ldp-telemetry raises on purpose"


class SpecError(LDPError, ValueError):
    "A campaign spec is invalid"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class ValueNotInDomain(LDPError, ValueError):
    "A categorical value is not in the campaign's domain"


class PayloadError(LDPError, ValueError):
    "A report payload does not match its campaign's spec"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class PrivacyWarning(UserWarning):
    "Parameters that are legal but give weak privacy"


class RecordingError(LDPError):
    "``Client.record`` was called wrongly (a programming error); operational conditions never raise"


class InvalidValue(RecordingError, ValueError):
    "The value cannot be reported by this campaign (outside its domain, NaN, ...)"


class InvalidValueType(RecordingError, TypeError):
    "The value has the wrong type for this campaign (a string for a numeric campaign, ...)"


class UnsupportedSpec(RecordingError, ValueError):
    "The campaign's spec cannot be used by this SDK (an unknown mechanism, an invalid field)"


class StateFileError(LDPError):
    "The SDK's state file cannot be opened or is damaged; ``delete_local_data(state_dir)`` starts afresh"
