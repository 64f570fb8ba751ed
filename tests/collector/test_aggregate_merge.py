"""The stored aggregate a request adds its reports to is merged in Python lists (storage.merged_counts): exactly
what the numpy path (Aggregate.from_dict(stored).merge(new).to_dict()) stores, for every mechanism."""

import json

import numpy as np
import pytest

from client_sdk import load_spec
from client_sdk.spec import MECHANISMS
from collector.storage import CampaignVersion, StorageError, merged_counts
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


def numpy_path(campaign, row, new):
    "What _add_to_aggregate stored before: the stored row through Aggregate, merged with numpy"
    if row is not None:
        stored = Aggregate.from_dict({"mechanism": campaign.spec.mechanism, "fingerprint": campaign.fingerprint,
                                      "n": row[0], "counts": json.loads(row[1])})
        new = stored.merge(new)
    data = new.to_dict()
    return data["n"], json.dumps(data["counts"])


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_merged_counts_equal_the_numpy_merge_for_batches_of_1_to_64(mechanism):
    spec = spec_for(mechanism)
    campaign = CampaignVersion(spec.name, 1, spec.fingerprint, spec, "2024-05-01")
    rng = np.random.default_rng(64)
    row = None
    for size in range(1, 65):
        payloads = simulate(spec, values_for(spec, size, rng), rng).to_payloads()
        new = aggregate(spec, payloads)
        expected = numpy_path(campaign, row, new)
        got = merged_counts(campaign, row, new)
        assert got == expected
        assert type(got[0]) is int and type(got[1]) is str
        row = got  # the next batch merges into what this one stored
    assert row[0] == sum(range(1, 65))


def test_merged_counts_refuse_another_spec_or_shape():
    spec = spec_for("grr")
    campaign = CampaignVersion(spec.name, 1, spec.fingerprint, spec, "2024-05-01")
    other = load_spec({"name": "t", "mechanism": "grr", "epsilon": 2.0, "domain": list(range(11))})
    with pytest.raises(AggregateMismatch):
        merged_counts(campaign, None, aggregate(other, [1]))
    with pytest.raises(StorageError):
        merged_counts(campaign, (1, json.dumps([0, 1])), aggregate(spec, [1]))


@pytest.mark.parametrize("mechanism", ["oue", "rappor", "hybrid"])
def test_a_stored_aggregate_another_worker_wrote_is_parsed_not_taken_from_the_last_write(mechanism):
    "merged_counts keeps the counts it stored last, parsed; a row holding anything else is read from its text"
    spec = spec_for(mechanism)
    campaign = CampaignVersion(spec.name, 1, spec.fingerprint, spec, "2024-05-01")
    rng = np.random.default_rng(7)
    batches = [aggregate(spec, simulate(spec, values_for(spec, 3, rng), rng).to_payloads()) for _ in range(3)]
    mine = merged_counts(campaign, None, batches[0])  # this process's last write
    elsewhere = numpy_path(campaign, mine, batches[1])  # another worker added its reports meanwhile
    assert merged_counts(campaign, elsewhere, batches[2]) == numpy_path(campaign, elsewhere, batches[2])
    # and a row equal to this process's last write gives the same as parsing it
    last = merged_counts(campaign, elsewhere, batches[2])
    assert merged_counts(campaign, last, batches[0]) == numpy_path(campaign, last, batches[0])
