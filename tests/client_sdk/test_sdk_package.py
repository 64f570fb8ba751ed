"""The SDK as its own distribution (sdk/pyproject.toml): a wheel with client_sdk alone, installable with no
dependency, that records and delivers to a real collector from a fresh virtual environment."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

from collector.storage import Storage
from tests.collector.helpers import CATEGORICAL, running_server

ROOT = Path(__file__).resolve().parents[2]

DEVICE = """
import json, sys
import client_sdk
from client_sdk import Client, ReportPolicy

url, key, state = sys.argv[1:4]
client = Client(url, key, state, campaigns=["browser"], background=False, policy=ReportPolicy.unlimited())
statuses = [client.record("browser", value).status.value for value in ["chrome", "safari", "edge"]]
result = client.close(timeout=30)
print(json.dumps({"file": client_sdk.__file__, "statuses": statuses, "sent": result.sent,
                  "remaining": result.remaining, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> tuple[Path, Path]:
    """Build the SDK wheel as documented (``pip wheel --no-deps ./sdk``) in a copy of sdk/ and client_sdk/ laid out
    as in the repository (no build artefacts in the checkout, no network): the wheel and the copy"""
    work = tmp_path_factory.mktemp("sdk-build")
    ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    shutil.copytree(ROOT / "sdk", work / "sdk", ignore=ignore)  # sdk/LICENSE, a link to ../LICENSE, as a file
    shutil.copytree(ROOT / "client_sdk", work / "client_sdk", ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(work / "dist"), "./sdk"], check=True, capture_output=True, cwd=work)
    (built,) = (work / "dist").glob("ldp_telemetry_sdk-*.whl")
    return built, work


@pytest.fixture(scope="module")
def wheel(build) -> Path:
    return build[0]


def test_building_the_wheel_leaves_nothing_behind(build):
    "No sdk/build and no ldp_telemetry_sdk.egg-info beside client_sdk (setuptools' own backend left both)"
    _, work = build
    assert sorted(p.name for p in work.iterdir()) == ["client_sdk", "dist", "sdk"]
    assert sorted(p.name for p in (work / "sdk").iterdir() if p.name != "__pycache__") == sorted(
        p.name for p in (ROOT / "sdk").iterdir() if p.name not in ("__pycache__", "build"))


def test_the_wheel_ships_the_license_and_a_self_contained_description(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        (license_name,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(license_name) == (ROOT / "LICENSE").read_bytes()
    headers, _, description = metadata.partition("\n\n")
    assert "License-Expression: Apache-2.0" in headers and "License-File: LICENSE" in headers
    assert "from client_sdk import Client" in description  # the SDK's own README, not the repository's
    # a package index shows the description alone: no link relative to the repository
    assert not re.findall(r"\]\((?!https?://)[^)]*\)", description) and "../" not in description


def test_the_wheel_holds_client_sdk_and_nothing_else(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"client_sdk"}
    assert "client_sdk/py.typed" in names and "client_sdk/mechanisms/base.py" in names
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist")]
    # nothing required; the one optional extra is for distributed (Prio3) campaigns only
    assert all('extra == "distributed"' in line for line in requires), requires
    assert "Name: ldp-telemetry-sdk" in metadata
    print(f"SDK wheel: {wheel.name}, {wheel.stat().st_size} bytes")


def test_docs_state_the_wheels_size_within_ten_percent(wheel):
    "docs/sdk.md's 'about N KB, M KB unpacked' against the wheel just built"
    with zipfile.ZipFile(wheel) as archive:
        unpacked = sum(info.file_size for info in archive.infolist())
    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "sdk.md").read_text().split())
    found = re.search(r"a wheel to ship \(about ([\d,]+) KB, ([\d,]+) KB unpacked, within 10%", text)
    assert found, "docs/sdk.md states the wheel's size"
    for stated, measured in zip(found.groups(), (wheel.stat().st_size, unpacked)):
        assert abs(int(stated.replace(",", "")) * 1000 - measured) <= 0.1 * measured, (stated, measured)


def test_the_wheel_installs_alone_and_delivers_to_a_collector(wheel, tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index",
                    "--no-deps", str(wheel)], check=True, capture_output=True)
    listed = subprocess.run([str(python), "-I", "-c", "import importlib.metadata as m, json; "
                             "print(json.dumps(sorted(d.metadata['Name'] for d in m.distributions())))"],
                            check=True, capture_output=True, text=True)
    assert json.loads(listed.stdout) == ["ldp-telemetry-sdk"]  # nothing but the standard library besides it

    db = tmp_path / "collector.db"
    with Storage(db) as storage:
        storage.migrate()
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        storage.create_campaign(CATEGORICAL, "2024-01-01")
    with running_server(db, tmp_path / "server.log", workers=1) as (url, _):
        run = subprocess.run([str(python), "-I", "-c", textwrap.dedent(DEVICE), url, ingest, str(tmp_path / "dev")],
                             check=True, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    out = json.loads(run.stdout)
    assert out["file"].startswith(str(env)) and out["statuses"] == ["queued"] * 3
    assert (out["sent"], out["remaining"]) == (3, 0)
    assert not {"flask", "numpy", "estimators", "collector"} & {m.split(".")[0] for m in out["modules"]}
    with Storage(db) as storage:
        assert len(list(storage.iter_reports("browser"))) == 3
