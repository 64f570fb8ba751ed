"""One error root: every exception class defined anywhere in ldp-telemetry is an LDPError with a one-line docstring,
and the hierarchy written out in client_sdk.errors names every public one.

The modules are found by walking the packages (pkgutil.walk_packages), not from a list, so a new module is checked
without editing this file.  Every module imports without optional services: pyspark is imported only inside the
functions that run a job (collector.spark_aggregate), so no JVM starts here."""

import importlib
import inspect
import pkgutil

import client_sdk.errors
from client_sdk.errors import FieldError, LDPError, PayloadError, SpecError

PACKAGES = ("client_sdk", "estimators", "collector", "ldp_telemetry", "demo")


def project_modules():
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            yield importlib.import_module(info.name)


def project_exceptions():
    "(qualified name, class) of every exception class defined in the project (warnings are not errors)"
    for module in project_modules():
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and not issubclass(value, Warning) \
                    and value.__module__ == module.__name__:
                yield f"{module.__name__}.{value.__qualname__}", value


def test_the_walk_reaches_every_package_and_module():
    names = {module.__name__ for module in project_modules()}
    assert {"client_sdk.vdaf.hpke", "collector.distributed.leader", "estimators.window",
            "ldp_telemetry.cli.report", "demo.run", "demo.servers", "collector.spark_aggregate"} <= names


def test_every_project_exception_is_an_ldp_error_with_a_one_line_docstring():
    found = dict(project_exceptions())
    assert len(found) >= 50  # the walk found the hierarchy, not an empty list
    hierarchy = client_sdk.errors.__doc__
    for name, cls in found.items():
        assert issubclass(cls, LDPError), f"{name} does not descend from LDPError"
        doc = vars(cls).get("__doc__")
        assert doc and doc.strip() and "\n" not in doc.strip(), f"{name} needs a one-line docstring"
        short = cls.__name__
        if not short.startswith("_"):
            assert short in hierarchy, f"{name} is missing from the hierarchy in client_sdk.errors"


def test_each_exception_is_defined_once():
    "An exception re-exported from another module is the same class, never a second definition of the name"
    by_name: dict[str, list[str]] = {}
    for name, cls in project_exceptions():
        by_name.setdefault(cls.__name__, []).append(name)
    assert {short: names for short, names in by_name.items() if len(names) > 1} == {}


def test_field_errors_share_one_constructor():
    for cls in (SpecError, PayloadError):
        error = cls("payload[0]", "must be an integer")
        assert isinstance(error, FieldError) and isinstance(error, ValueError)
        assert (error.field, error.reason, str(error)) == ("payload[0]", "must be an integer",
                                                           "payload[0]: must be an integer")
        assert "__init__" not in vars(cls)
