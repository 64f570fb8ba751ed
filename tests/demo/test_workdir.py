"""Where the demo's throwaway workspace lives (issue 14 item 5): in RAM where there is room, else the system's
temporary folder, or in ``--workdir``; only the demo's own subfolder is ever removed."""

from __future__ import annotations

import tempfile
from pathlib import Path

from click.testing import CliRunner

import demo.run
import demo.servers
from demo.servers import RAM_FOLDER_MIN_FREE, default_workdir, demo_workspace
from ldp_telemetry.cli import main


def test_a_ram_folder_with_room_is_the_default(tmp_path):
    assert default_workdir(tmp_path, min_free=1) == tmp_path


def test_no_ram_folder_means_the_system_temporary_folder(tmp_path):
    assert default_workdir(tmp_path / "missing", min_free=1) is None
    (tmp_path / "a-file").write_text("not a folder")
    assert default_workdir(tmp_path / "a-file", min_free=1) is None


def test_too_little_free_space_means_the_system_temporary_folder(tmp_path, monkeypatch):
    import shutil

    free = shutil.disk_usage(tmp_path).free
    assert default_workdir(tmp_path, min_free=free + 2**40) is None

    class Usage:
        free = RAM_FOLDER_MIN_FREE - 1

    monkeypatch.setattr(demo.servers.shutil, "disk_usage", lambda path: Usage)
    assert default_workdir(tmp_path) is None


def test_a_folder_that_cannot_be_written_means_the_system_temporary_folder(tmp_path, monkeypatch):
    import os

    asked = []

    def access(path, mode):  # root may write anywhere: the check itself is what is tested
        asked.append((Path(path), mode))
        return False

    monkeypatch.setattr(os, "access", access)
    assert default_workdir(tmp_path, min_free=1) is None
    assert asked and asked[0][0] == tmp_path and asked[0][1] & os.W_OK


def test_the_workspace_goes_to_the_default_choice_and_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(demo.servers, "default_workdir", lambda: tmp_path)
    with demo_workspace() as temp:
        assert Path(temp).parent == tmp_path and Path(temp).name.startswith("ldp-demo-")
        (Path(temp) / "collector.db").write_bytes(b"x")
    assert not Path(temp).exists() and tmp_path.is_dir()
    monkeypatch.setattr(demo.servers, "default_workdir", lambda: None)
    with demo_workspace() as temp:
        assert Path(temp).parent == Path(tempfile.gettempdir())
    assert not Path(temp).exists()


def test_demo_command_prints_the_summary_and_keeps_an_explicit_workdir(tmp_path, monkeypatch):
    """``ldp-telemetry demo --workdir DIR``: the run works in a subfolder of DIR, removes it, and leaves DIR as it
    was; the command prints the summary and names the reports' folder"""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "keep.txt").write_text("the user's file")
    used = []

    def recording(chosen=None):
        workspace = demo_workspace(chosen)
        used.append(Path(workspace.name))
        return workspace

    monkeypatch.setattr(demo.servers, "default_workdir", lambda: tmp_path / "not-this-one")
    monkeypatch.setattr(demo.run, "demo_workspace", recording)
    result = CliRunner().invoke(main, ["demo", "--users", "20", "--out", str(tmp_path / "out"), "--seed", "3",
                                       "--workdir", str(workdir)])
    assert result.exit_code == 0, result.output
    assert "simulated users reported" in result.stdout  # the summary; the reports' folder on stderr
    assert str((tmp_path / "out").resolve()) in result.stderr
    assert len(used) == 1 and used[0].parent == workdir
    assert not used[0].exists()
    assert sorted(p.name for p in workdir.iterdir()) == ["keep.txt"]
    assert (tmp_path / "out" / "browser.html").exists()


def test_a_missing_workdir_is_created_and_left(tmp_path):
    workdir = tmp_path / "new" / "work"
    with demo_workspace(workdir) as temp:
        assert Path(temp).parent == workdir
    assert workdir.is_dir() and list(workdir.iterdir()) == []


def test_demo_help_says_where_its_throwaway_files_go():
    result = CliRunner().invoke(main, ["demo", "--help"])
    assert "--workdir" in result.stdout and "/dev/shm" in result.stdout
    assert "outlives the run" in " ".join(result.stdout.split())


def test_a_demo_collector_stops_at_once_and_keeps_what_it_acknowledged(tmp_path):
    """The demo's collectors take gunicorn's quick shutdown (SIGQUIT), not the graceful one that waited for idle
    kept-alive connections; what they answered is committed; they run the worker processes asked for"""
    import requests

    from collector.storage import Storage
    from demo.scenario import CAMPAIGNS
    from demo.servers import create_campaigns, create_keys, running_collector

    database = tmp_path / "collector.db"
    admin, _ = create_keys(database)
    with running_collector(database, workers=2) as url, requests.Session() as kept_alive:
        create_campaigns(url, admin, CAMPAIGNS[:1])
        kept_alive.get(f"{url}/v1/campaigns", headers={"Authorization": f"Bearer {admin}"}, timeout=30)
    log = (tmp_path / "collector.log").read_text()
    assert "Handling signal: quit" in log and "Handling signal: term" not in log
    assert log.count("Booting worker") == 2  # as many worker processes as asked for
    with Storage(database) as storage:
        assert CAMPAIGNS[0].name in {row["name"] for row in storage.db["campaigns"].rows}
