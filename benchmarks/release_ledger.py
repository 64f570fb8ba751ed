"""A year of daily releases: what one device has spent, basic composition against privacy loss distributions.

    python benchmarks/release_ledger.py [--days 365] [--delta 1e-6]

Each row is one kind of release made once a day (``estimators.composition``), every release at epsilon 1:
a local report window (pure epsilon0 = 1, known by its guarantee alone), a shuffled batch of 1e5 reports whose
amplified epsilon is 1 (epsilon0 from ``local_epsilon_for``, delta 1e-9 a day), a distributed sum with discrete
Laplace noise (epsilon 1, a histogram's replace-one shift), and one with the Gaussian (analytic sigma at epsilon 1,
delta 1e-9 a day).  The total delta is ``--delta`` for the privacy-loss-distribution figure; basic composition's
delta is the sum of the daily ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from estimators.central import analytic_gaussian_sigma  # noqa: E402
from estimators.composition import (  # noqa: E402
    ApproxRelease,
    DiscreteLaplaceRelease,
    GaussianRelease,
    compose,
)
from estimators.distributed.accounting import Shift, calibrate_discrete_laplace  # noqa: E402
from estimators.shuffle import local_epsilon_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--delta", type=float, default=1e-6, help="the device's total delta (PLD figure)")
    arguments = parser.parse_args()
    daily_delta = 1e-9
    histogram = Shift(2, 1)
    epsilon0 = local_epsilon_for(1.0, 100_000, daily_delta)
    kinds = {
        "local report window (pure eps 1)": ApproxRelease(1.0),
        f"shuffled batch, n 1e5 (eps0 {epsilon0:.2f}, eps 1, delta 1e-9)": ApproxRelease(1.0, daily_delta),
        "distributed, discrete Laplace (eps 1, histogram)":
            DiscreteLaplaceRelease(calibrate_discrete_laplace(1.0, histogram), histogram),
        "distributed, Gaussian (eps 1, delta 1e-9)":
            GaussianRelease(analytic_gaussian_sigma(1.0, 1.0, daily_delta), daily_delta),
    }
    print(f"{arguments.days} daily releases, total delta {arguments.delta:g} for the PLD figure")
    print(f"{'release':<58} {'basic eps':>9} {'basic delta':>11} | {'PLD eps':>8} {'bound':>11} {'s':>5}")
    for name, release in kinds.items():
        start = time.process_time()
        both = compose([release] * arguments.days, delta=arguments.delta)
        seconds = time.process_time() - start
        bound = "exact" if both.tight.exact else "upper bound"
        print(f"{name:<58} {both.basic.epsilon:9.1f} {both.basic.delta:11.2g} | {both.tight.epsilon:8.2f} "
              f"{bound:>11} {seconds:5.2f}")


if __name__ == "__main__":
    main()
