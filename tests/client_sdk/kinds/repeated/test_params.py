"""The repeated-collection kind's parameters: validation naming the field, JSON Schema, identity, thresholds."""

from fractions import Fraction

import jsonschema
import pytest

from client_sdk.errors import SpecError
from client_sdk.kinds.repeated import FIELDS, identity, json_schema, parse_params, to_dict
from client_sdk.randomness import PROB_DENOMINATOR, exp_rounded

MEAN = {"mode": "mean", "range": [0, 10], "rounding_points": 5, "epsilon": 1.0}
HISTOGRAM = {"mode": "histogram", "range": [0, 8], "buckets": 8, "bits": 2, "epsilon": 2.0, "period": "week"}


@pytest.mark.parametrize("change, field", [
    ({"mode": "median"}, "mode"),
    ({"range": [3, 3]}, "range"),
    ({"range": "0..1"}, "range"),
    ({"period": "month"}, "period"),
    ({"rounding_points": 1}, "rounding_points"),
    ({"rounding_points": 4097}, "rounding_points"),
    ({"rounding_points": True}, "rounding_points"),
    ({"rounding_points": None}, "rounding_points"),
    ({"bits": 1}, "bits"),
    ({"buckets": 4}, "buckets"),
    ({"gamma": 0}, "gamma"),
    ({"gamma": 0.5}, "gamma"),
    ({"gamma": 0.5 - 2**-40}, "gamma"),
    ({"gamma": "0.1"}, "gamma"),
    ({"epsilon": 0}, "epsilon"),
])
def test_a_bad_mean_field_is_named(change, field):
    data = {**MEAN, **change}
    if change.get("rounding_points", 0) is None:
        del data["rounding_points"]
    with pytest.raises(SpecError) as error:
        parse_params(data)
    assert error.value.field == field


@pytest.mark.parametrize("change, field", [
    ({"buckets": 1}, "buckets"),
    ({"bits": 0}, "bits"),
    ({"bits": 9}, "bits"),
    ({"bits": 2.0}, "bits"),
    ({"rounding_points": 4}, "rounding_points"),
])
def test_a_bad_histogram_field_is_named(change, field):
    with pytest.raises(SpecError) as error:
        parse_params({**HISTOGRAM, **change})
    assert error.value.field == field


def test_missing_histogram_fields_are_named():
    for field in ("buckets", "bits"):
        data = dict(HISTOGRAM)
        del data[field]
        with pytest.raises(SpecError) as error:
            parse_params(data)
        assert error.value.field == field


def test_the_envelope_supplies_epsilon():
    class Envelope:
        epsilon = 3.0

    assert parse_params({**MEAN, "epsilon": "ignored"}, Envelope()).epsilon == 3.0


def test_to_dict_round_trips_and_the_identity_names_the_kind():
    for data in (MEAN, {**MEAN, "gamma": 0.1}, HISTOGRAM):
        params = parse_params(data)
        assert parse_params({**to_dict(params), "epsilon": data["epsilon"]}) == params
        assert identity(params) == {"kind": "repeated", **to_dict(params)}
        assert set(to_dict(params)) <= FIELDS
    assert "gamma" not in identity(parse_params(MEAN))
    assert identity(parse_params(MEAN))["period"] == "day"  # the default is explicit: a changed default cannot move it


def test_the_json_schema_accepts_valid_fields_and_refuses_mixed_modes():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for data in (MEAN, HISTOGRAM, {**MEAN, "gamma": 0.25}):
        assert validator.is_valid({key: value for key, value in data.items() if key != "epsilon"})
    for data in ({**MEAN, "bits": 2}, {**HISTOGRAM, "rounding_points": 3}, {**MEAN, "mode": "x"},
                 {**MEAN, "gamma": 0.5}, {"mode": "histogram", "range": [0, 1], "buckets": 4}):
        assert not validator.is_valid(data)
    assert set(schema["properties"]) == FIELDS


def test_thresholds_keep_the_privacy_ratio_at_or_below_e_eps():
    for epsilon in (0.01, 0.5, 1.0, 4.0, 10.0):
        mean = parse_params({**MEAN, "epsilon": epsilon})
        q = Fraction(mean.flip_threshold, PROB_DENOMINATOR)
        assert (1 - q) / q <= Fraction(exp_rounded(epsilon)) and q < Fraction(1, 2)
        hist = parse_params({**HISTOGRAM, "epsilon": epsilon})
        q = Fraction(hist.flip_threshold, PROB_DENOMINATOR)
        assert ((1 - q) / q) ** 2 <= Fraction(exp_rounded(epsilon / 2)) ** 2
    params = parse_params(MEAN)
    numerators = [params.point_threshold(j)[0] for j in range(5)]
    assert numerators[0] == params.flip_threshold * 4 and numerators[-1] == params.keep_threshold * 4
    assert params.point_threshold(2)[1] == PROB_DENOMINATOR * 4


def test_lifetime_bounds():
    assert parse_params(MEAN).lifetime_epsilon() == 5.0
    assert parse_params(HISTOGRAM).answer_limit() == 3
    assert parse_params({**HISTOGRAM, "bits": 8}).answer_limit() == 8


def test_a_report_names_its_period_and_is_checked_by_field():
    from client_sdk.errors import PayloadError
    from client_sdk.kinds.repeated import check_report, encode_report, period_label_start, period_of

    params = parse_params({"mode": "histogram", "range": [0, 8], "buckets": 8, "bits": 2, "epsilon": 1.0,
                           "period": "week"})
    label = period_of(params, 1_767_225_600)  # Thursday 2026-01-01: its week starts on Monday 2025-12-29
    assert label == "2025-12-29" and period_label_start(params, label) == 1_767_225_600 - 3 * 86_400
    assert period_label_start(params, "2025-12-30") is None  # a Tuesday labels no week
    good = encode_report(label, {"buckets": [1, 5], "bits": "80"})
    assert check_report(params, good) == (label, (1, 5), (1, 0))
    for bad, field in [({**good, "period": "2025-13-01"}, "payload.period"), ({"answer": 1}, "payload"),
                       ({**good, "answer": {"buckets": [5, 1], "bits": "80"}}, "payload.answer.buckets[1]"),
                       ({**good, "answer": {"buckets": [1, 5], "bits": 3}}, "payload.answer.bits")]:
        with pytest.raises(PayloadError) as info:
            check_report(params, bad)
        assert info.value.field == field
