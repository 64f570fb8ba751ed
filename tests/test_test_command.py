"""The README's test command is scripts/test, .ci/run runs exactly it, and the script finds the system packages a
fresh machine lacks (asked with --list-missing on a PATH that hides the tools)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test"
TOOLS = {  # the tool a test runs -> the Debian package that provides it
    "nginx": "nginx-light", "systemd-analyze": "systemd", "sqlite3": "sqlite3", "openssl": "openssl", "curl": "curl",
    "java": "openjdk-17-jre-headless",
}


def test_the_readme_names_scripts_test_and_ci_runs_exactly_it():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("Run the tests", 1)[1].split("\n\n", 2)[1]
    assert block.strip() == "scripts/test"
    assert "Supported platforms" in readme
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci == ["set -euo pipefail", 'exec "$(dirname "$0")/../scripts/test" "$@"']
    assert os.access(SCRIPT, os.X_OK) and os.access(ROOT / ".ci" / "run", os.X_OK)


def test_the_script_runs_pytest_with_its_arguments_and_exit_code():
    text = SCRIPT.read_text()
    assert text.rstrip().endswith('exec python -m pytest -q "$@"')
    assert "set -euo pipefail" in text


def list_missing(path: str) -> list[str]:
    result = subprocess.run(["bash", str(SCRIPT), "--list-missing"], capture_output=True, text=True, check=True,
                            env={"PATH": path, "HOME": os.environ.get("HOME", "/")})
    return result.stdout.split()


def test_nothing_is_missing_here():
    "scripts/test installed every package before pytest ran; under plain pytest a missing tool fails here too"
    assert list_missing(os.environ["PATH"]) == []


def test_a_machine_without_the_tools_gets_every_package(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "dirname"):
        (bin_dir / name).symlink_to(shutil.which(name) or name)
    (bin_dir / "python3").symlink_to(sys.executable)
    # the script also looks in /usr/sbin and /sbin (root's tools when a user's PATH lacks them): what is there counts
    expected = [package for tool, package in TOOLS.items()
                if shutil.which(tool, path=os.pathsep.join(["/usr/sbin", "/sbin"])) is None]
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        expected.insert(0, "postgresql")
    os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    expected.append("chromium-browser" if re.search(r"^ID=ubuntu$", os_release, re.M) else "chromium")
    expected += [package for tool, package in (("node", "nodejs"), ("npm", "npm"))
                 if shutil.which(tool, path=os.pathsep.join(["/usr/sbin", "/sbin"])) is None]
    assert list_missing(str(bin_dir)) == expected
    assert "curl" in expected and "chromium" in expected[-3] and expected[-1] == "npm"  # the PATH really hid them


def test_a_python_without_venv_gets_python3_venv(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "dirname"):
        (bin_dir / name).symlink_to(shutil.which(name) or name)
    fake = bin_dir / "python3"  # a Python whose ensurepip is missing, as Debian's before python3-venv
    fake.write_text(f"#!{shutil.which('bash')}\nexec {sys.executable} -c 'import sys; sys.exit(1)'\n")
    fake.chmod(0o755)
    assert "python3-venv" in list_missing(str(bin_dir))
