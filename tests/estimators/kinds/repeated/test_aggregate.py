"""Repeated collection's per-period aggregate: payloads counted as the simulation's arrays are, merged by adding,
stored as JSON."""

import numpy as np
import pytest

from client_sdk.errors import PayloadError
from client_sdk.kinds.repeated import make_report, parse_params
from client_sdk.randomness import DeterministicRandom
from estimators.errors import AggregateMismatch
from estimators.kinds.repeated import aggregate_from_json, aggregate_payloads, empty_aggregate

MEAN = parse_params({"mode": "mean", "range": [0, 10], "rounding_points": 5, "epsilon": 1.0})
HISTOGRAM = parse_params({"mode": "histogram", "range": [0, 8], "buckets": 8, "bits": 3, "epsilon": 2.0})


def device_payloads(params, values, seed=0):
    rng = DeterministicRandom(seed)
    return [make_report(rng, params, {}, value)[0] for value in values]


@pytest.mark.parametrize("params", [MEAN, HISTOGRAM])
def test_payloads_count_as_arrays_and_merge_by_adding(params):
    payloads = device_payloads(params, [i % 8 + 0.5 for i in range(300)])
    whole = aggregate_payloads(params, payloads)
    merged = aggregate_payloads(params, payloads[:100]).merge(aggregate_payloads(params, payloads[100:]))
    assert merged.to_json() == whole.to_json() and whole.reports == 300
    if params.mode == "histogram":
        buckets = np.array([payload["buckets"] for payload in payloads])
        assert whole.sampled.sum() == 300 * 3 and (whole.sampled == np.bincount(buckets.ravel(), minlength=8)).all()
    else:
        assert whole.ones[0] == sum(payloads)
    assert aggregate_from_json(params, whole.to_json()).to_json() == whole.to_json()
    assert empty_aggregate(params).merge(whole).to_json() == whole.to_json()


def test_an_invalid_payload_is_named_with_its_index():
    with pytest.raises(PayloadError) as error:
        aggregate_payloads(HISTOGRAM, [{"buckets": [0, 1, 2], "bits": "e0"}, {"buckets": [0, 1], "bits": "e0"}])
    assert error.value.field == "payloads[1].payload.buckets"


def test_aggregates_of_other_campaigns_or_inconsistent_counts_are_refused():
    with pytest.raises(AggregateMismatch):
        empty_aggregate(MEAN).merge(empty_aggregate(parse_params({**{"mode": "mean", "range": [0, 10]},
                                                                  "rounding_points": 6, "epsilon": 1.0})))
    for data in ({"reports": 3, "ones": 4}, {"reports": -1, "ones": 0}, {"ones": 1}, {"reports": "x", "ones": 1}):
        with pytest.raises(AggregateMismatch):
            aggregate_from_json(MEAN, data)
    for data in ({"reports": 3, "sampled": [1] * 7, "ones": [0] * 7}, {"reports": 3, "sampled": [], "ones": []},
                 {"reports": 1, "sampled": [2] * 8, "ones": [0] * 8}):
        with pytest.raises(AggregateMismatch):
            aggregate_from_json(HISTOGRAM, data)
