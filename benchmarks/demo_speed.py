"""The demo's users through the SDK (issue 14 item 5): wall and CPU time of ``ldp-telemetry demo``, checkouts
interleaved so that each round sees about the same load.

    python benchmarks/demo_speed.py                                 # this checkout, 2,000 users, 2 rounds
    python benchmarks/demo_speed.py --root /tmp/before --root .     # another checkout against this one

Each run is a fresh interpreter (``PYTHONPATH`` at the checkout, so its ``client_sdk``, ``collector`` and ``demo``
are the ones measured) running ``ldp-telemetry demo --users N --seed 1`` into a temporary directory.  CPU is user
plus system time of the run and every process it waited for (the collector's processes included): on a shared
machine it is the figure to compare, since the wall time follows the load.  The demo's own line (users, seconds)
and the load average at the start of each run are printed beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN = "from ldp_telemetry.cli import main; main()"


def run_once(root: Path, users: int, out: Path) -> tuple[float, float, str]:
    "Wall seconds, CPU seconds (children included) and the demo's summary line"
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN, "demo", "--users", str(users), "--out", str(out), "--seed", "1"],
                          env=env, capture_output=True, text=True, cwd=out.parent)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"demo failed in {root}:\n{done.stderr[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    line = next((x for x in done.stdout.splitlines() if "simulated users" in x), "")
    return wall, cpu, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="checkout to measure (repeatable)")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    print(f"demo, {args.users:,} users through the SDK; {os.cpu_count()} CPUs")
    print(f"{'round':<6} {'checkout':<34} {'load':>5} {'wall s':>8} {'CPU s':>8} {'CPU ms/user':>12}")
    with tempfile.TemporaryDirectory(prefix="ldp-demo-speed-") as temp:
        for round_ in range(args.rounds):
            for index, root in enumerate(roots):
                load = os.getloadavg()[0]
                wall, cpu, line = run_once(root, args.users, Path(temp) / f"out-{round_}-{index}")
                print(f"{round_:<6} {str(root)[-34:]:<34} {load:>5.1f} {wall:>8.1f} {cpu:>8.1f} "
                      f"{1e3 * cpu / args.users:>12.1f}   {line.strip()}", flush=True)


if __name__ == "__main__":
    main()
