"""Shared estimates for the report tests: made with the simulator and a fixed seed, so they are fast and stable."""

from __future__ import annotations

import math

import numpy as np

from client_sdk import load_spec
from client_sdk.rappor import RapporParams
from estimators import estimate
from estimators.rappor.decode import CandidateEstimate, RapporResult
from estimators.report import DailyResult, ReportData

BROWSERS = ["chrome", "safari", "edge", "firefox", "other"]
BROWSER_SHARE = np.array([0.6, 0.25, 0.1, 0.05, 0.0])


def browser_spec(mechanism: str = "oue"):
    return load_spec({"name": "browser", "mechanism": mechanism, "epsilon": 1.0, "domain": BROWSERS})


def browser_result(n: int = 4000, seed: int = 1, mechanism: str = "oue") -> dict:
    from estimators.simulate import simulate

    rng = np.random.default_rng(seed)
    spec = browser_spec(mechanism)
    return estimate(spec, simulate(spec, rng.choice(len(BROWSERS), size=n, p=BROWSER_SHARE), rng)).to_json()


def browser_data(**overrides) -> ReportData:
    options = {"result": browser_result(), "spec": browser_spec().to_dict(), "since": "2025-03-01",
               "until": "2025-03-03"}
    options.update(overrides)
    return ReportData(**options)


def daily_browser() -> list[DailyResult]:
    return [DailyResult(f"2025-03-0{day}", browser_result(n=1500, seed=10 + day)) for day in (1, 2, 3)]


def load_time_result(n: int = 3000, seed: int = 2, unit: str | None = None) -> dict:
    from estimators.simulate import simulate

    rng = np.random.default_rng(seed)
    spec = load_spec({"name": "load_ms", "mechanism": "hybrid", "epsilon": 1.0, "range": [0, 5000], "delta": 1e-6,
                      **({"unit": unit} if unit else {})})
    return estimate(spec, simulate(spec, rng.gamma(2.0, 400.0, size=n), rng)).to_json()


def rappor_result() -> dict:
    "A RAPPOR estimate as the decoder makes it (RapporResult.to_json): proportions in the rows, counts kept beside"
    candidates = (CandidateEstimate("5.2.0", 2050.0, 150.0, 0.41, 0.03, 0.35, 0.47, True),
                  CandidateEstimate("5.1.3", 100.0, 150.0, 0.02, 0.03, 0.0, 0.08, True),
                  CandidateEstimate("4.9.9", 0.0, math.nan, 0.0, math.nan, 0.0, 1.0, False))
    return RapporResult("ok", "", RapporParams(k=32, h=1, m=4, f=0.5, p=0.25, q=0.75), reports=5000, candidates=4,
                        estimates=candidates, campaign="homepage").to_json()


APPS = ["mail", "maps", "music", "news", "photos", "video", "weather", "other"]
APP_COUNTS = [700, 500, 300, 250, 150, 60, 40, 0]


def distributed_spec(mode: str = "gaussian") -> dict:
    return {"name": "apps", "version": 1, "trust": "distributed", "prio3": "histogram", "domain": APPS,
            "epsilon": 1.0, "delta": 1e-6, "noise": mode, "min_batch": 100}


def distributed_result(mode: str = "gaussian", days: tuple[str, ...] = ("2026-11-30",), seed: int = 4) -> dict:
    "The estimate of simulated releases of a distributed histogram campaign (one per day in ``days``)"
    from client_sdk.randomness import DeterministicRandom
    from estimators.distributed import Shift, calibrate, estimate_releases

    noise = calibrate(mode, epsilon=1.0, delta=1e-6, sensitivity=Shift(2, 1))
    rng = DeterministicRandom(seed)
    releases = []
    for day in days:
        drawn = noise.release_noise(len(APPS), rng)
        releases.append({"campaign": "apps", "fingerprint": "0" * 32, "version": 1, "batch": day,
                         "report_count": sum(APP_COUNTS), "rejected": {"invalid-measurement": 2}, "prio3": "histogram",
                         "release": [int(c + d) for c, d in zip(APP_COUNTS, drawn)], "noise": noise.describe(),
                         "coin_subset": None})
    return estimate_releases(distributed_spec(mode), releases)


def distributed_sum_result() -> dict:
    from estimators.distributed import calibrate, estimate_release

    noise = calibrate("laplace", epsilon=1.0, delta=1e-6, sensitivity=100)
    spec = {"name": "battery", "trust": "distributed", "prio3": "sum", "max_measurement": 100, "epsilon": 1.0,
            "delta": 1e-6, "noise": "laplace"}
    return estimate_release(spec, {"campaign": "battery", "batch": "2026-11-30", "report_count": 2000,
                                   "prio3": "sum", "release": [123_456], "noise": noise.describe()})
