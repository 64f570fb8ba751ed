"""heavy_hitters parameters: validation naming the field, the schema, the identity, the planner, string encoding."""

import pytest

from client_sdk.errors import InvalidValue, InvalidValueType, SpecError
from client_sdk.kinds.heavy_hitters import (
    FIELDS,
    detection_threshold,
    encode_value,
    json_schema,
    params_from_dict,
    reports_needed,
    symbols_to_text,
)

ALPHABET = "abcdefghijklmnopqrstuvwxyz."


@pytest.mark.parametrize(("data", "field"), [
    ({}, "max_length"),
    ({"max_length": 0}, "max_length"),
    ({"max_length": 65}, "max_length"),
    ({"max_length": True}, "max_length"),
    ({"max_length": 6, "alphabet": "a"}, "alphabet"),
    ({"max_length": 6, "alphabet": "abca"}, "alphabet"),
    ({"max_length": 6, "alphabet": "ab\ud800"}, "alphabet"),
    ({"max_length": 6, "alphabet": 7}, "alphabet"),
    ({"max_length": 6, "overflow": "cut"}, "overflow"),
    ({"max_length": 6, "algorithm": "treehist"}, "algorithm"),
    ({"max_length": 6}, "expected_reports"),  # auto needs n
    ({"max_length": 6, "algorithm": "auto", "expected_reports": 10}, "expected_reports"),
    ({"max_length": 6, "algorithm": "auto", "expected_reports": 10**5, "segment_length": 1}, "segment_length"),
    ({"max_length": 6, "algorithm": "pem", "sketch_width": 1024}, "sketch_width"),
    ({"max_length": 6, "algorithm": "sfp", "segment_length": 1}, "segment_length"),
    ({"max_length": 6, "algorithm": "pem", "segment_length": 2}, "segment_length"),  # 257**2 > 4096
    ({"max_length": 6, "algorithm": "pem", "segment_length": 7, "alphabet": "ab"}, "segment_length"),
    ({"max_length": 6, "algorithm": "sfp", "sketch_width": 1000}, "sketch_width"),
    ({"max_length": 6, "algorithm": "sfp", "sketch_width": 8}, "sketch_width"),
    ({"max_length": 6, "algorithm": "sfp", "sketch_depth": 0}, "sketch_depth"),
    ({"max_length": 6, "algorithm": "sfp", "hash_family": "sha1"}, "hash_family"),
    ({"max_length": 6, "algorithm": "sfp", "fragment_length": 2}, "fragment_length"),  # 256 * 257**2 > 2**24
])
def test_bad_fields_raise_a_spec_error_naming_them(data, field):
    with pytest.raises(SpecError) as caught:
        params_from_dict(data, 3.0)
    assert caught.value.field == field


def test_epsilon_is_validated_and_the_fields_and_schema_agree():
    with pytest.raises(SpecError) as caught:
        params_from_dict({"max_length": 6, "algorithm": "pem"}, 0)
    assert caught.value.field == "epsilon"
    assert set(json_schema()["properties"]) == FIELDS


def test_identity_names_the_kind_and_the_resolved_algorithm_and_to_dict_round_trips():
    pem = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "algorithm": "pem", "segment_length": 2}, 3.0)
    assert pem.identity() == {"kind": "heavy_hitters", "max_length": 6, "overflow": "truncate", "algorithm": "pem",
                              "alphabet": ALPHABET, "segment_length": 2, "hash_count": 4096 // 21}
    assert params_from_dict(pem.to_dict(), 3.0) == pem
    auto = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": 20_000}, 3.0)
    assert auto.algorithm in ("pem", "sfp") and auto.identity()["requested_algorithm"] == "auto"
    assert params_from_dict(auto.to_dict(), 3.0) == auto
    sfp = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "algorithm": "sfp", "fragment_length": 2}, 1.0)
    assert params_from_dict(sfp.to_dict(), 1.0) == sfp and sfp.identity()["sketch_width"] == 1024


@pytest.mark.parametrize(("epsilon", "hash_count", "ok"), [(3.0, 1, True), (3.0, 49932, True), (3.0, 49933, False),
                                                          (3.0, 0, False), (9.0, 256, True), (9.0, 257, False)])
def test_hash_count_is_bounded_by_the_count_table(epsilon, hash_count, ok):
    spec = {"max_length": 6, "alphabet": ALPHABET, "algorithm": "pem", "hash_count": hash_count}
    if ok:
        assert params_from_dict(spec, epsilon).hash_count == hash_count
        return
    with pytest.raises(SpecError) as caught:
        params_from_dict(spec, epsilon)
    assert caught.value.field == "hash_count"
    with pytest.raises(SpecError) as caught:
        params_from_dict({**spec, "algorithm": "sfp"}, epsilon)
    assert caught.value.field == "hash_count"


def test_the_planner_picks_the_smallest_detection_threshold_and_answers_how_many_users():
    auto = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": 20_000}, 3.0)
    chosen = detection_threshold(auto, 20_000)
    for other in ({"algorithm": "pem", "segment_length": 1}, {"algorithm": "sfp", "fragment_length": 2}):
        params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, **other}, 3.0)
        assert detection_threshold(params, 20_000) >= chosen
    needed = reports_needed(auto, 0.02)
    assert detection_threshold(auto, needed) <= 0.02 < detection_threshold(auto, needed * 9 // 10)


def test_strings_encode_with_end_padding_truncate_at_a_character_boundary_or_are_refused():
    raw = params_from_dict({"max_length": 4, "algorithm": "pem"}, 3.0)
    assert encode_value(raw, "") == (0, 0, 0, 0)
    assert encode_value(raw, "ab") == (98, 99, 0, 0)
    assert encode_value(raw, b"ab") == encode_value(raw, "ab")
    assert symbols_to_text(raw, encode_value(raw, "abcé")) == "abc"  # é is 2 bytes: cut before it
    assert symbols_to_text(raw, encode_value(raw, "aé")) == "aé"
    for bad in ("a\ud800", b"\xff"):
        with pytest.raises(InvalidValue):
            encode_value(raw, bad)
    for wrong in (None, 3, ["a"]):
        with pytest.raises(InvalidValueType):
            encode_value(raw, wrong)
    refuse = params_from_dict({"max_length": 4, "algorithm": "pem", "overflow": "refuse"}, 3.0)
    assert encode_value(refuse, "abcd") == (98, 99, 100, 101)
    with pytest.raises(InvalidValue):
        encode_value(refuse, "abcde")
    letters = params_from_dict({"max_length": 3, "alphabet": "ab", "algorithm": "pem"}, 3.0)
    assert encode_value(letters, "ba") == (2, 1, 0) and encode_value(letters, "babb") == (2, 1, 2)
    with pytest.raises(InvalidValue):
        encode_value(letters, "abc")
    with pytest.raises(InvalidValueType):
        encode_value(letters, b"ab")
