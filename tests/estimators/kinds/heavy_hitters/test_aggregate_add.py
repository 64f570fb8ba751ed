"""add() parses a batch's cells at once: the same aggregate as the per-payload parse, and a bad payload in a
batch still fails with the PayloadError naming its field."""

import pytest

from client_sdk.errors import PayloadError
from client_sdk.kinds.heavy_hitters import cell_count, make_report, params_from_dict, parse_payload
from client_sdk.randomness import DeterministicRandom
from estimators.kinds.heavy_hitters import PemAggregate, SfpAggregate, aggregate_json, empty_aggregate

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
SPECS = [{"max_length": 6, "alphabet": ALPHABET, "algorithm": "pem", "segment_length": 2},
         {"max_length": 6, "alphabet": ALPHABET, "algorithm": "sfp", "fragment_length": 2}]


def payloads(params, count=300):
    rng = DeterministicRandom(4)
    return [make_report(rng, params, word) for word in ["hello", "abc", "zz.", ""] * (count // 4)]


@pytest.mark.parametrize("spec", SPECS)
def test_the_batch_parse_makes_the_per_payload_aggregate(spec):
    params = params_from_dict(spec, 3.0)
    batch = payloads(params)
    one_by_one = (PemAggregate if params.algorithm == "pem" else SfpAggregate).from_reports(
        params, [parse_payload(params, payload) for payload in batch])
    assert empty_aggregate(params).add(batch).to_json() == empty_aggregate(params).merge(one_by_one).to_json()


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("bad", [True, False, -1, "last+1", 1 << 31, -(1 << 31), 1 << 70, "0", b"\0\0\0\0", 0.0, None,
                                 [0], {"cell": 0}, "", b""])  # beyond 32 bits; a list of the wrong length; the
# empty str and bytes are 5 bytes in marshal, as an int is: only the tag tells them apart
def test_a_bad_payload_in_a_batch_names_its_field(spec, bad):
    params = params_from_dict(spec, 3.0)
    batch = payloads(params, 40)
    batch[7] = cell_count(params) if bad == "last+1" else bad
    with pytest.raises(PayloadError) as error:
        empty_aggregate(params).add(batch)
    assert error.value.field == "payload"


@pytest.mark.parametrize("spec", SPECS)
def test_the_older_list_form_counts_as_its_cell(spec):
    "Payloads of older SDKs ([group, hash, y] / [group, row, column, bit]) in a batch: the same aggregate"
    params = params_from_dict(spec, 3.0)
    batch = payloads(params, 80)
    mixed = [list(parse_payload(params, p)._values()) if i % 3 == 0 else p for i, p in enumerate(batch)]
    assert empty_aggregate(params).add(mixed).to_json() == empty_aggregate(params).add(batch).to_json()


@pytest.mark.parametrize("bad", [-1, 1 << 40, "3", 2.0, None])
def test_a_hash_index_outside_the_public_family_is_refused(bad):
    params = params_from_dict(SPECS[0], 3.0)
    batch = payloads(params, 8)
    group, _, y = parse_payload(params, batch[3])._values()
    batch[3] = [group, params.hash_count if bad == 1 << 40 else bad, y]
    with pytest.raises(PayloadError) as error:
        empty_aggregate(params).add(batch)
    assert error.value.field == "payload[1]"


@pytest.mark.parametrize("spec", SPECS)
def test_shards_merged_are_the_aggregate_of_all_and_its_size_does_not_grow_with_n(spec):
    params = params_from_dict(spec, 3.0)
    batch = payloads(params, 600)
    whole = empty_aggregate(params).add(batch)
    shards = [empty_aggregate(params).add(batch[start:start + 150]) for start in range(0, 600, 150)]
    merged = shards[0]
    for shard in shards[1:]:
        merged = merged.merge(aggregate_json(params, shard.to_json()))  # as days or shards are read back
    assert merged.to_json() == whole.to_json()
    sizes = [len(group) for group in whole.to_json()["groups"]]
    assert sizes == [len(group) for group in empty_aggregate(params).to_json()["groups"]]  # a fixed-size table


def test_an_archived_pem_table_that_does_not_add_up_is_refused():
    params = params_from_dict(SPECS[0], 3.0)
    data = empty_aggregate(params).add(payloads(params, 40)).to_json()
    data["counts"][0] += 1
    with pytest.raises(PayloadError) as error:
        aggregate_json(params, data)
    assert error.value.field == "groups[0]"


BAD_SHAPES = {"tuple": lambda p: (p,), "text": str, "float": float, "dict": lambda p: {"cell": p}}


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("shape", BAD_SHAPES)
def test_a_payload_of_another_shape_is_refused(spec, shape):
    "What marshal writes in place of an int (payload_cells reads its bytes) falls back to the parse"
    params = params_from_dict(spec, 3.0)
    batch = payloads(params, 40)
    batch[5] = BAD_SHAPES[shape](batch[5])
    with pytest.raises(PayloadError) as error:
        empty_aggregate(params).add(batch)
    assert error.value.field == "payload"


@pytest.mark.parametrize("spec", SPECS)
def test_a_payload_repeated_by_reference_and_an_int_subclass_count_as_what_they_hold(spec):
    class Cell(int):
        pass

    params = params_from_dict(spec, 3.0)
    batch = payloads(params, 40)
    shared = [batch[0]] * 30 + batch  # one int object many times: marshal's version 2 writes each in full
    expected = empty_aggregate(params).merge((PemAggregate if params.algorithm == "pem" else SfpAggregate)
                                             .from_reports(params, [parse_payload(params, p) for p in shared]))
    assert empty_aggregate(params).add(shared).to_json() == expected.to_json()
    subclassed = [Cell(p) for p in shared[:2]] + shared[2:]  # marshal refuses it: the per-payload parse counts it
    assert empty_aggregate(params).add(subclassed).to_json() == expected.to_json()
