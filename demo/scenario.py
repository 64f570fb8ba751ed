"""The demo's campaigns and the simulated population that reports to them, with its ground truth.

Four campaigns that look like real telemetry, one per kind of question:

* ``browser``: which browser (12 values, ``mechanism: auto``, which resolves to OUE at epsilon 1);
* ``app_version``: which app version, free-form strings collected with RAPPOR and decoded against candidates;
* ``page_load_ms``: page-load time in milliseconds over [0, 10000], mean by the Hybrid mechanism;
* ``analytics_opt_in``: a yes/no answer with randomized response (``grr``).

And one distributed campaign (``DISTRIBUTED_CAMPAIGNS``), served by a leader and a helper: ``browser_distributed``
asks the browser question again, with Prio3 and discrete Gaussian noise from each aggregator, so its error bar sits
beside the local and central ones for the same question.

Edit the specs or the population to try other settings; ``demo/run.py`` reads everything from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

BROWSER_SHARES = {
    "chrome": 0.63, "safari": 0.20, "edge": 0.055, "firefox": 0.035, "samsung": 0.025, "opera": 0.02,
    "brave": 0.01, "vivaldi": 0.005, "yandex": 0.005, "uc": 0.005, "duckduckgo": 0.005, "other": 0.005,
}
APP_VERSION_SHARES = {"5.3.0": 0.45, "5.2.1": 0.30, "5.2.0": 0.15, "5.1.4": 0.10}
# Candidates for decoding: the versions in use plus some that nobody runs (they should come out near 0).
APP_VERSION_CANDIDATES = ["5.3.0", "5.2.1", "5.2.0", "5.1.4", "5.1.3", "5.0.0", "4.9.9", "6.0.0-beta"]
OPT_IN_SHARES = {"yes": 0.3, "no": 0.7}
PAGE_LOAD_MEDIAN_MS = 1200.0
PAGE_LOAD_SIGMA = 0.6  # log-normal shape: a long tail of slow loads
PAGE_LOAD_RANGE = (0.0, 10_000.0)


@dataclass(frozen=True)
class DemoCampaign:
    "A campaign spec and the population behind it; ``shares`` is None for a numeric campaign"

    spec: dict[str, Any]
    shares: dict[str, float] | None = None

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def is_numeric(self) -> bool:
        return self.shares is None

    def draw(self, rng: np.random.Generator, users: int) -> list[Any]:
        "One true value per simulated user"
        if self.shares is None:
            times = rng.lognormal(np.log(PAGE_LOAD_MEDIAN_MS), PAGE_LOAD_SIGMA, size=users)
            return [round(float(t), 1) for t in times]
        values = list(self.shares)
        probabilities = np.array([self.shares[v] for v in values])
        return [values[i] for i in rng.choice(len(values), size=users, p=probabilities / probabilities.sum())]

    def truth(self, values: list[Any]) -> dict[str, float] | float:
        "What a census of these users would say: the fraction of each value, or the mean (clamped to the range)"
        if self.shares is None:
            low, high = self.spec["range"]
            return float(np.clip(np.asarray(values, dtype=float), low, high).mean())
        labels = self.spec.get("domain") or self.spec.get("candidates") or list(self.shares)
        counts = {label: 0 for label in labels}
        for value in values:
            counts[value] = counts.get(value, 0) + 1
        return {label: count / len(values) for label, count in counts.items()}


CAMPAIGNS: tuple[DemoCampaign, ...] = (
    DemoCampaign(
        {"name": "browser", "mechanism": "auto", "epsilon": 1.0, "domain": list(BROWSER_SHARES),
         "catch_all": "other", "description": "Which browser the user runs"},
        BROWSER_SHARES),
    DemoCampaign(
        {"name": "app_version", "mechanism": "rappor", "candidates": APP_VERSION_CANDIDATES,
         # RAPPOR's defaults (k 16, h 2, m 64, f .5, p .5, q .75) need far more than a few thousand users.
         # One hash, 8 cohorts and a stronger IRR decode all four versions at 2,000 users, with
         # epsilon_1 = 1.58 per report and epsilon_inf = 3.89 for a value that never changes (defaults: 4.39).
         "rappor": {"k": 32, "h": 1, "m": 8, "f": 0.25, "p": 0.25, "q": 0.75},
         "description": "Which app version is installed (free-form strings)"},
        APP_VERSION_SHARES),
    DemoCampaign(
        {"name": "page_load_ms", "mechanism": "hybrid", "epsilon": 2.0, "range": list(PAGE_LOAD_RANGE), "unit": "ms",
         "delta": 1e-6, "description": "Time to load the home page, in milliseconds"}),
    DemoCampaign(
        {"name": "analytics_opt_in", "mechanism": "grr", "epsilon": 1.0, "domain": list(OPT_IN_SHARES),
         "description": "Did the user opt in to analytics?"},
        OPT_IN_SHARES),
)

DISTRIBUTED_CAMPAIGNS: tuple[DemoCampaign, ...] = (
    DemoCampaign(
        {"name": "browser_distributed", "trust": "distributed", "prio3": "histogram", "domain": list(BROWSER_SHARES),
         "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "min_batch": 20,
         "description": "Which browser the user runs, aggregated by two servers (Prio3) with noise on the sum"},
        BROWSER_SHARES),
)
