"""CLI start-up: wall time and import time of ``ldp-telemetry`` commands, and which heavy libraries they load.

    python benchmarks/cli_startup.py [--repeat 5] [--root PATH]

``--root`` runs the CLI from another checkout (e.g. an older commit unpacked with ``git archive``) to compare.
Each command runs in a fresh interpreter; the import time is the sum of ``python -X importtime``'s self times.
On a shared machine compare the minimum over runs (the load average is printed before and after the table).
The packages are byte-compiled first, as an installed package is: with ``PYTHONDONTWRITEBYTECODE`` set (as on
this project's machines) every run would otherwise compile each project module from source again.
A local database with one OUE campaign (d = 12, 5,000 reports over 3 days) is created for ``report``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("numpy", "scipy", "matplotlib", "flask")
PACKAGES = ("client_sdk", "collector", "estimators", "ldp_telemetry")
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


def run(args: list[str], env: dict) -> tuple[float, float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", RUN.format(heavy=HEAVY), *args], env=env,
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    imports = sum(int(line.split("|")[0].split(":")[1]) for line in done.stderr.splitlines()
                  if line.startswith("import time:") and line.split("|")[0].split(":")[1].strip().isdigit())
    loaded = next(line for line in done.stderr.splitlines() if line.startswith("LOADED")).split()[1:]
    return wall, imports / 1e6, ",".join(loaded) or "-"


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(options.root.resolve())}
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(options.root / p) for p in PACKAGES)],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as temp:
        database = str(Path(temp) / "bench.db")
        subprocess.run([sys.executable, "-c", f"DB = {database!r}\n" + SETUP], env=env, check=True)
        commands = [["--help"], ["keys", "list", "--db", database], ["report", "browser", "--db", database],
                    ["report", "browser", "--db", database, "--format", "json"],
                    ["report", "browser", "--db", database, "--format", "html"]]
        print(f"{load_average()}; {options.repeat} runs each")
        print(f"{'command':<36} {'wall min s':>10} {'wall median s':>13} {'imports min s':>13}  heavy modules loaded")
        for args in commands:
            runs = [run(args, env) for _ in range(options.repeat)]
            label = " ".join(a if a != database else "DB" for a in args)
            print(f"{label:<36} {min(r[0] for r in runs):>10.3f} {statistics.median(r[0] for r in runs):>13.3f} "
                  f"{min(r[1] for r in runs):>13.3f}  {runs[-1][2]}")
        print(load_average())


if __name__ == "__main__":
    main()
