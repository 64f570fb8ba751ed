"""A pytest plugin that fails any test touching files beside the repository (../shared, a sibling checkout, ...).

The tests must run from a fresh clone with nothing next to it, so a session-wide audit hook (``sys.addaudithook``)
watches the events that read, list, create or delete files (``open`` and the like, ``sqlite3.connect``, and the
path arguments of ``subprocess.Popen``). A path in the tree of the repository's parent directory but outside the
repository is recorded, unless it is:

- a temporary folder: one made by ``tempfile`` in this process (``mkdtemp``/``mkstemp``), pytest's own
  ``pytest-of-*``, the collector's ``ldp-metrics-*``, and, where the system's temporary folder is itself beside
  the repository (a clone in /tmp), anything in it that did not exist when the session started,
- the Python installation (``sys.prefix``, ``sys.base_prefix``, the site-packages) or a system directory,
- a per-user dot folder of the home directory (``~/.cache``, ``~/.config``: library caches such as matplotlib's),
- under ``$LDP_VDAF_VECTORS``, the way to run extra Prio3 test vectors.

The test during which a path was recorded fails (its report turns into a failure naming the paths); a path
recorded outside any test (at collection) fails the session. Paths elsewhere (``/tmp`` beside a checkout in
``/home``, say) are not watched: only the repository's neighbours are. Used by tests/conftest.py; runs in any
pytest with ``-p tests.outside_reads``.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PARENT = str(REPO.parent)
TEMPORARY_PREFIXES = ("pytest-of-", "ldp-metrics-")  # pytest's, and collector.metrics.process_directory's
# events whose first argument (both, for os.rename) is a path a test reads, lists, creates or deletes
PATH_EVENTS = {"open": 1, "os.listdir": 1, "os.scandir": 1, "glob.glob": 1, "sqlite3.connect": 1, "os.mkdir": 1,
               "os.remove": 1, "os.rmdir": 1, "os.rename": 2, "shutil.rmtree": 1, "shutil.copytree": 2}
SYSTEM_ROOTS = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/run", "/var",
                "/opt", "/snap")
UNATTRIBUTED = "(outside any test: collection or session set-up)"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


class OutsideReads:
    "The audit hook's state: the allowed roots, the test running now and what was recorded, per test"

    def __init__(self, repo: Path = REPO, temp_root: str | None = None) -> None:
        self.parent = str(repo.parent)
        self.temp_root = os.path.normpath(temp_root or os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir())
        installation = {os.path.normpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                      *sysconfig.get_paths().values())}
        # a root holding the repository (a checkout in /opt or /usr/src) would hide its siblings: not allowed whole
        self.allowed = [str(repo), *(root for root in (*SYSTEM_ROOTS, *sorted(installation))
                                     if not _under(str(repo), root))]
        self.home = os.path.normpath(os.path.expanduser("~"))
        self.temporary: list[str] = []  # made by tempfile in this process
        # what the temporary folder held before the session: a sibling there (../shared of a clone in /tmp) is
        # watched, what the tests and their servers create is not
        try:
            self.existing = set(os.listdir(self.temp_root))
        except OSError:
            self.existing = set()
        self.current: str | None = None  # the node id of the test running now
        self.recorded: dict[str, list[str]] = {}

    def outside(self, path: Any) -> str | None:
        "The normalised path if it is one beside the repository that no rule allows, else None"
        try:
            text = os.fsdecode(path)
        except TypeError:  # a file descriptor
            return None
        if not text.startswith(os.sep):
            text = os.path.join(os.getcwd(), text)
        text = os.path.normpath(text)
        if not _under(text, self.parent) or any(_under(text, root) for root in self.allowed):
            return None
        if text == self.temp_root or any(_under(text, root) for root in self.temporary):
            return None
        if _under(text, self.temp_root):
            first = text[len(self.temp_root) + 1:].split(os.sep, 1)[0]
            if first.startswith(TEMPORARY_PREFIXES) or first not in self.existing:
                return None
        if _under(text, self.home) and text[len(self.home) + 1:].startswith("."):
            return None
        extra = os.environ.get("LDP_VDAF_VECTORS")
        if extra and _under(text, os.path.normpath(os.path.abspath(extra))):
            return None
        return text

    def record(self, event: str, path: str) -> None:
        self.recorded.setdefault(self.current or UNATTRIBUTED, []).append(f"{event} {path}")

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        "The audit hook: cheap for the events it does not watch, and it never raises into the code it watches"
        try:
            count = PATH_EVENTS.get(event)
            if count is not None:
                for path in args[:count]:
                    found = self.outside(path)
                    if found is not None:
                        self.record(event, found)
            elif event in ("tempfile.mkdtemp", "tempfile.mkstemp"):
                self.temporary.append(os.path.normpath(os.fsdecode(args[0])))
            elif event == "subprocess.Popen":
                self.check_command(args)
        except Exception:  # an audit hook that raises breaks the open it watches
            pass

    def check_command(self, args: tuple[Any, ...]) -> None:
        "A command's arguments that look like paths (absolute, or starting with a dot) and its working directory"
        _executable, argv, cwd, _env = args
        argv = [argv] if isinstance(argv, (str, bytes, os.PathLike)) else list(argv or ())
        base = os.fsdecode(cwd) if cwd is not None else os.getcwd()
        candidates = [os.fsdecode(a) for a in argv if isinstance(a, (str, bytes, os.PathLike))]
        candidates = [a for a in candidates if a.startswith((os.sep, "."))]
        for candidate in [*candidates, base] if cwd is not None else candidates:
            found = self.outside(os.path.join(base, candidate))
            if found is not None:
                self.record("subprocess.Popen", found)

    def take(self, nodeid: str) -> list[str]:
        "What was recorded during the test ``nodeid`` so far, forgotten once taken"
        return self.recorded.pop(nodeid, [])


STATE = OutsideReads()
_installed: list[bool] = []  # audit hooks cannot be removed: install one per process


def pytest_configure(config: pytest.Config) -> None:
    basetemp = config.getoption("basetemp", None)
    if basetemp:
        STATE.temporary.append(os.path.normpath(os.path.abspath(basetemp)))
    if not _installed:
        sys.addaudithook(STATE.hook)
        _installed.append(True)


def pytest_runtest_logstart(nodeid: str) -> None:
    STATE.current = nodeid


def pytest_runtest_logfinish(nodeid: str) -> None:
    STATE.current = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    paths = STATE.take(item.nodeid)
    if paths:
        message = "touched files beside the repository (tests must need nothing outside it):\n  " + "\n  ".join(paths)
        if report.passed:
            report.outcome = "failed"
            report.longrepr = message
        else:
            report.sections.append(("files beside the repository", message))


def pytest_sessionfinish(session: pytest.Session) -> None:
    if STATE.recorded:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for where, paths in STATE.recorded.items():
        terminalreporter.write_line(f"FAILED {where}: touched files beside the repository:", red=True)
        for path in paths:
            terminalreporter.write_line(f"  {path}")
