"""Runs the reference numerical shuffle bound on points read as JSON from stdin; prints JSON results to stdout.

Run by benchmarks/shuffle_amplification.py with the peer environment's Python (benchmarks/setup_shuffle_peer.sh):
it imports nothing of ldp-telemetry.  The reference is ``computeamplification.py`` of apple/ml-shuffling-amplification
as PyPI's ``ldp-hierarchical-mechanism`` 0.1.3 ships it; the module is loaded from its file, because the package's
``__init__`` imports the rest of that package (pure-ldp, statsmodels), which no longer imports with current scipy.

Input: {"points": [[epsilon0, n, delta, [[num_iterations, step], ...]], ...], "divergences": [[epsilon0, n,
[epsilon, ...]], ...], "upper_at": [[epsilon0, n, epsilon], ...]}.  Output, one row per point and setting: the
upper and lower bounds (``numericalanalysis(n, epsilon0, delta, iterations, step, upperbound)``), the closed form
(``closedformanalysis``) and the seconds each bound took (process CPU time, single-threaded); for each entry of
"divergences" the reference's own divergence of the clone pair at each epsilon, without its step blocks and early
stop: its per-c function ``onestep`` summed over every c within 12 standard deviations of Bin(n - 1,
e^-epsilon0)'s mean, weighted by scipy's pmf (the mass outside, below 1e-30, added in full); and for each entry of
"upper_at" the delta its upper bound's search sees at that epsilon (``deltacomp(..., step=1, upperbound=True)``,
with 1 as the cap so that it never returns early): with its early stop, once the mass of C not yet visited falls
below the delta summed so far it adds that mass in full.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

PACKAGE = "hierarchical_mechanism_LDP"


def load_reference():
    found = importlib.util.find_spec(PACKAGE)  # locates the package without running its __init__
    if found is None or found.origin is None:
        raise SystemExit(f"{PACKAGE} is not installed here (bash benchmarks/setup_shuffle_peer.sh)")
    path = Path(found.origin).parent / "computeamplification.py"
    spec = importlib.util.spec_from_file_location("computeamplification", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(function, *arguments):
    start = time.process_time()
    value = function(*arguments)
    return value, time.process_time() - start


def summed_divergence(reference, epsilon0: float, n: int, epsilon: float) -> float:
    from scipy import stats

    trials, p = n - 1, math.exp(-epsilon0)
    mean, sd = trials * p, math.sqrt(trials * p * (1 - p))
    low, high = max(0, math.floor(mean - 12 * sd) - 2), min(trials, math.ceil(mean + 12 * sd) + 2)
    total = float(stats.binom.cdf(low - 1, trials, p) + stats.binom.sf(high, trials, p))
    for c in range(low, high + 1):
        total += float(stats.binom.pmf(c, trials, p)) * max(reference.onestep(c, epsilon, epsilon0, True), 0.0)
    return total


def main() -> None:
    request = json.load(sys.stdin)
    reference = load_reference()
    rows = []
    for epsilon0, n, delta, settings in request["points"]:
        inside = n > 16 * math.log(4 / delta) and epsilon0 <= math.log(n / (16 * math.log(4 / delta)))
        closed = reference.closedformanalysis(n, epsilon0, delta) if inside else epsilon0  # else it prints
        for iterations, step in settings:
            upper, upper_s = timed(reference.numericalanalysis, n, epsilon0, delta, iterations, step, True)
            lower, lower_s = timed(reference.numericalanalysis, n, epsilon0, delta, iterations, step, False)
            rows.append({"epsilon0": epsilon0, "n": n, "delta": delta, "iterations": iterations, "step": step,
                         "upper": upper, "lower": lower, "closed_form": closed, "upper_s": upper_s,
                         "lower_s": lower_s})
            print(f"reference: eps0 {epsilon0} n {n} delta {delta} ({iterations}, {step}): {upper_s + lower_s:.2f} s",
                  file=sys.stderr, flush=True)
    divergences = []
    for epsilon0, n, epsilons in request.get("divergences", []):
        divergences.append({"epsilon0": epsilon0, "n": n, "epsilons": epsilons,
                            "deltas": [summed_divergence(reference, epsilon0, n, e) for e in epsilons]})
        print(f"reference divergence: eps0 {epsilon0} n {n}", file=sys.stderr, flush=True)
    upper_at = [reference.deltacomp(n, epsilon0, epsilon, 1.0, 1, True) for epsilon0, n, epsilon in
                request.get("upper_at", [])]
    version = importlib.metadata.version("ldp-hierarchical-mechanism")
    json.dump({"peer": f"ldp-hierarchical-mechanism=={version}", "python": sys.version.split()[0], "rows": rows,
               "divergences": divergences, "upper_at": upper_at}, sys.stdout)


if __name__ == "__main__":
    main()
