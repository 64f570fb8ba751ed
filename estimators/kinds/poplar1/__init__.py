"""The poplar1 kind, estimate side: each level's noise calibrated for the whole walk (``accounting``), and the
heavy hitters of a walk's release with intervals (``estimate``)."""

from .accounting import LEVEL_SHIFT, calibrate_walk, level_release, walk_guarantee, walk_noise
from .estimate import estimate_walk

__all__ = ["LEVEL_SHIFT", "calibrate_walk", "estimate_walk", "level_release", "walk_guarantee", "walk_noise"]
