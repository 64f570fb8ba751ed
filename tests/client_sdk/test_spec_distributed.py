"""Distributed (Prio3) campaign specs: validation naming the field, the derived chunk length and sensitivity, a
fingerprint covering every parameter, and local specs' fingerprints unchanged."""

from __future__ import annotations

import math

import pytest

from client_sdk import SpecError, load_spec, mechanism_from_spec
from client_sdk.spec import MAX_PRIO3_LENGTH, Prio3Params
from client_sdk.spec_prio3 import WINDOW_SECONDS


def distributed(**overrides):
    spec = {"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": ["a", "b", "c"],
            "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
    spec.update(overrides)
    return {key: value for key, value in spec.items() if value is not None}


EVERY_TYPE = [
    distributed(prio3="count", domain=None),
    distributed(prio3="sum", domain=None, max_measurement=100, noise="laplace", delta=None),
    distributed(),
    distributed(noise="coins", coins=2, honest_fraction=0.25),
    distributed(prio3="sumvec", domain=None, length=8, max_measurement=100),
    distributed(prio3="multihot", domain=list("abcdefgh"), max_weight=3),
]


def test_local_fingerprints_are_pinned():
    "Values computed before distributed specs existed: adding them changed no local spec's identity"
    pinned = [
        ({"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "other"]},
         "9d79543182d3c7846f7913b864873c5d"),
        ({"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 5000], "expires": "2027-01-31"},
         "0e932112ab995fd4d2ef22f69bda64f9"),
        ({"name": "homepage", "mechanism": "rappor",
          "rappor": {"k": 128, "h": 2, "m": 64, "f": 0.5, "p": 0.5, "q": 0.75}}, "18c08cbdc616d17a30d979bac79a4cba"),
        ({"name": "os", "mechanism": "auto", "epsilon": 0.5, "domain": [1, 2, 3], "catch_all": 3, "delta": 1e-6},
         "f53bd2a0911a90c4b6217c62feab5ac6"),
    ]
    for data, fingerprint in pinned:
        spec = load_spec(data)
        assert spec.trust == "local" and spec.prio3 is None
        assert spec.fingerprint == fingerprint
        assert load_spec({**data, "trust": "local"}).fingerprint == fingerprint
        assert "trust" not in spec.to_dict()


@pytest.mark.parametrize("data", EVERY_TYPE, ids=lambda d: f"{d['prio3']}-{d['noise']}")
def test_every_type_round_trips(data):
    spec = load_spec(data)
    assert spec.trust == "distributed" and spec.mechanism == "prio3"
    assert isinstance(spec.prio3, Prio3Params) and spec.prio3.type == data["prio3"]
    served = spec.to_dict()
    assert served["fingerprint"] == spec.fingerprint
    assert served["derived"] == {"chunk_length": spec.prio3.chunk_length, "sensitivity": spec.prio3.sensitivity}
    again = load_spec(served)
    assert again == spec and again.fingerprint == spec.fingerprint
    assert load_spec(spec.to_dict(derived=False)) == spec


def test_defaults_and_derived_fields():
    histogram = load_spec(distributed()).prio3
    assert (histogram.min_batch, histogram.window, histogram.length, histogram.coins) == (100, "day", 3, None)
    coins = load_spec(distributed(noise="coins")).prio3
    assert (coins.coins, coins.honest_fraction) == (1, 0.5)
    # chunk_length ~ sqrt of the encoded measurement's length (the draft's recommendation)
    assert load_spec(distributed(domain=[str(i) for i in range(1024)])).prio3.chunk_length == 32
    assert load_spec(distributed(noise="coins", coins=3, domain=[str(i) for i in range(16)])).prio3.chunk_length == 8
    sumvec = load_spec(distributed(prio3="sumvec", domain=None, length=8, max_measurement=100)).prio3
    assert sumvec.chunk_length == math.isqrt(8 * 7)
    assert load_spec(distributed(prio3="count", domain=None)).prio3.chunk_length is None


def test_sensitivity_of_one_report():
    "replace-one (n public): a histogram's old bucket -1 and new one +1; multihot both sets of max_weight"
    sensitivities = [load_spec(data).prio3.sensitivity for data in EVERY_TYPE]
    assert sensitivities == [1, 100, 2, 2, 8 * 100, 6]


@pytest.mark.parametrize("change", [
    {"epsilon": 2.0}, {"delta": 1e-7}, {"noise": "laplace"}, {"min_batch": 101}, {"domain": ["a", "b", "d"]},
    {"name": "apps2"}, {"noise": "coins"}, {"expires": "2027-01-01"},
])
def test_fingerprint_covers_every_parameter(change):
    assert load_spec(distributed(**change)).fingerprint != load_spec(distributed()).fingerprint


def test_fingerprint_covers_type_specific_parameters():
    def fp(**kw):
        return load_spec(distributed(**kw)).fingerprint

    assert fp(noise="coins", coins=1) != fp(noise="coins", coins=2)
    assert fp(noise="coins", honest_fraction=0.5) != fp(noise="coins", honest_fraction=0.6)
    base = {"prio3": "sumvec", "domain": None, "length": 8, "max_measurement": 100}
    assert fp(**base) != fp(**{**base, "length": 9}) != fp(**{**base, "max_measurement": 99})
    multihot = {"prio3": "multihot", "domain": list("abcd"), "max_weight": 2}
    assert fp(**multihot) != fp(**{**multihot, "max_weight": 3})
    assert load_spec(distributed()).fingerprint != load_spec(distributed(trust="local", prio3=None, noise=None,
                                                                         mechanism="oue", delta=None)).fingerprint
    identity = load_spec(distributed(prio3="sumvec", domain=None, length=8, max_measurement=100)).identity()
    assert {"trust", "prio3", "length", "max_measurement", "chunk_length", "noise", "min_batch", "window",
            "epsilon", "delta"} <= set(identity)


@pytest.mark.parametrize("overrides, field", [
    ({"trust": "central"}, "trust"),
    ({"prio3": "gauss"}, "prio3"),
    ({"prio3": None}, "prio3"),
    ({"mechanism": "oue"}, "mechanism"),
    ({"noise": None}, "noise"),
    ({"noise": "uniform"}, "noise"),
    ({"delta": None}, "delta"),
    ({"noise": "coins", "delta": None}, "delta"),
    ({"epsilon": 0}, "epsilon"),
    ({"domain": None}, "domain"),
    ({"domain": ["a"]}, "domain"),
    ({"domain": ["a", "a"]}, "domain"),
    ({"domain": [str(i) for i in range(MAX_PRIO3_LENGTH + 1)]}, "domain"),
    ({"prio3": "count", "domain": ["a", "b"]}, "domain"),
    ({"prio3": "sum", "domain": None}, "max_measurement"),
    ({"prio3": "sum", "domain": None, "max_measurement": 0}, "max_measurement"),
    ({"prio3": "sum", "domain": None, "max_measurement": 1.5}, "max_measurement"),
    ({"prio3": "sum", "domain": None, "max_measurement": True}, "max_measurement"),
    ({"prio3": "sum", "domain": None, "max_measurement": 1 << 32}, "max_measurement"),
    ({"max_measurement": 5}, "max_measurement"),
    ({"prio3": "sumvec", "domain": None, "max_measurement": 5}, "length"),
    ({"prio3": "sumvec", "domain": None, "max_measurement": 5, "length": 0}, "length"),
    ({"length": 3}, "length"),
    ({"prio3": "multihot"}, "max_weight"),
    ({"prio3": "multihot", "max_weight": 4}, "max_weight"),
    ({"max_weight": 1}, "max_weight"),
    ({"prio3": "sum", "domain": None, "max_measurement": 5, "noise": "coins"}, "noise"),
    ({"coins": 1}, "coins"),
    ({"honest_fraction": 0.5}, "honest_fraction"),
    ({"noise": "coins", "coins": 0}, "coins"),
    ({"noise": "coins", "coins": 65}, "coins"),
    ({"noise": "coins", "coins": 4, "domain": [str(i) for i in range(4000)]}, "coins"),
    ({"prio3": "sumvec", "domain": None, "length": 4096, "max_measurement": 255}, "length"),
    ({"noise": "coins", "honest_fraction": 0}, "honest_fraction"),
    ({"noise": "coins", "honest_fraction": 1.5}, "honest_fraction"),
    ({"noise": "coins", "honest_fraction": float("nan")}, "honest_fraction"),
    ({"min_batch": 1}, "min_batch"),
    ({"min_batch": 2.5}, "min_batch"),
    ({"window": "hour"}, "window"),
    ({"window": "7m"}, "window"),  # does not divide an hour: batches would not align to the day
    ({"window": "60m"}, "window"),  # one spelling per length: "1h"
    ({"window": "24h"}, "window"),  # "day"
    ({"window": "30s"}, "window"),
    ({"window": 60}, "window"),
    ({"window": ["day"]}, "window"),
    ({"range": [0, 1]}, "range"),
    ({"catch_all": "a"}, "catch_all"),
    ({"candidates": ["a"]}, "candidates"),
    ({"fingerprint": "0" * 32}, "fingerprint"),
    ({"chunk_length": 2}, "chunk_length"),
])
def test_invalid_distributed_specs_name_the_field(overrides, field):
    with pytest.raises(SpecError) as info:
        load_spec(distributed(**overrides))
    assert info.value.field == field


@pytest.mark.parametrize("key, value", [("prio3", "count"), ("noise", "gaussian"), ("min_batch", 10),
                                        ("window", "day"), ("max_measurement", 3), ("coins", 1)])
def test_local_specs_refuse_distributed_fields(key, value):
    data = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["a", "b"], key: value}
    with pytest.raises(SpecError) as info:
        load_spec(data)
    assert info.value.field == key


def test_local_randomizers_refuse_a_distributed_spec():
    with pytest.raises(SpecError) as info:
        mechanism_from_spec(distributed())
    assert info.value.field == "trust" and "client_sdk.distributed" in str(info.value)


def test_the_window_is_the_batch_length_and_a_day_by_default():
    "A spec without a window and one with 'day' are the same spec (fingerprint); shorter ones are other specs"
    default, day, minute = (load_spec(distributed(**extra)) for extra in ({}, {"window": "day"}, {"window": "1m"}))
    assert default.fingerprint == day.fingerprint != minute.fingerprint
    assert default.to_dict()["window"] == "day" and minute.to_dict()["window"] == "1m"
    assert load_spec(minute.to_dict()).fingerprint == minute.fingerprint
    assert [WINDOW_SECONDS[w] for w in ("1m", "15m", "1h", "12h", "day")] == [60, 900, 3600, 43200, 86400]
    assert all(86400 % seconds == 0 for seconds in WINDOW_SECONDS.values())
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    assert (default.prio3.batch_at(now), minute.prio3.batch_at(now)) == ("2023-11-14", "2023-11-14T22:13Z")
    quarter = load_spec(distributed(window="15m")).prio3
    assert quarter.batch_at(now) == "2023-11-14T22:00Z" and quarter.batch_end("2023-11-14T22:00Z") == now - 800 + 900
    assert minute.prio3.batch_end("2023-11-14T22:13Z") == now + 40
    assert default.prio3.batch_end("2023-11-14") == 1_700_006_400.0
    for wrong in ("2023-11-14T22:05Z", "2023-11-14", "2023-11-14T22:00", "2023-11-14T24:00Z", "tomorrow"):
        with pytest.raises(ValueError, match="not a batch of window '15m'"):
            quarter.batch_end(wrong)
    with pytest.raises(ValueError, match="not a batch of window 'day'"):
        default.prio3.batch_end("2023-11-14T00:00Z")
