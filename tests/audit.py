"""An empirical privacy audit: output probabilities for any two inputs stay within a factor e^eps.

For inputs x, x' and an output (or an output bin) o, with sample frequencies P(o|x) and P(o|x') over n draws each,
the check is  P(o|x) - e^eps P(o|x') <= k sqrt(Var P(o|x) + e^(2 eps) Var P(o|x')),  k a Bonferroni quantile over
all comparisons (tolerances.k_sigma).  A mechanism that really leaks more than eps fails it (see the tests that
run a mechanism at 2 eps and audit it at eps).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping

from tests.tolerances import k_sigma


def audit(samples: Mapping[Hashable, list[Hashable]], epsilon: float, alpha: float = 1e-4) -> list[str]:
    "Violations (empty when none): ``samples`` maps each input to its list of (binned) outputs"
    counters = {x: Counter(outputs) for x, outputs in samples.items()}
    sizes = {x: len(outputs) for x, outputs in samples.items()}
    outcomes = set().union(*counters.values())
    factor = math.exp(epsilon)
    pairs = [(x, y) for x in counters for y in counters if x != y]
    k = k_sigma(max(1, len(pairs) * len(outcomes)), alpha)
    violations = []
    for x, y in pairs:
        for o in outcomes:
            px, py = counters[x][o] / sizes[x], counters[y][o] / sizes[y]
            # variance of a frequency, floored at one count so empty cells are not overconfident
            vx = max(px * (1 - px), 1 / sizes[x]) / sizes[x]
            vy = max(py * (1 - py), 1 / sizes[y]) / sizes[y]
            if px - factor * py > k * math.sqrt(vx + factor**2 * vy):
                violations.append(f"P({o!r}|{x!r})={px:.4f} > e^eps * P({o!r}|{y!r})={factor * py:.4f}")
    return violations
