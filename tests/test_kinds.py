"""Campaign kinds are plug-ins (docs/architecture.md, "Adding a campaign kind"): nothing outside a kind's own modules
asks which kind a campaign is; it looks the kind up in the registries and calls it."""

import ast
import pathlib

from client_sdk.kinds import kind_names

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("client_sdk", "estimators", "collector", "ldp_telemetry", "demo")
# The registries, and the modules of the distributed kind itself (its protocol, store, aggregators and estimates)
KIND_MODULES = ("client_sdk/kinds/", "collector/kinds/", "estimators/kinds/", "estimators/report/kinds/",
                "client_sdk/distributed.py", "client_sdk/distributed_messages.py", "client_sdk/spec_prio3.py",
                "client_sdk/vdaf/", "collector/distributed/", "estimators/distributed/")

# Not campaign kinds: Spark's "local" master (local mode), in the Spark aggregation job
NOT_KINDS = {("collector/spark_aggregate.py", "is_local"),
             ("collector/spark_aggregate.py", "master == 'local'")}


def _names_a_kind(node, kinds):
    "A kind's name as a literal (or a tuple/list/set of literals holding one)"
    if isinstance(node, ast.Constant):
        return node.value in kinds
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_kind(element, kinds) for element in node.elts)
    return False


def _reads_trust(node):
    "``x.trust``, ``getattr(x, 'trust', ...)``, ``x.get('trust')`` or ``x['trust']``"
    if isinstance(node, ast.Attribute):
        return node.attr == "trust"
    if isinstance(node, ast.Call) and node.args:
        first = node.args[1] if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) > 1 \
            else node.args[0]
        getter = isinstance(node.func, ast.Name) and node.func.id == "getattr" or (
            isinstance(node.func, ast.Attribute) and node.func.attr == "get")
        return getter and isinstance(first, ast.Constant) and first.value == "trust"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "trust"
    return False


def kind_branches(source, kinds):
    "(line, code) of each place that tests a campaign's kind: compares it with a kind's name, or asks is_<kind>"
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_a_kind(operand, kinds) or _reads_trust(operand) for operand in operands):
                found.append((node.lineno, ast.unparse(node)))
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
            node.name if isinstance(node, ast.FunctionDef) else None
        if name is not None and any(name.startswith(f"is_{kind}") for kind in kinds):
            found.append((node.lineno, name))
    return found


def branches_under(root, kinds):
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith(KIND_MODULES):
                continue
            branches = [(line, code) for line, code in kind_branches(path.read_text(), kinds)
                        if (relative, code) not in NOT_KINDS]
            if branches:
                found[relative] = branches
    return found


def test_the_check_finds_kind_branches():
    "The check itself, on the shapes the code had before the registries"
    kinds = {"local", "distributed"}
    for code in ('if spec.trust == "distributed": pass', 'x = getattr(c.spec, "trust", "local") != "distributed"',
                 'if body.get("trust") == "distributed": pass', 'ok = spec["trust"] in ("local", "distributed")',
                 'def is_distributed(campaign): pass', 'if is_distributed_spec(spec): pass',
                 'y = "distributed DP" if kind == "distributed" else "local DP"', "z = spec.trust != other"):
        assert kind_branches(code, kinds), code
    for code in ('models["distributed"]["std_error"]', 'for name in ("local", "distributed", "central"): pass',
                 "if kind_of(spec).needs_aggregators: pass", 'spec = {"trust": "distributed"}'):
        assert not kind_branches(code, kinds), code


def test_no_kind_branches_outside_the_kind_modules():
    "0 places outside the registries and a kind's own modules ask which kind a campaign is"
    assert set(kind_names()) >= {"local", "distributed"}
    assert branches_under(ROOT, set(kind_names())) == {}
