"""The report asks the kind (docs/architecture.md, "Adding a campaign kind"): each kind reads its estimate into its own
type and lays that type out (estimators.report.kinds, ``sections``); no report code outside the kinds chooses a
table, a note or a figure by looking at which members an estimate has."""

import ast
import pathlib

import estimators.kinds  # noqa: F401  the built-in kinds' estimate types, registered
from estimators.estimates import Estimate
from estimators.report import ReportData, render_table
from estimators.report.kinds import report_kind
from estimators.report.sections import MEAN, PER_VALUE

from .report_fixtures import browser_result, distributed_result, distributed_sum_result, load_time_result, rappor_result

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Report code: the renderers and what hands them an estimate (the kinds' own modules lay out their own types)
REPORT_CODE = ("estimators/report/", "estimators/window.py", "collector/reporting.py", "ldp_telemetry/cli/", "demo/")
KIND_MODULES = ("estimators/report/kinds/",)


def estimate_types():
    "The names of Estimate and every subclass of it the kinds declare"
    found, pending = set(), [Estimate]
    while pending:
        cls = pending.pop()
        found.add(cls.__name__)
        pending += cls.__subclasses__()
    return found


def _names(node):
    elements = node.elts if isinstance(node, ast.Tuple) else [node]
    return {element.id if isinstance(element, ast.Name) else element.attr if isinstance(element, ast.Attribute)
            else "" for element in elements}


def _is_estimate(node):
    "An expression that holds an estimate by the names the report code gives one: result, estimate, data.estimate"
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name in {"result", "release", "first"} or name.endswith("estimate")


def shape_checks(source, types):
    """(line, code) of each place that asks an estimate what it is: ``isinstance(x, <an estimate type>)``,
    ``hasattr``, a three-argument ``getattr``, ``is_mean``, a comparison of ``.kind`` (the estimate's type
    "frequency"/"mean"), or a test of whether its JSON has a member (``"mean" in result.json``)"""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            asked = bool(node.args) and _is_estimate(node.args[0])
            if asked and (name == "hasattr" or name == "getattr" and len(node.args) == 3) or (
                    name == "isinstance" and len(node.args) == 2 and _names(node.args[1]) & types):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.Name, ast.Attribute)) and (
                node.id if isinstance(node, ast.Name) else node.attr) == "is_mean":
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            kind = any(isinstance(operand, ast.Attribute) and operand.attr == "kind" for operand in operands)
            member = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                isinstance(operand, ast.Attribute) and operand.attr in {"json", "result"} for operand in operands)
            if kind or member:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_check_finds_shape_checks():
    "The check itself, on the shapes the report code had before each kind typed its estimate"
    types = estimate_types()
    assert {"Estimate", "LocalFrequencies", "LocalMean", "RapporFrequencies", "Prio3Release"} <= types
    for code in ("if result.is_mean and result.mean is not None: pass", 'unbiased = result.kind == "frequency"',
                 "x = result.trust_models if hasattr(result, 'trust_models') else None",
                 "y = getattr(estimate, 'mean', None)", "if isinstance(estimate, LocalMean): pass",
                 "ok = isinstance(e, (Prio3Release, int))", 'if "mean" in data.result: pass',
                 'quantity = "the mean" if is_mean(result) else "one value"', 'if first.kind in ("mean",): pass'):
        assert shape_checks(code, types), code
    for code in ("kind = report_kind(data.estimate)", "rows = data.estimate.values", "if truth is not None: pass",
                 "isinstance(truth, float)", "getattr(module, name, None)", "hasattr(exc, 'notes')",
                 "if estimate.central is not None: pass",
                 "release = typed_as(Prio3Release, result)", "x = data.kind"):
        assert not shape_checks(code, types), code


def test_no_report_code_branches_on_an_estimates_shape():
    "0 places in the report code outside the kinds' report modules ask an estimate which members it has"
    types = estimate_types()
    found = {}
    for prefix in REPORT_CODE:
        target = ROOT / prefix
        for path in sorted(target.rglob("*.py") if target.is_dir() else [target]):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(KIND_MODULES):
                continue
            checks = shape_checks(path.read_text(), types)
            if checks:
                found[relative] = checks
    assert found == {}


def test_each_kind_lays_out_its_own_estimate_types():
    "The section, and so the table and the main figure, is the kind's choice for the type it read"
    for result, section in ((browser_result(), PER_VALUE), (rappor_result(), PER_VALUE),
                            (load_time_result(), MEAN), (distributed_result(), PER_VALUE),
                            (distributed_sum_result(), MEAN)):
        data = ReportData(result)
        assert report_kind(data.estimate).section(data.estimate) is section, result.get("kind")
        render_table(data)  # every type renders
