"""Repeated collection, collector and estimate side: one period's mergeable aggregate (:mod:`.aggregate`), the
per-period mean or histogram, the change between periods and the series (:mod:`.estimate`), and a vectorised
simulation of devices for tests and benchmarks (:mod:`.simulate`).  The guarantee is stated in
:mod:`client_sdk.kinds.repeated`."""

from .aggregate import PeriodAggregate, aggregate_from_json, aggregate_payloads, empty_aggregate
from .estimate import (
    Change,
    PeriodEstimate,
    PeriodHistogram,
    PeriodMean,
    estimate_change,
    estimate_period,
    estimate_series,
    histogram_variance,
    mean_variance,
)
from .simulate import SimulatedDevices, sample_buckets, simulate_devices

__all__ = ["Change", "PeriodAggregate", "PeriodEstimate", "PeriodHistogram", "PeriodMean", "SimulatedDevices",
           "aggregate_from_json", "aggregate_payloads", "empty_aggregate", "estimate_change", "estimate_period",
           "estimate_series", "histogram_variance", "mean_variance", "sample_buckets", "simulate_devices"]
