"""Step 8: the bins kind, from outside the project's packages, end to end: ``ldp-telemetry campaign create`` and a real
``ldp-telemetry serve`` (subprocesses on loopback, a real SQLite file) with the kind's modules named in
``LDP_TELEMETRY_KINDS``, Python devices (``client_sdk.Client``, the same variable) and JavaScript devices (sdk-js in
Node, ``registerKind`` from the kind's own module), then ``ldp-telemetry report`` as JSON and HTML."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.collector.helpers import create_key, ldp_command, running_server
from tests.sdk_js.conftest import sdk_js  # noqa: F401  (the fixture: sdk-js built)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGE = "tests.outside_kind"
SERVER_MODULES = ",".join(f"{PACKAGE}.{side}" for side in ("bins_device", "bins_collector", "bins_estimates"))
DEVICE_MODULES = f"{PACKAGE}.bins_device"
SPEC = {"name": "screen_size", "kind": "bins", "epsilon": 2.0, "bins": 4, "per_device": 1,
        "description": "screen size class, in four bins"}
PYTHON_VALUES = [0, 1, 1, 2, 3, 3, 3, 3] * 4
JS_VALUES = [0, 0, 1, 2, 2, 3, 3, 3] * 4
K_SE = 5  # each bin's estimate within K_SE standard errors of the truth (the devices draw from the OS CSPRNG)


def _env(modules: str) -> dict[str, str]:
    return {**os.environ, "LDP_TELEMETRY_KINDS": modules, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": ""}


def _ldp(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(ldp_command(*args), input=stdin, capture_output=True, text=True, env=_env(SERVER_MODULES),
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _get(url: str, key: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)  # type: ignore[no-any-return]


def test_an_outside_kind_goes_from_campaign_create_through_both_sdks_to_a_report(
        sdk_js: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("LDP_TELEMETRY_KINDS", SERVER_MODULES)  # the collector's serve and CLI (subprocesses)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    db = tmp_path / "collector.db"
    admin, ingest = create_key(db, "admin"), create_key(db, "ingest")

    with running_server(db, tmp_path / "serve.log") as (url, _):  # its tables made at start-up, before any campaign
        created = json.loads(_ldp("campaign", "create", "--url", url, "--token", admin, "-",
                                  stdin=json.dumps(SPEC)).stdout)
        spec = created["spec"]
        assert spec["kind"] == "bins" and spec["bins"] == 4 and spec["per_device"] == 1
        job = {"url": url, "key": ingest, "campaign": SPEC["name"], "values": PYTHON_VALUES,
               "state_dir": str(tmp_path / "python-devices")}
        done = subprocess.run([sys.executable, "-m", f"{PACKAGE}.python_devices"], input=json.dumps(job),
                              capture_output=True, text=True, env=_env(DEVICE_MODULES), cwd=ROOT, timeout=300,
                              check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        for outcome in json.loads(done.stdout):  # the second report: refused by the kind's own device state
            assert outcome == {"statuses": ["queued", "refused_by_policy"], "sent": 1, "rejected": 0}, outcome

        job = {"url": url, "key": ingest, "campaign": SPEC["name"], "values": JS_VALUES,
               "stateDir": str(tmp_path / "js-devices")}
        done = subprocess.run([shutil.which("node") or "node", str(HERE / "js_devices.mjs")], input=json.dumps(job),
                              capture_output=True, text=True, cwd=HERE, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        for outcome in json.loads(done.stdout):
            assert outcome == {"status": "queued", "sent": 1, "rejected": 0}, outcome

        estimate = _get(f"{url}/v1/campaigns/{SPEC['name']}/estimate", admin)
        assert estimate["n"] == len(PYTHON_VALUES) + len(JS_VALUES)
        openapi = _get(f"{url}/openapi.json", admin)

    with sqlite3.connect(db) as conn:  # the kind's own table, made by its migration
        assert conn.execute("SELECT COUNT(*) FROM bins_reports").fetchone()[0] == estimate["n"]
        assert conn.execute("SELECT version FROM kind_migrations WHERE kind = 'bins'").fetchone()[0] == 1
    values = PYTHON_VALUES + JS_VALUES
    for row in estimate["values"]:
        truth = values.count(row["value"]) / len(values)
        assert abs(row["estimate"] - truth) <= K_SE * row["std_error"], row
    bins_schema = openapi["components"]["schemas"]["Spec_bins"]  # the OpenAPI document reads its json_schema()
    assert bins_schema["properties"]["bins"]["maximum"] == 64 and "per_device" in bins_schema["properties"]
    assert {"$ref": "#/components/schemas/Spec_bins"} in openapi["components"]["schemas"]["Spec"]["anyOf"]

    report = json.loads(_ldp("report", SPEC["name"], "--db", str(db), "--format", "json").stdout)
    assert report["n"] == estimate["n"] and report["trust"] == "bins" and report["campaign"] == SPEC["name"]
    assert [row["value"] for row in report["values"]] == [0, 1, 2, 3]
    assert report["spec"]["fingerprint"] == spec["fingerprint"]
    page = tmp_path / "report.html"
    _ldp("report", SPEC["name"], "--db", str(db), "--format", "html", "--out", str(page))
    html = page.read_text()
    assert re.search(r"campaign screen_size: frequency estimate, bins campaign", html), html[:2000]
    assert f"n = {estimate['n']} reports" in html


def test_campaign_create_in_a_database_goes_through_the_kind(tmp_path: Path) -> None:
    "``campaign create --db``: the kind creates the campaign, its table is made, ``campaign show`` reads it"
    db = tmp_path / "collector.db"
    created = json.loads(_ldp("campaign", "create", "--db", str(db), "-", stdin=json.dumps(SPEC)).stdout)
    assert created["spec"]["kind"] == "bins" and created["version"] == 1
    shown = json.loads(_ldp("campaign", "show", "--db", str(db), SPEC["name"]).stdout)
    assert shown["fingerprint"] == created["fingerprint"] and shown["reports"] == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM bins_reports").fetchone()[0] == 0
    done = subprocess.run(ldp_command("campaign", "create", "--db", str(db), "-"), capture_output=True, text=True,
                          input=json.dumps({**SPEC, "bins": 99}), env=_env(SERVER_MODULES), cwd=ROOT, check=False)
    assert done.returncode == 1 and "bins" in done.stderr and "[2, 64]" in done.stderr  # the kind's own error


def test_the_architecture_section_names_this_package_s_files_in_their_order() -> None:
    "docs/architecture.md's 'Adding a campaign kind' walks through this package: every file it names exists"
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("### Adding a campaign kind"):text.index("## Adding a mechanism")]
    named = re.findall(r"^\d+\. `tests/outside_kind/([^`]+)`", section, flags=re.MULTILINE)
    files = sorted(path.name for path in HERE.iterdir() if path.suffix in (".py", ".mjs"))
    assert sorted(named) == files, (named, files)
    for step, name in enumerate(named[1:7], start=2):  # the sides' modules say which step they are
        assert f"Step {step}," in (HERE / name).read_text(), name
