"""Campaign kinds are plug-ins (docs/architecture.md, "Adding a campaign kind"): nothing outside a kind's own modules
asks which kind a campaign is; it looks the kind up in the registries and calls it."""

import ast
import pathlib

from client_sdk.kinds import kind_names
from client_sdk.spec import TRUST_MODELS

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
    "0 places outside the registries and a kind's own modules ask which kind a campaign is (or which trust model)"
    assert set(kind_names()) >= {"local", "prio3"}
    assert branches_under(ROOT, set(kind_names()) | set(TRUST_MODELS)) == {}


# -- kind checks in disguise: a flag a kind sets, read outside the kind --------------------------------------------
KIND_CALLS = {"kind_of", "find_kind", "collector_kind", "estimate_kind", "report_kind", "kind"}


def kind_classes():
    "The classes of every registered kind on every side, with their bases"
    import collector.kinds.base as collector_kinds
    import estimators.kinds.base as estimate_kinds
    import estimators.report.kinds.base as report_kinds
    from client_sdk.kinds.base import DEVICE

    registries = [DEVICE, collector_kinds._KINDS, estimate_kinds._KINDS, report_kinds._KINDS]
    return {cls for registry in registries for kind in registry.kinds.values() for cls in type(kind).__mro__
            if cls is not object}


def flag_members(classes):
    "The members of kind classes that are flags, not methods: booleans (a label or a name is what a kind says)"
    return {name for cls in classes for name, value in vars(cls).items() if isinstance(value, bool)}


def _is_kind(node):
    "An expression that is a kind: ``kind_of(spec)`` and the other lookups, or a name ending in ``kind``"
    if isinstance(node, ast.Call):
        node = node.func
        return isinstance(node, (ast.Name, ast.Attribute)) and (
            node.id if isinstance(node, ast.Name) else node.attr) in KIND_CALLS
    return isinstance(node, ast.Name) and node.id.lower().endswith("kind")


def disguised_checks(source, flags):
    "(line, code) of each read of a kind's flag: ``kind_of(spec).needs_aggregators``, ``kind.takes_mechanism``"
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in flags and _is_kind(node.value)]


def bool_class_vars(source, class_names=None):
    "(line, code) of each ``x: ClassVar[bool]`` in a class (of ``class_names``): a capability flag on a kind"
    return [(node.lineno, ast.unparse(node)) for cls in ast.walk(ast.parse(source)) if isinstance(cls, ast.ClassDef)
            and (class_names is None or cls.name in class_names) for node in cls.body
            if isinstance(node, ast.AnnAssign) and "ClassVar[bool]" in ast.unparse(node.annotation)]


def test_the_check_finds_disguised_kind_checks():
    flags = {"needs_aggregators", "takes_mechanism"}
    for code in ("if kind_of(spec).needs_aggregators: pass", "x = find_kind(s) and find_kind(s).takes_mechanism",
                 "kind = kind_of(spec)\nif kind.needs_aggregators: pass", "y = collector_kind(c).takes_mechanism"):
        assert disguised_checks(code, flags), code
    for code in ("kind_of(spec).aggregators_of(listing)", "kind_of(spec).require_randomizer(spec)",
                 "spec.needs_aggregators", "kind_of(spec).name"):
        assert not disguised_checks(code, flags), code
    assert bool_class_vars("class K:\n    needs_aggregators: ClassVar[bool] = False")


def test_no_disguised_kind_checks():
    "0 kind classes declare a ClassVar[bool]; 0 places outside the kinds read a kind's data members as flags"
    classes = kind_classes()
    flags, names = flag_members(classes), {cls.__name__ for cls in classes}
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            text = path.read_text()
            declared = bool_class_vars(text, names)
            if declared:
                found[relative] = declared
            if not relative.startswith(KIND_MODULES) and disguised_checks(text, flags):
                found[relative] = disguised_checks(text, flags)
    assert found == {}
