"""Server side of distributed campaigns' differential privacy: noise calibration, accounting, and the estimate.

``accounting`` gives the exact (epsilon, delta) of each noise under replace-one (n public) and the calibrations;
``noise`` the modes (discrete Gaussian, discrete Laplace or centred Binomial from each aggregator, one share alone
calibrated); ``estimate`` turns a noisy release into an estimate with the three trust models side by side;
``release`` does it for a campaign's stored release (its spec, the leader's record) and states the guarantees.
The aggregators draw their noise with the SDK's exact samplers (``client_sdk.randomness``).
"""

from __future__ import annotations

from .accounting import (
    Shift,
    binomial_delta,
    calibrate_coins,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    discrete_gaussian_delta,
    gaussian_gap,
    replace_one_shift,
)
from .estimate import DistributedEstimate, estimate_distributed, trust_models
from .noise import ASSUMPTION, NEIGHBOURING, NOISE_MODES, RELATION, AggregatorNoise, NoiseMode, calibrate
from .release import DistributedQuestion, ReleaseMismatch, estimate_release, estimate_releases

__all__ = [
    "ASSUMPTION", "NEIGHBOURING", "NOISE_MODES", "RELATION", "AggregatorNoise", "DistributedEstimate",
    "DistributedQuestion", "NoiseMode", "ReleaseMismatch", "Shift", "binomial_delta", "calibrate", "calibrate_coins",
    "calibrate_discrete_gaussian", "calibrate_discrete_laplace", "discrete_gaussian_delta", "estimate_distributed",
    "estimate_release", "estimate_releases", "gaussian_gap", "replace_one_shift", "trust_models",
]
