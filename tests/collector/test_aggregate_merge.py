"""The stored aggregate a request adds its reports to (storage.merged_counts, used by SQLite and PostgreSQL) is merged
by the one merge of aggregates, ``estimators.Aggregate.merge``: batch after batch, the stored row is the aggregate of
every report, for every mechanism, and an aggregate of another spec or shape is refused."""

import json

import numpy as np
import pytest

from client_sdk import load_spec
from client_sdk.spec import MECHANISMS
from collector.storage import CampaignVersion, merged_counts
from estimators import Aggregate, AggregateMismatch, aggregate
from estimators.simulate import simulate


def spec_for(mechanism):
    if mechanism == "rappor":
        return load_spec({"name": "t", "mechanism": "rappor",
                          "rappor": {"k": 16, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}})
    if mechanism in ("laplace", "duchi", "piecewise", "hybrid"):
        return load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 100]})
    return load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "domain": list(range(11))})


def values_for(spec, n, rng):
    if spec.mechanism == "rappor":
        return [f"/page/{i}" for i in rng.integers(0, 8, n)]
    return rng.uniform(-10, 110, n) if spec.is_numeric else rng.integers(0, 11, n)


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_the_stored_aggregate_is_the_aggregate_of_every_report_for_batches_of_1_to_64(mechanism):
    spec = spec_for(mechanism)
    campaign = CampaignVersion(spec.name, 1, spec.fingerprint, spec, "2024-05-01")
    rng = np.random.default_rng(64)
    row, every = None, []
    for size in range(1, 65):
        payloads = simulate(spec, values_for(spec, size, rng), rng).to_payloads()
        row = merged_counts(campaign, row, aggregate(spec, payloads))  # the next batch merges into what this stored
        assert type(row[0]) is int and type(row[1]) is str
        every += payloads
    whole = aggregate(spec, every).to_dict()
    assert row == (sum(range(1, 65)), json.dumps(whole["counts"]))
    stored = Aggregate.from_dict({**whole, "n": row[0], "counts": json.loads(row[1])})
    assert stored == aggregate(spec, every)  # read back exactly (object sums of numeric mechanisms included)


def test_merged_counts_refuse_another_spec_or_shape():
    spec = spec_for("grr")
    campaign = CampaignVersion(spec.name, 1, spec.fingerprint, spec, "2024-05-01")
    other = load_spec({"name": "t", "mechanism": "grr", "epsilon": 2.0, "domain": list(range(11))})
    with pytest.raises(AggregateMismatch):
        merged_counts(campaign, None, aggregate(other, [1]))
    with pytest.raises(AggregateMismatch):
        merged_counts(campaign, (1, json.dumps([0, 1])), aggregate(spec, [1]))
    with pytest.raises(AggregateMismatch):  # numpy alone would broadcast one stored count over all eleven
        merged_counts(campaign, (1, json.dumps([1])), aggregate(spec, [1]))
