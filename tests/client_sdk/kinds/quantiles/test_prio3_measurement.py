"""A distributed quantiles campaign's device encoding: the clamped value's bucket as a Prio3 histogram measurement,
clamps counted on the device; sharded with the project's Prio3 histogram, the aggregate is the bucket counts."""

import math
import os

import pytest

from client_sdk.errors import InvalidValue
from client_sdk.kinds.quantiles import CLAMPED, bucket_of, parse_params, prio3_measurement
from client_sdk.vdaf.prio3 import prio3_histogram
from tests.client_sdk.vdaf.helpers import aggregate, shard_bytes

PARAMS = parse_params({"range": [0, 100], "buckets": 64, "branching": 4}, 1.0)


def test_in_range_values_measure_their_bucket_and_out_of_range_ones_are_clamped_and_counted():
    state: dict = {}
    inside = [0.0, 1.5625, 50.0, 99.99, 100.0]
    assert [prio3_measurement(PARAMS, v, state) for v in inside] == [bucket_of(PARAMS, v) for v in inside]
    assert state == {}
    assert [prio3_measurement(PARAMS, v, state) for v in (-1e300, -math.inf, 1e300, math.inf)] == [0, 0, 63, 63]
    assert state == {CLAMPED: 4}
    with pytest.raises(InvalidValue):
        prio3_measurement(PARAMS, math.nan, state)
    with pytest.raises(TypeError):
        prio3_measurement(PARAMS, True, state)


def test_sharded_measurements_aggregate_to_the_bucket_counts():
    values = [3.0, 3.1, 50.0, 250.0, -7.0, 99.0]
    vdaf = prio3_histogram(PARAMS.buckets, 8)
    nonce = os.urandom(16)
    reports = [(nonce, *shard_bytes(vdaf, prio3_measurement(PARAMS, v), nonce)) for v in values]
    clamped = [min(max(v, 0.0), 100.0) for v in values]
    assert aggregate(vdaf, reports) == [[bucket_of(PARAMS, v) for v in clamped].count(i) for i in range(64)]
