"""One error root: every exception ldp-telemetry raises on purpose is an LDPError, and the hierarchy written out
in client_sdk.errors names every one of them."""

import inspect

import client_sdk.device_state
import client_sdk.errors
import client_sdk.transport
import collector.problems
import collector.storage
import estimators.errors
import estimators.rappor.csv_io
import estimators.rappor.decode
import ldp_telemetry.cli.report
from client_sdk.errors import FieldError, LDPError, PayloadError, SpecError

MODULES = [client_sdk.errors, client_sdk.transport, client_sdk.device_state, estimators.errors,
           estimators.rappor.csv_io, estimators.rappor.decode, collector.storage, collector.problems,
           ldp_telemetry.cli.report]


def project_exceptions():
    for module in MODULES:
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, Exception) and not issubclass(value, Warning) \
                    and value.__module__ == module.__name__:
                yield name, value


def test_every_project_exception_is_an_ldp_error_and_is_documented():
    found = dict(project_exceptions())
    assert {"NoReports", "AggregateMismatch", "RapporFileError", "StorageError", "Problem", "ReportError"} <= set(found)
    hierarchy = client_sdk.errors.__doc__
    for name, cls in found.items():
        assert issubclass(cls, LDPError), name
        assert name in hierarchy, name


def test_field_errors_share_one_constructor():
    for cls in (SpecError, PayloadError):
        error = cls("payload[0]", "must be an integer")
        assert isinstance(error, FieldError) and isinstance(error, ValueError)
        assert (error.field, error.reason, str(error)) == ("payload[0]", "must be an integer",
                                                           "payload[0]: must be an integer")
        assert "__init__" not in vars(cls)
