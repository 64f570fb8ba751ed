"""Exceptions and warnings raised by ldp-telemetry on purpose: one root, ``LDPError``, for every package.

Hierarchy (each class lives in the module named on the right)::

    LDPError                                  client_sdk.errors: the root of everything below
    ├── FieldError (ValueError)               client_sdk.errors: bad input; ``.field`` names it, ``.reason`` says why
    │   ├── SpecError                         a campaign spec is invalid
    │   ├── PayloadError                      a report payload does not match its campaign's spec
    │   └── AggregatorMismatch                a distributed campaign's listing names another helper (URL or key)
    │                                         than the one the app configured (``Client(aggregators=...)``)
    ├── ValueNotInDomain (ValueError)         client_sdk.errors: a categorical value outside the domain
    ├── RecordingError                        client_sdk.errors: ``Client.record`` called wrongly (programming errors)
    │   ├── InvalidValue (ValueError)           value outside the domain, NaN, ...
    │   ├── InvalidValueType (TypeError)        a string for a numeric campaign, ...
    │   └── UnsupportedSpec (ValueError)        the campaign's spec names a mechanism this SDK does not know
    ├── StateFileError                        client_sdk.errors: the SDK's queue/ledger file is damaged or unopenable
    ├── ClientClosed                          client_sdk.errors: ``Client.spent``/``set_upload_enabled`` after close
    ├── DeviceStateError                      client_sdk.device_state: the RAPPOR device state file is unusable
    ├── TransportError                        client_sdk.transport: retryable (network, timeout, 503)
    │   ├── NetworkError
    │   ├── RequestTimeout
    │   └── CampaignUnavailable
    ├── UnknownCampaign                       client_sdk.transport: permanent (the collector has no such campaign)
    ├── EstimatorError (ValueError)           estimators.errors: the root of the estimators' errors
    │   ├── NoReports                         no reports to estimate from
    │   ├── AggregateMismatch                 aggregates of different specs
    │   └── RapporFileError                   a RAPPOR CSV file is malformed (estimators.rappor.csv_io)
    ├── ReportError                           ldp_telemetry.cli.report: a report cannot be built
    ├── StorageError                          collector.storage: CampaignNotFound, VersionConflict, RateLimited,
    │                                         CampaignClosed (a closed campaign takes no new version)
    │   └── StorageUnavailable                a storage fault, retryable (503/507 with Retry-After):
    │       ├── DatabaseLocked                  locked by another process past the busy timeout (503)
    │       ├── DatabaseCorrupt                 the file is not a usable database (503)
    │       └── DiskFull                        no space left, or SQLite's size limit reached (507)
    └── Problem                               collector.problems: an HTTP problem+json answer

    PrivacyWarning (UserWarning)              parameters that are legal but give weak privacy (epsilon > 10)

Everything here is permanent (retrying the same call gives the same error) except ``TransportError`` and its
subclasses, which the SDK retries with back-off.
"""

from __future__ import annotations


class LDPError(Exception):
    "Base class for every error ldp-telemetry raises on purpose"


class FieldError(LDPError, ValueError):
    "Bad input, with the offending field and the reason"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class SpecError(FieldError):
    "A campaign spec is invalid"


class AggregatorMismatch(FieldError):
    "A leader's listing names another helper (URL or HPKE key) than the one this device knows out of band"


class ValueNotInDomain(LDPError, ValueError):
    "A categorical value is not in the campaign's domain"


class PayloadError(FieldError):
    "A report payload does not match its campaign's spec"


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


class ClientClosed(LDPError):
    "The client was closed (``close()``, ``delete_local_data()``): its state file is no longer open"
