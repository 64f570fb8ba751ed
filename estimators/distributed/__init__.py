"""Server side of distributed campaigns' differential privacy: noise calibration, accounting, and the estimate.

``accounting`` gives the exact (epsilon, delta) of each noise and the calibrations; ``noise`` the two modes
(aggregator noise: discrete Gaussian or Laplace from each aggregator; coin-flip noise: fair coins of a public random
subset of reports); ``estimate`` turns a noisy release into an estimate with the three trust models side by side;
``release`` does it for a campaign's stored release (its spec, the leader's record) and states the guarantees.
The aggregators draw their noise with the SDK's exact samplers (``client_sdk.randomness``).
"""

from __future__ import annotations

from .accounting import (
    binomial_delta,
    calibrate_coins,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    discrete_gaussian_delta,
    gaussian_gap,
)
from .estimate import DistributedEstimate, estimate_distributed, trust_models
from .noise import NOISE_MODES, AggregatorNoise, CoinNoise, NoiseMode, calibrate, coin_subset_size, select_coin_reports
from .release import DistributedQuestion, ReleaseMismatch, estimate_release, estimate_releases

__all__ = [
    "NOISE_MODES", "AggregatorNoise", "CoinNoise", "DistributedEstimate", "DistributedQuestion", "NoiseMode",
    "ReleaseMismatch", "binomial_delta", "calibrate", "calibrate_coins", "calibrate_discrete_gaussian",
    "calibrate_discrete_laplace", "coin_subset_size", "discrete_gaussian_delta", "estimate_distributed",
    "estimate_release", "estimate_releases", "gaussian_gap", "select_coin_reports", "trust_models",
]
