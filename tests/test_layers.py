"""The import rules of docs/architecture.md: each layer imports only the layers below it."""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROJECT = {"client_sdk", "estimators", "collector", "ldp_telemetry", "demo"}


def imports(path):
    "Every module a file imports (absolute names; relative imports resolved), at any depth, with the line"
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]  # the package a relative import starts from
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else [])), node
            else:
                yield node.module, node


def files(package):
    return sorted((ROOT / package).rglob("*.py"))


# The one optional extra of the device (ldp-telemetry-sdk[distributed]): Prio3's XOFs, in client_sdk/vdaf/xof.py only,
# and HPKE for the input shares, in client_sdk/vdaf/hpke.py only.
OPTIONAL_DEVICE_IMPORTS = {"client_sdk/vdaf/xof.py": {"Crypto"}, "client_sdk/vdaf/hpke.py": {"cryptography"}}


def test_the_device_imports_only_the_standard_library_and_itself():
    for path in files("client_sdk"):
        allowed = OPTIONAL_DEVICE_IMPORTS.get(path.relative_to(ROOT).as_posix(), set())
        for name, _ in imports(path):
            top = name.split(".")[0]
            assert top == "client_sdk" or top in sys.stdlib_module_names or top in allowed, f"{path}: {name}"


def test_the_estimators_import_only_the_device_layer():
    for path in files("estimators"):
        for name, _ in imports(path):
            top = name.split(".")[0]
            assert top not in PROJECT - {"client_sdk", "estimators"}, f"{path}: {name}"


def test_spec_and_shared_modules_import_no_randomizer():
    "The randomizers build on the spec, never the other way (no cycle, no function-level imports)"
    for module in ("spec", "rappor", "wire", "errors", "randomness"):
        path = ROOT / "client_sdk" / f"{module}.py"
        for name, _ in imports(path):
            assert not name.startswith(("client_sdk.mechanisms", "client_sdk.client")), f"{path}: {name}"


def test_the_collector_imports_no_cli_or_demo():
    for path in files("collector"):
        for name, _ in imports(path):
            assert name.split(".")[0] not in {"ldp_telemetry", "demo"}, f"{path}: {name}"


def test_no_function_level_imports_in_the_mechanisms():
    paths = [ROOT / "client_sdk" / "spec.py", ROOT / "client_sdk" / "rappor.py",
             *files("client_sdk/mechanisms"), *files("estimators/mechanisms")]
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nested = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not nested, f"{path}: import inside {node.name}"
