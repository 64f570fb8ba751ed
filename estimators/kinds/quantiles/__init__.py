"""The quantiles kind's collector-side aggregate and its estimate (numpy): see :mod:`.aggregate`,
:mod:`.inference`, :mod:`.estimate` and :mod:`.planner`.  The device side is ``client_sdk.kinds.quantiles``."""

from .aggregate import QuantilesAggregate, level_frequencies, level_server, simulate_aggregate
from .estimate import (
    DEFAULT_QUANTILES,
    Interval,
    QuantileRow,
    QuantilesEstimate,
    band_critical_from_draws,
    band_critical_value,
    consistent_tree,
    estimate_quantiles,
    invert_cdf,
    isotonic_cdf,
    level_covariance,
    pointwise_quantile_interval,
    pointwise_quantile_set,
    quantile_interval,
    quantile_rows,
)
from .inference import (
    LevelCovariance,
    adjoint,
    cdf_covariance,
    cdf_noise_draws,
    consistent_levels,
    level_noise_draws,
)
from .planner import average_range_variance, best_branching, cdf_variance_factors, reports_for_quantile

__all__ = [
    "DEFAULT_QUANTILES", "Interval", "LevelCovariance", "QuantileRow", "QuantilesAggregate", "QuantilesEstimate",
    "adjoint", "average_range_variance", "band_critical_from_draws", "band_critical_value", "best_branching",
    "cdf_covariance", "cdf_noise_draws", "cdf_variance_factors", "consistent_levels", "consistent_tree",
    "estimate_quantiles", "invert_cdf", "isotonic_cdf", "level_covariance", "level_frequencies",
    "level_noise_draws", "level_server", "pointwise_quantile_interval", "pointwise_quantile_set",
    "quantile_interval", "quantile_rows", "reports_for_quantile", "simulate_aggregate",
]
