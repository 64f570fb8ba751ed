"""Session-wide: no test touches files beside the repository (tests/outside_reads.py), and the run leaves no
collector metrics directory behind in the temporary folder."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ("tests.outside_reads",)

# collector.metrics.process_directory: <tmp>/ldp-metrics-<uid>-<kind>-<pid of the server's master>
METRICS_DIRECTORY = re.compile(rf"ldp-metrics-{os.getuid()}-\w+-(\d+)")


def _left_by_this_run(name: str) -> bool:
    """A metrics directory whose server no longer runs (every server a test starts is stopped by the test), or one
    named after this process or its parent (an app made in this process); other sessions' live servers are theirs"""
    found = METRICS_DIRECTORY.fullmatch(name)
    if found is None:
        return False
    pid = int(found.group(1))
    if pid in (os.getpid(), os.getppid()):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@pytest.fixture(scope="session", autouse=True)
def no_metrics_directory_left_behind() -> Iterator[None]:
    "Fails the session if it leaves an ``ldp-metrics-*`` directory in the temporary folder"
    root = Path(tempfile.gettempdir())
    before = {path.name for path in root.glob("ldp-metrics-*")}
    yield
    left = sorted(path.name for path in root.glob("ldp-metrics-*")
                  if path.name not in before and _left_by_this_run(path.name))
    if left:
        pytest.fail(f"the run left {left} in {root}: a server or an app that made it did not remove it",
                    pytrace=False)
