"""Cost per report of the server's payload paths, per mechanism, through the registry (``estimators.mechanisms``).

Columns: ``check us`` is ``check_payload`` per report (the collector's and ``estimators.estimate``'s one
validation), ``parse us`` turns checked JSON payloads into columns, ``statistic us`` computes the sufficient
statistic from the columns, ``estimate us`` is ``estimators.aggregate`` on JSON payloads (check + parse +
statistic).  Payloads come from the vectorised simulator (the SDK's distribution), epsilon 1.

Run:  python benchmarks/payload_paths.py [--reports 200000] [--domain 64]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from estimators import aggregate
from estimators.mechanisms import mechanism_for

MECHANISMS = ["grr", "sue", "oue", "olh", "hadamard", "laplace", "duchi", "piecewise", "hybrid", "rappor"]


def spec_for(mechanism: str, domain: int) -> dict:
    if mechanism in ("laplace", "duchi", "piecewise", "hybrid"):
        return {"name": "b", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 100]}
    if mechanism == "rappor":
        return {"name": "b", "mechanism": "rappor", "rappor": {"k": 128, "h": 2, "m": 64}}
    return {"name": "b", "mechanism": mechanism, "epsilon": 1.0, "domain": list(range(domain))}


def true_values(mechanism: str, n: int, domain: int, rng: np.random.Generator) -> np.ndarray:
    if mechanism in ("laplace", "duchi", "piecewise", "hybrid"):
        return rng.uniform(0, 100, n)
    if mechanism == "rappor":
        return np.array([f"v{i}" for i in rng.integers(0, domain, n)], dtype=object)
    return rng.integers(0, domain, n)


def per_report(function: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=200_000)
    parser.add_argument("--domain", type=int, default=64)
    args = parser.parse_args()
    n, rng = args.reports, np.random.default_rng(1)
    print(f"{'mechanism':>10} {'check us':>9} {'parse us':>9} {'statistic us':>13} {'aggregate us':>13}")
    print("-" * 58)
    for mechanism in MECHANISMS:
        spec = spec_for(mechanism, args.domain)
        entry = mechanism_for(spec)
        payloads = entry.simulate(true_values(mechanism, n, args.domain, rng), rng).to_payloads()
        check = per_report(lambda: [entry.check_payload(p) for p in payloads], n)  # noqa: B023
        parse = per_report(lambda: entry.parse(payloads, checked=True), n)  # noqa: B023
        batch = entry.parse(payloads, checked=True)
        statistic = per_report(lambda: entry.statistic(batch), n)  # noqa: B023
        whole = per_report(lambda: aggregate(spec, payloads), n)  # noqa: B023
        print(f"{mechanism:>10} {check:9.2f} {parse:9.2f} {statistic:13.2f} {whole:13.2f}")


if __name__ == "__main__":
    main()
