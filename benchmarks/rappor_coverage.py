"""Coverage of the RAPPOR Bloom decoder's 95% intervals by simulation: the cases of
tests/estimators/test_rappor_coverage.py, and one where the LASSO picks the support (more candidates than rows).

Per case: the lowest and highest coverage over the present candidates (true proportion above 1%) and over the
absent or near-zero ones.  A coverage estimated from R collections has a Monte-Carlo SE of about
sqrt(0.95 * 0.05 / R) (0.015 at R = 200).

Run:  python benchmarks/rappor_coverage.py [--runs 200]
"""

from __future__ import annotations

import argparse

import numpy as np

from client_sdk.rappor import RapporParams
from estimators.rappor import interval_coverage

REGRESSION = RapporParams(k=16, h=2, m=32, p=0.25, q=0.75, f=0.5)
VALUES = [f"v{i}" for i in range(30)]
SPARSE = [0.5, 0.3, 0.2, 0.002, 0.001] + [0.0] * 25
DENSE = list(np.linspace(1, 3, 30))
LASSO = RapporParams(k=16, h=2, m=8, p=0.25, q=0.75, f=0.5)  # 128 rows: the LASSO keeps at most 102 columns
LASSO_VALUES = [f"v{i}" for i in range(5)]
LASSO_CANDIDATES = LASSO_VALUES + [f"decoy{i}" for i in range(150)]

CASES = [  # name, params, values, weights, n, candidates (None: the values), seed
    ("sparse", REGRESSION, VALUES, SPARSE, 5_000, None, 5_006),
    ("sparse", REGRESSION, VALUES, SPARSE, 200_000, None, 200_006),
    ("dense", REGRESSION, VALUES, DENSE, 5_000, None, 5_005),
    ("lasso", LASSO, LASSO_VALUES, [0.4, 0.25, 0.15, 0.12, 0.08], 200_000, LASSO_CANDIDATES, 3),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    header = f"{'case':>8} {'N':>8} {'candidates':>10} {'present min-max':>16} {'absent min-max':>15} method"
    print(header)
    print("-" * len(header))
    for name, params, values, weights, n, candidates, seed in CASES:
        names = values if candidates is None else candidates
        covered, methods = interval_coverage(params, values, weights, n, args.runs, np.random.default_rng(seed),
                                             candidates)
        shares = dict(zip(values, np.asarray(weights) / sum(weights)))
        present = np.array([shares.get(c, 0.0) > 0.01 for c in names])
        spans = [f"{covered[mask].min():.3f}-{covered[mask].max():.3f}" if mask.any() else "-"
                 for mask in (present, ~present)]
        print(f"{name:>8} {n:>8,} {len(names):>10} {spans[0]:>16} {spans[1]:>15} {','.join(sorted(methods))}",
              flush=True)


if __name__ == "__main__":
    main()
