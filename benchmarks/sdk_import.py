"""``import client_sdk`` and a first report (spec parse + one perturbation) in fresh interpreters, for one or more
checkouts side by side (issue 14 item 4: under 30 ms).

    python benchmarks/sdk_import.py [--runs 41] [--root PATH ...] [--no-site]

Each run starts one interpreter per checkout, interleaved, so every checkout sees the same load.  Per run:
``-X importtime``'s cumulative figure of the ``client_sdk`` line (what the issue measures), ``perf_counter``
around parsing an OUE spec and perturbing one value after it, and the number of modules the import added.
``--no-site`` passes ``-S``: nothing is imported before ``client_sdk`` (without it, ``site`` runs, and an
editable install's import hook preloads ``re``, ``pathlib`` and ``importlib.util``).  ``PYTHONPATH`` points at
each checkout, which is byte-compiled first (``PYTHONDONTWRITEBYTECODE`` is set on this project's machines).
Prints min and median per checkout; compare only checkouts measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CODE = """
import sys, time
before = len(sys.modules)
import client_sdk
imported = time.perf_counter()
spec = client_sdk.load_spec('{"name": "browser", "mechanism": "oue", "epsilon": 1.0, '
                            '"domain": ["chrome", "firefox", "safari", "edge"], "expires": "2030-01-01"}')
client_sdk.mechanism_from_spec(spec).perturb("safari")
done = time.perf_counter()
print((done - imported) * 1e3, len(sys.modules) - before)
"""


def sample(root: Path, site: bool) -> tuple[float, float, int]:
    "importtime ms, parse + perturb ms, modules added"
    flags = [] if site else ["-S"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, *flags, "-X", "importtime", "-c", CODE], env=env, capture_output=True,
                          text=True, check=True)
    line = [x for x in done.stderr.splitlines() if x.rstrip().endswith("| client_sdk")][-1]
    first_report, modules = done.stdout.split()
    return int(line.split("|")[1]) / 1e3, float(first_report), int(modules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--root", type=Path, action="append", help="a checkout (repeatable; default: this one)")
    parser.add_argument("--no-site", action="store_true", help="run the interpreters with -S")
    options = parser.parse_args()
    roots = [root.resolve() for root in options.root or [Path(__file__).resolve().parents[1]]]
    for root in roots:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "client_sdk")], check=True,
                       stdout=subprocess.DEVNULL)
    load = os.getloadavg()
    samples: dict[Path, list[tuple[float, float, int]]] = {root: [] for root in roots}
    for _ in range(options.runs):
        for root in roots:
            samples[root].append(sample(root, not options.no_site))
    load_after = os.getloadavg()
    print(f"{options.runs} runs each, interleaved, {'-S' if options.no_site else 'with site'}; load average "
          f"{load[0]:.1f} before, {load_after[0]:.1f} after (1 min)")
    print(f"{'checkout':<32} {'import min ms':>14} {'import median ms':>17} {'parse+perturb median ms':>24} "
          f"{'modules':>8}")
    for root, rows in samples.items():
        imports, reports, modules = zip(*rows)
        print(f"{str(root)[-32:]:<32} {min(imports):>14.1f} {statistics.median(imports):>17.1f} "
              f"{statistics.median(reports):>24.2f} {statistics.median(modules):>8.0f}")


if __name__ == "__main__":
    main()
