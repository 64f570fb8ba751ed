"""The import rules of docs/architecture.md: each layer imports only the layers below it."""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROJECT = {"client_sdk", "estimators", "collector", "ldp_telemetry", "demo"}


def imports(path):
    "Every module a file imports (absolute names; relative imports resolved), at any depth, with the line"
    # the package a relative import starts from
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1] if path.is_relative_to(ROOT) else []
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


# The one optional extra of the device (ldp-telemetry-sdk[distributed]): the VDAFs' XOFs, in client_sdk/vdaf/xof.py
# and (Poplar1's batched fixed-key AES) client_sdk/vdaf/xof_aes.py only, and HPKE for the input shares, in
# client_sdk/vdaf/hpke.py only.
OPTIONAL_DEVICE_IMPORTS = {"client_sdk/vdaf/xof.py": {"Crypto"}, "client_sdk/vdaf/xof_aes.py": {"cryptography"},
                           "client_sdk/vdaf/hpke.py": {"cryptography"}}


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


# client_sdk is two packages in one folder tree (docs/architecture.md, "The device"): the device runtime in
# client_sdk/runtime/, which only a device runs (records, queues, delivers: sqlite3, threads, HTTP), and the shared core
# every side uses, the rest of client_sdk (specs, randomizers, payloads, Prio3).  The package's ``__init__``
# re-exports both (the runtime's names imported on first use, checked by the client's import-cost test).
RUNTIME = "client_sdk.runtime"
# the runtime's names ``client_sdk`` re-exports, imported on first use (client_sdk/__init__.py's _LAZY)
RUNTIME_NAMES = {"Client", "delete_local_data", "ClientStatus", "FlushResult", "Recorded", "RecordStatus",
                 "ReportPolicy", "QueueLimits"}


def runtime_imports(path):
    "The runtime modules and names a file imports (``client_sdk.runtime.queue``, ``from client_sdk import Client``)"
    for name, node in imports(path):
        if name == RUNTIME or name.startswith(RUNTIME + "."):
            yield name
        elif name == "client_sdk" and isinstance(node, ast.ImportFrom):
            yield from (alias.name for alias in node.names if alias.name in RUNTIME_NAMES | {"runtime"})


def core_files():
    return [path for path in files("client_sdk") if "runtime" not in path.relative_to(ROOT / "client_sdk").parts]


def test_the_re_exported_runtime_names_are_the_lazy_ones():
    "client_sdk's __init__ imports the runtime only on first use of one of these names"
    import client_sdk

    assert set(client_sdk._LAZY) == RUNTIME_NAMES
    assert all(module.startswith(".runtime.") for module in client_sdk._LAZY.values())


def test_runtime_imports_are_found():
    "The check itself: every way of reaching the runtime from a core file is reported"
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "probe.py"
        path.write_text("from client_sdk import Client, Spec\nimport client_sdk.runtime.queue\n"
                        "from client_sdk.runtime import ledger\n")
        assert sorted(runtime_imports(path)) == ["Client", "client_sdk.runtime", "client_sdk.runtime.queue"]


def test_the_shared_core_imports_no_device_runtime():
    "Specs, randomizers, payloads and Prio3 stand without the queue, the state file or HTTP"
    checked = [path for path in core_files() if path != ROOT / "client_sdk" / "__init__.py"]
    assert len(checked) > 10
    for path in checked:
        assert not list(runtime_imports(path)), f"{path}: {list(runtime_imports(path))}"


def test_the_server_side_imports_no_device_runtime():
    """The collector, the estimators (reports included) and the CLI use the shared core only; a device's runtime is
    imported by the demo (it simulates devices with ``Client``) and the tests, nowhere else"""
    for package in ("collector", "estimators", "ldp_telemetry"):
        for path in files(package):
            assert not list(runtime_imports(path)), f"{path}: {list(runtime_imports(path))}"


def test_spec_and_shared_modules_import_no_randomizer():
    "The randomizers build on the spec, never the other way (no cycle, no function-level imports)"
    for module in ("spec", "rappor", "wire", "errors", "randomness"):
        path = ROOT / "client_sdk" / f"{module}.py"
        for name, _ in imports(path):
            assert not name.startswith(("client_sdk.mechanisms", "client_sdk.runtime.client")), f"{path}: {name}"


def test_the_collector_imports_no_cli_or_demo():
    for path in files("collector"):
        for name, _ in imports(path):
            assert name.split(".")[0] not in {"ldp_telemetry", "demo"}, f"{path}: {name}"


# The dashboard (collector/dashboard/) is the one exception: it serves each kind's report panel
# (estimators.report.panel through ReportKind.panel), so that the page and `ldp-telemetry report` never disagree.
REPORT_READERS = {"collector/dashboard/api.py"}


def test_the_collector_never_imports_the_reports():
    "The reports render estimates; the collector makes and serves them with the estimators proper (estimators.window)"
    for path in files("collector"):
        if path.relative_to(ROOT).as_posix() in REPORT_READERS:
            continue
        for name, node in imports(path):
            reports = name == "estimators.report" or name.startswith("estimators.report.") or (
                name == "estimators" and isinstance(node, ast.ImportFrom)
                and any(alias.name == "report" for alias in node.names))
            assert not reports, f"{path}: {name}"


def test_no_function_level_imports_in_the_mechanisms():
    paths = [ROOT / "client_sdk" / "spec.py", ROOT / "client_sdk" / "rappor.py",
             *files("client_sdk/mechanisms"), *files("estimators/mechanisms")]
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nested = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not nested, f"{path}: import inside {node.name}"


def unexplained_function_imports(path):
    """The function-level imports of a file that do not say why: each run of imports in a function needs a comment
    line just above it (its measured reason: start-up, an optional dependency, an import order), unless the module
    states one reason for all of them in a ``# Function-level imports: ...`` comment"""
    text = path.read_text()
    if "\n# Function-level imports: " in text:
        return
    lines = text.splitlines()
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for body in (node.body for node in ast.walk(function) if hasattr(node, "body") and isinstance(node.body, list)):
            previous = None
            for statement in body:
                is_import = isinstance(statement, (ast.Import, ast.ImportFrom))
                if is_import and not previous and not lines[statement.lineno - 2].strip().startswith("#"):
                    yield f"{path.relative_to(ROOT)}:{statement.lineno}: {ast.unparse(statement)}"
                previous = is_import


def test_function_level_imports_say_why():
    "An import inside a function costs a reader a question; it stays only with its reason written above it"
    offenders = [line for package in sorted(PROJECT) for path in files(package)
                 for line in unexplained_function_imports(path)]
    assert offenders == []


def module_level_imports(path):
    "(module, names) of each import run when a file is loaded: not in functions, not under ``if TYPE_CHECKING``"
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]
    pending = list(ast.parse(path.read_text()).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            yield ".".join(base + ([node.module] if node.module else [])), tuple(alias.name for alias in node.names)
        else:
            pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """Module -> the project modules it loads at load time: those it imports, and the packages Python loads first
    (``import a.b.c`` runs ``a.b/__init__.py``), except the module's own packages (loading already); a package that
    imports every module of its folder (``pkgutil.iter_modules(__path__)``) loads each of them"""
    modules = {module_name(path): path for package in sorted(PROJECT) for path in files(package)}

    def targets(name, path):
        if path.name == "__init__.py" and "iter_modules(__path__)" in path.read_text():
            yield from (module for module in modules if module.rpartition(".")[0] == name)
        for module, names in module_level_imports(path):
            submodules = {f"{module}.{name}" for name in names} & modules.keys()
            # ``from package import module`` imports the module (and loads the package first, as any import does)
            for target in submodules if submodules and len(submodules) == len(names) else {module} | submodules:
                parts = target.split(".")
                yield from (".".join(parts[:end]) for end in range(1, len(parts) + 1))

    def own_packages(name, path):
        parts = name.split(".")
        return {".".join(parts[:end]) for end in range(1, len(parts) + (path.name == "__init__.py"))}

    return {name: {target for target in targets(name, path)
                   if target in modules and target != name and target not in own_packages(name, path)}
            for name, path in modules.items()}


def import_circles(graph):
    "The strongly connected components of more than one module (Tarjan)"
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_import_circles_are_found():
    "The check itself: a circle through three modules is reported, a chain is not"
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_circle_between_the_projects_modules():
    "No module imports, at load time, a module that (directly or not) imports it back"
    graph = import_graph()
    assert "collector.storage.base" in graph["collector.storage.postgres"]  # the graph holds relative imports
    assert "estimators.mechanisms.categorical" in graph["estimators.mechanisms"]  # and the packages' dynamic imports
    assert "estimators.mechanisms" in graph["estimators.aggregation"]  # and the packages loaded before a module
    assert import_circles(graph) == []
