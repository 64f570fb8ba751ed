"""One definition of each default: the collector's settings have their defaults in ``collector.config.DEFAULTS``
only.  An AST walk over every project module: a keyword default, a module or class constant, or a
``config.get("KEY", fallback)`` whose literal value is a setting's default and whose name says it is that setting
(a word of the setting's name, beyond the generic ones) fails; the setting's value is read from DEFAULTS instead."""

from __future__ import annotations

import ast
import pathlib

from collector.config import DEFAULTS

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("client_sdk", "estimators", "collector", "ldp_telemetry", "demo")
NUMERIC = {key: value for key, value in DEFAULTS.items() if type(value) in (int, float) and value != 0}
GENERIC = {"DEFAULT", "MAX", "MIN", "PUBLIC", "PEER", "RATE", "DAYS", "SECONDS", "MS", "BYTES", "INTERVAL", "DIR"}
# Same value, another setting: (module, name) -> why it is not the collector's default
UNRELATED = {
    ("client_sdk/runtime/held.py", "batch"): "the device's reports per delivery, not the collector's batch limit",
    ("client_sdk/spec_prio3.py", "min_batch"): "a Prio3 spec's min_batch, not the collector's batch limit",
    ("collector/admin_client.py", "DEFAULT_TIMEOUT"): "the admin API client's timeout, not the leader's peer timeout",
    ("collector/server.py", "timeout"): "gunicorn's worker timeout",
    ("collector/storage/base.py", "REBUILD_CHUNK"): "an aggregate rebuild's rows per fetch, not a poplar1 chunk",
    ("collector/storage/day_scrub.py", "SCRUB_CHUNK"): "a day scrub's rows per statement, not a poplar1 chunk",
    ("ldp_telemetry/cli/collector.py", "HTTP_TIMEOUT_SECONDS"): "the CLI's admin requests, not the peer timeout",
}


def words(name: str) -> set[str]:
    return set(name.upper().split("_")) - GENERIC - {""}


def numeric(node: ast.AST | None) -> int | float | None:
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None
    return value if type(value) in (int, float) else None


def named_literals(tree: ast.AST):
    "(name, line, value) of every keyword default, constant assignment and config.get fallback that is a number"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
            pairs += [(arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)]
            for arg, default in pairs:
                yield arg.arg, node.lineno, numeric(default)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            yield node.targets[0].id, node.lineno, numeric(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node.lineno, numeric(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) and node.args[0].value in DEFAULTS:
            yield str(node.args[0].value), node.lineno, numeric(node.args[1])


def repeated_defaults(source: str, relative: str) -> list[str]:
    "The settings' defaults the module ``relative`` (its text ``source``) writes again"
    found = []
    for name, line, value in named_literals(ast.parse(source)):
        if value is None or (relative, name) in UNRELATED:
            continue
        for key, default in NUMERIC.items():
            if value == default and words(name) & words(key):
                found.append(f"{relative}:{line}: {name} = {value!r} repeats DEFAULTS[{key!r}]")
    return found


def test_no_setting_default_is_written_twice():
    offenders = [found for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
                 if path.relative_to(ROOT).as_posix() != "collector/config.py"
                 for found in repeated_defaults(path.read_text(), path.relative_to(ROOT).as_posix())]
    assert offenders == []


def test_the_check_finds_a_repeated_default():
    planted = ("LEASE_SECONDS = 60.0\n\n"
               "def collect(grace: float = 3600.0):\n    return config.get('PEER_TIMEOUT', 30.0)\n")
    found = repeated_defaults(planted, "collector/planted.py")
    names = [line.split(": ", 1)[1].split(" = ")[0] for line in found]
    assert names == ["LEASE_SECONDS", "grace", "PEER_TIMEOUT"]


def test_the_unrelated_names_are_still_there():
    "An entry of UNRELATED whose constant is gone is removed with it"
    for (module, name) in UNRELATED:
        names = {found for found, _, _ in named_literals(ast.parse((ROOT / module).read_text()))}
        assert name in names, (module, name)
