"""Step 4, the estimate side: the bins' frequencies de-biased from their counts, each with its standard error and a
normal interval.  With p the probability of the true bin and q = (1 - p) / (bins - 1) that of each other one, a
bin's share of reports c / n has expectation q + f (p - q), so f = (c / n - q) / (p - q) is unbiased; its variance
is pi (1 - pi) / (n (p - q)^2) with pi = c / n's expectation (Wang et al., USENIX Security 2017, section 4), here with
the observed share in place of pi."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from estimators.errors import NoReports
from estimators.kinds import EstimateKind, register_estimate_kind

from .bins_device import NAME, keep_probability


@dataclass(frozen=True)
class BinsEstimate:
    "One window's estimate of a bins campaign: a frequency per bin"

    campaign: str
    epsilon: float
    n: int
    confidence: float
    rows: tuple[dict, ...]

    def to_json(self) -> dict:
        return {"trust": NAME, "kind": "frequency", "campaign": self.campaign, "mechanism": "bins",
                "epsilon": self.epsilon, "n": self.n, "confidence": self.confidence, "values": list(self.rows)}


class BinsEstimates(EstimateKind):
    "``source``: the reports per bin of a window, {bin: count}"

    name = NAME

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Any:
        counts: Mapping[int, int] = source
        n = sum(counts.values())
        if n == 0:
            raise NoReports(f"campaign {spec.name!r} has no reports in this window")
        p = float(keep_probability(spec))
        q = (1 - p) / (spec.params.bins - 1)
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        rows = []
        for bin_ in range(spec.params.bins):
            share = counts.get(bin_, 0) / n
            estimate = (share - q) / (p - q)
            std_error = math.sqrt(share * (1 - share) / n) / (p - q)
            rows.append({"value": bin_, "estimate": estimate, "std_error": std_error,
                         "ci_low": estimate - z * std_error, "ci_high": estimate + z * std_error})
        return BinsEstimate(spec.name, spec.epsilon, n, confidence, tuple(rows))


BINS_ESTIMATES = register_estimate_kind(BinsEstimates())
