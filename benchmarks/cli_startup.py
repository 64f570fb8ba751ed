"""CLI start-up: wall time and import time of ``ldp-telemetry`` commands, and which heavy libraries they load.

    python benchmarks/cli_startup.py [--repeat 5] [--root PATH] [--against REV] [--only report,report-json]

``--root`` runs the CLI from another checkout; ``--against REV`` unpacks git revision REV (``git archive``) and
runs its CLI interleaved with this one's, run for run, so that both see the same load; ``--only`` names the
commands to run (help, keys, report, report-json, report-html).  Wall time and CPU time (user + system of the
child) are printed: on a loaded machine the CPU time moves less.
Each command runs in a fresh interpreter; the import time is the sum of ``python -X importtime``'s self times.
On a shared machine compare the minimum over runs (the load average is printed before and after the table).
The packages are byte-compiled first, as an installed package is: with ``PYTHONDONTWRITEBYTECODE`` set (as on
this project's machines) every run would otherwise compile each project module from source again.
A local database with one OUE campaign (d = 12, 5,000 reports over 3 days) is created for ``report``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("numpy", "scipy", "matplotlib", "flask")
PACKAGES = ("client_sdk", "collector", "estimators", "ldp_telemetry")
NAMES = ("help", "keys", "report", "report-json", "report-html")  # the commands, for --only
SETUP = """
import uuid

import numpy as np
from collector.storage import ReportGroup, Storage, payload_text
from estimators.simulate import simulate
spec = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(12)]}
with Storage(DB) as storage:
    storage.migrate()
    storage.create_key("admin", "2025-03-01", "bench")
    campaign, _ = storage.create_campaign(spec, "2025-03-01")
    rng = np.random.default_rng(1)
    for day in ("2025-03-01", "2025-03-02", "2025-03-03"):
        payloads = simulate(campaign.spec, rng.integers(0, 12, 5000 // 3), rng).to_payloads()
        ids = [str(uuid.uuid4()) for _ in payloads]
        storage.insert_reports([ReportGroup(campaign, ids, payloads, [payload_text(p) for p in payloads])], day)
"""
RUN = """
import sys
from ldp_telemetry.cli import main
try:
    main(sys.argv[1:], prog_name="ldp-telemetry")
except SystemExit as exit:
    code = exit.code
print("LOADED", " ".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


def run(args: list[str], env: dict) -> tuple[float, float, str, float]:
    "(wall s, import s, heavy modules loaded, CPU s) of one run in a fresh interpreter"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # from the root's parent: ``python -c`` puts the working directory before PYTHONPATH on sys.path
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", RUN.format(heavy=HEAVY), *args], env=env,
                          cwd=Path(env["PYTHONPATH"]).parent, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    imports = sum(int(line.split("|")[0].split(":")[1]) for line in done.stderr.splitlines()
                  if line.startswith("import time:") and line.split("|")[0].split(":")[1].strip().isdigit())
    loaded = next(line for line in done.stderr.splitlines() if line.startswith("LOADED")).split()[1:]
    return wall, imports / 1e6, ",".join(loaded) or "-", cpu


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--against", metavar="REV", help="also run git revision REV's CLI, interleaved")
    parser.add_argument("--only", metavar="NAMES", help="only these commands, comma-separated: " + ", ".join(NAMES))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        roots = {"this": options.root.resolve()}
        if options.against:
            roots[options.against] = Path(temp) / "against"
            roots[options.against].mkdir()
            archive = subprocess.run(["git", "-C", str(options.root), "archive", options.against], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(roots[options.against])], input=archive, check=True)
        envs = {name: {**os.environ, "PYTHONPATH": str(root)} for name, root in roots.items()}
        for root in roots.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(root / p) for p in PACKAGES)],
                           check=True, stdout=subprocess.DEVNULL)
        database = str(Path(temp) / "bench.db")
        subprocess.run([sys.executable, "-c", f"DB = {database!r}\n" + SETUP], env=envs["this"], check=True)
        commands = [["--help"], ["keys", "list", "--db", database], ["report", "browser", "--db", database],
                    ["report", "browser", "--db", database, "--format", "json"],
                    ["report", "browser", "--db", database, "--format", "html"]]
        wanted = options.only.split(",") if options.only else NAMES
        commands = [c for name, c in zip(NAMES, commands, strict=True) if name in wanted]
        print(f"{load_average()}; {options.repeat} runs each")
        print(f"{'command':<36} {'code':<8} {'wall min s':>10} {'wall median s':>13} {'CPU min s':>9} "
              f"{'imports min s':>13}  heavy modules loaded")
        for args in commands:
            runs: dict[str, list] = {name: [] for name in roots}
            for _ in range(options.repeat):
                for name, env in envs.items():
                    runs[name].append(run(args, env))
            label = " ".join(a if a != database else "DB" for a in args)
            for name, done in runs.items():
                print(f"{label:<36} {name:<8} {min(r[0] for r in done):>10.3f} "
                      f"{statistics.median(r[0] for r in done):>13.3f} {min(r[3] for r in done):>9.3f} "
                      f"{min(r[1] for r in done):>13.3f}  {done[-1][2]}")
        print(load_average())


if __name__ == "__main__":
    main()
