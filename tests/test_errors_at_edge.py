"""Errors become HTTP at the edge: domain code raises domain errors (a problem type, a detail, a field) and only the
HTTP modules choose a status.  An AST walk over every project module: no call outside the edge passes an HTTP
status number (100-599) to an error's constructor, positionally or as ``status=``."""

from __future__ import annotations

import ast
import pathlib

from client_sdk.distributed_messages import ProtocolError
from collector.distributed import api

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("client_sdk", "estimators", "collector", "ldp_telemetry", "demo")
# The modules that speak HTTP: the blueprints and their error mapping, authentication and CORS (request hooks), the
# app factory and the server (framing), and a kind's view hooks (estimate_response answers the Flask response)
EDGE = {
    "collector/api", "collector/distributed/api.py", "collector/problems.py", "collector/errors.py",
    "collector/auth.py", "collector/cors.py", "collector/app.py", "collector/server.py",
    "collector/request_buffer.py", "collector/kinds/local.py", "collector/kinds/heavy_hitters/api.py",
    "collector/kinds/repeated.py",
    "collector/kinds/quantiles/api.py", "collector/kinds/poplar1/api.py", "collector/shuffler/app.py",
    "collector/dashboard",
}


def at_edge(path: pathlib.Path) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    return any(relative == edge or relative.startswith(edge + "/") for edge in EDGE)


def http_status_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and 100 <= node.value <= 599


def error_constructions_with_status(path: pathlib.Path):
    "(line, callee) of each call of a CapWords name (a class) given an HTTP status literal"
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if not callee[:1].isupper() or not callee.endswith(("Error", "Problem", "Refused", "Unavailable")):
            continue
        statuses = [arg for arg in node.args[:1] if http_status_literal(arg)]
        statuses += [kw.value for kw in node.keywords if kw.arg == "status" and http_status_literal(kw.value)]
        if statuses:
            yield node.lineno, callee


def test_no_domain_module_gives_an_error_an_http_status():
    offenders = [f"{path.relative_to(ROOT)}:{line}: {callee}(<status>, ...)"
                 for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")) if not at_edge(path)
                 for line, callee in error_constructions_with_status(path)]
    assert offenders == []


def test_the_check_finds_a_status_given_to_a_domain_error():
    source = ROOT / "collector" / "distributed" / "leader" / "collect.py"
    assert list(error_constructions_with_status(source)) == []
    planted = ast.parse("raise CollectError(409, 'batch-open', 'still open')\nraise PeerProblem(status=400)")
    found = [n for n in ast.walk(planted) if isinstance(n, ast.Call)
             and (http_status_literal(n.args[0]) if n.args else http_status_literal(n.keywords[0].value))]
    assert len(found) == 2


def raised_slugs(path: pathlib.Path, error: str) -> set[str]:
    "The ProtocolError members a module gives ``error`` as its problem type"
    return {ProtocolError[node.args[0].attr].value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == error and node.args
            and isinstance(node.args[0], ast.Attribute) and ast.unparse(node.args[0].value) == "ProtocolError"}


def test_every_problem_the_distributed_domain_raises_has_its_answer_at_the_edge():
    collect = raised_slugs(ROOT / "collector" / "distributed" / "leader" / "collect.py", "CollectError")
    helper = raised_slugs(ROOT / "collector" / "distributed" / "helper.py", "PeerProblem")
    assert len(collect) >= 9 and len(helper) >= 7  # the walk found the raises
    assert collect <= set(api.COLLECT_STATUS) and helper <= set(api.PEER_STATUS)
