"""The demo's timeline (issue 14 item 5): when each step of ``demo.run.run_demo`` starts and ends, seconds from
the start, for one or more checkouts (the same wrappers work on the sequential and the concurrent demo).

    python benchmarks/demo_phases.py                                # this checkout, 2,000 users
    python benchmarks/demo_phases.py --root /tmp/before --root .    # another checkout against this one

Each run is a fresh interpreter (``PYTHONPATH`` at the checkout) that wraps the module's steps
(``running_collector``: start, up, stopped, per database; ``report_through_sdk``, ``report_distributed``,
``collect_today``, ``fetch_reports``: start and end; ``write_summary``: end) and runs ``run_demo`` with a seed.
Steps of the distributed phase are marked ``[D]`` where they ran in another thread than the demo's.  On a shared
machine the figures follow the load (printed with each run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMELINE = """
import json, sys, threading, time
from contextlib import contextmanager
from pathlib import Path
import demo.run as run
from demo import devices, distributed, reports, servers, summary

events = []
start = time.perf_counter()

def mark(what):
    side = "" if threading.current_thread() is threading.main_thread() else " [D]"
    events.append((round(time.perf_counter() - start, 2), what + side))

real_collector = run.running_collector

@contextmanager
def running_collector(database, config=None, **options):
    mark(f"{database.stem} start")
    with real_collector(database, config, **options) as url:
        mark(f"{database.stem} up")
        yield url
    mark(f"{database.stem} stopped")

run.running_collector = servers.running_collector = running_collector

def timed(name, ends_only=False):
    real = next(getattr(m, name) for m in (devices, distributed, reports, summary) if hasattr(m, name))
    def wrapper(*args, **kwargs):
        if not ends_only:
            mark(f"{name} start")
        try:
            return real(*args, **kwargs)
        finally:
            mark(f"{name} end")
    for module in (run, devices, distributed, reports):  # wherever the demo calls it from
        if hasattr(module, name):
            setattr(module, name, wrapper)

for name in ("report_through_sdk", "report_distributed", "collect_today", "fetch_reports"):
    timed(name)
timed("write_summary", ends_only=True)
result = run.run_demo(int(sys.argv[1]), Path(sys.argv[2]), seed=1)
mark("run_demo returned")
print(json.dumps(events))
"""


def timeline(root: Path, users: int, out: Path) -> list[tuple[float, str]]:
    done = subprocess.run([sys.executable, "-c", TIMELINE, str(users), str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)}, cwd=out.parent)
    if done.returncode != 0:
        raise SystemExit(f"demo failed in {root}:\n{done.stderr[-2000:]}")
    return [tuple(event) for event in json.loads(done.stdout.splitlines()[-1])]  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="checkout to measure (repeatable)")
    parser.add_argument("--users", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ldp-demo-phases-") as temp:
        for index, root in enumerate(r.resolve() for r in (args.root or [REPO])):
            load = os.getloadavg()[0]
            events = timeline(root, args.users, Path(temp) / f"out-{index}")
            print(f"{root} ({args.users:,} users, load {load:.1f})")
            for seconds, what in events:
                print(f"  {seconds:>7.2f}  {what}")


if __name__ == "__main__":
    main()
