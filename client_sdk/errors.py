"""Exceptions and warnings raised by ldp-telemetry on purpose: one root, ``LDPError``, for every package.

One errors module per package: ``client_sdk.errors`` (this one), ``collector.errors``, ``estimators.errors``; a few
classes still live beside their only users (marked with their module below).  ``tests/test_errors.py`` imports every
module of the project and checks that each exception is here and under ``LDPError``.

Hierarchy (the module on the right, when not this one)::

    LDPError                                  the root of everything below
    ├── FieldError (ValueError)               bad input; ``.field`` names it, ``.reason`` says why
    │   ├── SpecError                         a campaign spec is invalid
    │   ├── PayloadError                      a report payload does not match its campaign's spec
    │   └── AggregatorMismatch                a distributed campaign's listing names another helper (URL or key)
    │                                         than the one the app configured (``Client(aggregators=...)``)
    ├── ValueNotInDomain (ValueError)         a categorical value outside the domain
    ├── RecordingError                        ``Client.record`` called wrongly (programming errors)
    │   ├── InvalidValue (ValueError)           value outside the domain, NaN, ...
    │   ├── InvalidValueType (TypeError)        a string for a numeric campaign, ...
    │   └── UnsupportedSpec (ValueError)        the campaign's spec names a mechanism this SDK does not know
    ├── StateFileError                        the SDK's queue/ledger file is damaged or unopenable
    ├── ClientClosed                          ``Client.spent``/``set_upload_enabled`` after close
    ├── DeviceStateError                      the RAPPOR device state file is unusable
    ├── TransportError                        retryable (network, timeout, 503)
    │   ├── NetworkError
    │   ├── RequestTimeout
    │   └── CampaignUnavailable
    ├── UnknownCampaign                       permanent (the collector has no such campaign)
    ├── SealError (ValueError)                a distributed report cannot be sealed to a listed HPKE config
    ├── ShareRejected (ValueError)            a distributed payload or input share cannot be used (``.reason``)
    ├── HpkeError (ValueError)                a ciphertext does not open
    ├── VerifyError (ValueError)              a Prio3 report fails verification
    ├── MissingDependency (ImportError)       the ``distributed`` extra (pycryptodome, cryptography) is missing
    ├── KindModuleError (ImportError)         a module named to register an outside campaign kind fails to import
    ├── Mismatch                              a computed value differs from a VDAF test vector
    ├── EstimatorError (ValueError)           estimators.errors: the root of the estimators' errors
    │   ├── NoReports                         no reports to estimate from
    │   ├── AggregateMismatch                 aggregates of different specs
    │   ├── CandidatesRequired                a Bloom-filter RAPPOR spec without candidates to decode against
    │   └── RapporFileError                   a RAPPOR CSV file is malformed (estimators.rappor.csv_io)
    ├── ReleaseMismatch (ValueError)          estimators.distributed.release: a release is not the spec's
    ├── SourceError                           estimators.errors: a report's data cannot be fetched
    ├── ReportError                           ldp_telemetry.cli.report: a report cannot be built
    ├── StorageError                          collector.errors: CampaignNotFound, VersionConflict, RateLimited,
    │                                         CampaignClosed (a closed campaign takes no new version)
    │   └── StorageUnavailable                a storage fault, retryable (503/507 with Retry-After):
    │       ├── DatabaseLocked                  locked by another process past the busy timeout (503)
    │       ├── DatabaseCorrupt                 the file is not a usable database (503)
    │       └── DiskFull                        no space left, or SQLite's size limit reached (507)
    ├── ArchiveError                          collector.errors: an archive or aggregate file cannot be used
    ├── ProvisionError                        collector.errors: a campaign's aggregators could not be provisioned
    ├── AdminApiError                         collector.errors: a request to the admin API failed (``status``)
    ├── Problem                               collector.errors: an HTTP problem+json answer
    ├── PeerError                             collector.distributed.peer: a request to the helper failed
    │   ├── PeerUnavailable                   retryable (network, timeout, 5xx, 429)
    │   │   └── PendingWork                   collector.distributed.leader: jobs stay pending
    │   └── PeerRefused                       permanent (a 4xx problem from the helper)
    ├── PeerProblem                           collector.distributed.helper: the helper refuses a leader's request
    ├── CollectError                          collector.distributed.leader: a batch cannot be collected (yet)
    ├── LevelRefused                          collector.kinds.poplar1.rules: an aggregator refuses a walk's level
    ├── UpstreamError                         collector.shuffler.upstream: the collector did not acknowledge (retry)
    ├── BudgetSpent                           collector.shuffler.upstream: a batch refused past its budget (dropped)
    ├── NoFreeConfigId                        collector.distributed.hpke_keys: every HPKE config id is taken
    ├── LedgerError                           collector.release_ledger: a release the ledger will not record
    │   └── BudgetExhausted                   it would pass the campaign's budget (409 budget-exhausted)
    └── DemoStopped (RuntimeError)            demo.errors: a demo phase stops (the other failed, or Ctrl-C)

    PrivacyWarning (UserWarning)              parameters that are legal but give weak privacy (epsilon > 10)

Everything here is permanent (retrying the same call gives the same error) except ``TransportError``,
``StorageUnavailable``, ``PeerUnavailable`` and their subclasses (the SDK and the leader retry with back-off).
Private control-flow exceptions (``_RollBack``, ``_Reject``) are LDPErrors too and never leave their module.
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


# -- transport (client_sdk.runtime.transport): TransportError and its subclasses are retryable -----
class TransportError(LDPError):
    "The request failed in transit; retrying may succeed"


class NetworkError(TransportError):
    "Connection refused, reset or otherwise broken"


class RequestTimeout(TransportError):
    "No answer within the timeout"


class CampaignUnavailable(TransportError):
    "The campaign's spec could not be fetched and no cached copy exists"


class UnknownCampaign(LDPError):
    "The collector has no campaign of that name"


# -- device state, distributed reports, the Prio3/HPKE mirror (client_sdk.vdaf) --------------------------------
class DeviceStateError(LDPError):
    "The device state file exists but cannot be used (unreadable, malformed or with a short secret)"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class SealError(LDPError, ValueError):
    "An input share cannot be sealed to a listed HPKE config (a public key HPKE refuses)"


class ShareRejected(LDPError, ValueError):
    "An input share or payload cannot be used: ``reason`` (``hpke-decrypt-error``, ...), ``field``, the message"

    def __init__(self, reason: str, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.reason = reason
        self.field = field
        self.message = message


class HpkeError(LDPError, ValueError):
    "A ciphertext did not open: wrong key, wrong info (report metadata), tampered or truncated"


class VerifyError(LDPError, ValueError):
    "The report failed verification (invalid proof, inconsistent joint randomness or malformed share)"


class MissingDependency(LDPError, ImportError):
    "Distributed (Prio3) campaigns need pycryptodome >= 3.20, the SDK's optional `distributed` extra"


class KindModuleError(LDPError, ImportError):
    "A module named to register a campaign kind (LDP_TELEMETRY_KINDS, entry points) could not be imported"


class Mismatch(LDPError):
    "A computed value differs from the test vector (the message says which and where)"
