"""The audit hook of tests/outside_reads.py catches a test touching files beside the repository, and lets
temporary folders, the Python installation and $LDP_VDAF_VECTORS through."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.outside_reads import PARENT, REPO, STATE, OutsideReads


def sibling() -> Path:
    "A path beside the repository that does not exist (reading it still raises the audit event)"
    return Path(PARENT) / f"ldp-outside-probe-{secrets.token_hex(4)}" / "Prio3Count_0.json"


@pytest.fixture
def probe(monkeypatch) -> Path:
    """A sibling() the session's hook watches: in a clone whose parent is the temporary folder (/tmp) only what was
    there before the session is watched, so its folder counts as such (it is never created)"""
    path = sibling()
    monkeypatch.setattr(STATE, "existing", STATE.existing | {path.parent.name})
    assert STATE.outside(path) == str(path)
    return path


def test_a_read_beside_the_repository_is_recorded(request, probe):
    path = probe
    with pytest.raises(FileNotFoundError):
        path.read_text()
    with pytest.raises(FileNotFoundError):
        os.listdir(path.parent)
    assert STATE.take(request.node.nodeid) == [f"open {path}", f"os.listdir {path.parent}"]


def test_a_relative_path_through_the_parent_is_recorded(request, monkeypatch, probe):
    monkeypatch.chdir(REPO)
    path = probe
    relative = Path("..") / path.relative_to(PARENT)
    with pytest.raises(FileNotFoundError):
        open(relative)
    assert STATE.take(request.node.nodeid) == [f"open {path}"]


def test_a_command_given_a_path_beside_the_repository_is_recorded(request, probe):
    path = probe
    subprocess.run([sys.executable, "-c", "", str(path)], check=True)
    assert STATE.take(request.node.nodeid) == [f"subprocess.Popen {path}"]


def test_temporary_folders_the_repository_and_the_extra_vectors_are_allowed(request, monkeypatch, tmp_path, probe):
    (tmp_path / "a").write_text("x")
    with tempfile.TemporaryDirectory() as temporary:
        (Path(temporary) / "b").write_text("y")
    (REPO / "README.md").read_text()
    extra = probe
    monkeypatch.setenv("LDP_VDAF_VECTORS", str(extra.parent))
    with pytest.raises(FileNotFoundError):
        extra.read_text()
    assert STATE.take(request.node.nodeid) == []


def run_pytest(tmp_path: Path, test_text: str) -> subprocess.CompletedProcess[str]:
    """pytest with only the plugin over one test file, in a subprocess whose temporary folder is in ``tmp_path`` (so
    that a sibling() is watched there even in a clone in /tmp), the test file in pytest's part of it"""
    temp_root = tmp_path / "temp"
    test_file = temp_root / "pytest-of-probe" / "test_probe.py"
    test_file.parent.mkdir(parents=True)
    test_file.write_text(textwrap.dedent(test_text))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.outside_reads", "-p", "no:cacheprovider", "-q",
                           str(test_file)], capture_output=True, text=True, cwd=test_file.parent,
                          env={**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DEBUG_TEMPROOT": str(temp_root)},
                          timeout=300)


def test_a_test_that_reads_beside_the_repository_fails_and_the_others_pass(tmp_path):
    path = sibling()
    result = run_pytest(tmp_path, f"""
        import pytest

        def test_reads_beside():
            with pytest.raises(FileNotFoundError):
                open({str(path)!r})

        def test_reads_nothing():
            pass
    """)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout
    assert "FAILED test_probe.py::test_reads_beside" in result.stdout
    assert f"open {path}" in result.stdout


def test_a_read_at_collection_fails_the_session(tmp_path):
    path = sibling()
    result = run_pytest(tmp_path, f"""
        try:  # at import, i.e. collection: no test to fail, so the session fails
            open({str(path)!r})
        except OSError:
            pass

        def test_nothing():
            pass
    """)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed" in result.stdout and f"open {path}" in result.stdout


def test_in_a_temporary_folder_beside_the_repository_only_what_existed_before_is_watched(tmp_path):
    "A clone in /tmp: /tmp/shared is a sibling, what the session's servers make in /tmp is a temporary folder"
    (tmp_path / "clone").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "ldp-metrics-0-gunicorn-1").mkdir()
    watcher = OutsideReads(tmp_path / "clone", str(tmp_path))
    (tmp_path / "made-during-the-session").mkdir()
    assert watcher.outside(tmp_path / "shared" / "Prio3Count_0.json") == str(tmp_path / "shared" / "Prio3Count_0.json")
    assert watcher.outside(tmp_path / "made-during-the-session" / "x") is None
    assert watcher.outside(tmp_path / "ldp-metrics-0-gunicorn-1") is None
    assert watcher.outside(tmp_path / "pytest-of-someone" / "x") is None
    assert watcher.outside(tmp_path / "clone" / "README.md") is None
    assert watcher.outside(tmp_path) is None  # the temporary folder itself (TemporaryFile opens it)


def test_a_repository_in_a_folder_inside_the_temporary_folder_watches_its_siblings(tmp_path):
    (tmp_path / "work" / "clone").mkdir(parents=True)
    watcher = OutsideReads(tmp_path / "work" / "clone", str(tmp_path))
    assert watcher.outside(tmp_path / "work" / "shared") == str(tmp_path / "work" / "shared")


def test_a_system_folder_holding_the_repository_does_not_hide_its_siblings(tmp_path):
    watcher = OutsideReads(Path("/opt/ldp-telemetry"), str(tmp_path))
    assert watcher.outside("/opt/shared/Prio3Count_0.json") == "/opt/shared/Prio3Count_0.json"
    assert watcher.outside("/opt/ldp-telemetry/tests/data/x.json") is None
