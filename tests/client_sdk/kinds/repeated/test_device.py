"""The repeated-collection device: memoized answers, what the ledger is charged, the state it keeps, the bytes it
reads, and the payload codec.  The collector plays the attacker here: it sees every payload a device sends."""

import json
from collections import Counter

import pytest

from client_sdk.errors import DeviceStateError, InvalidValue, InvalidValueType, PayloadError
from client_sdk.kinds.repeated import (
    answer_count,
    check_payload,
    draw_buckets,
    make_report,
    parse_params,
    rounded_point,
)
from client_sdk.randomness import ByteStreamRandom, DeterministicRandom
from tests.tolerances import k_sigma

MEAN = {"mode": "mean", "range": [0, 10], "rounding_points": 5, "epsilon": 1.0}
HISTOGRAM = {"mode": "histogram", "range": [0, 8], "buckets": 8, "bits": 2, "epsilon": 2.0}


def run(params, values, seed=1, state=None):
    "The payloads a device sends for ``values``, one per period, and the periods the ledger is charged"
    rng, state = DeterministicRandom(seed), {} if state is None else state
    payloads, charged = [], 0
    for value in values:
        payload, new_answer = make_report(rng, params, state, value)
        state = json.loads(json.dumps(state))  # persisted and reloaded every period, as the state file does
        payloads.append(json.dumps(payload, sort_keys=True))
        charged += new_answer
    return payloads, charged, state


@pytest.mark.parametrize("data", [MEAN, HISTOGRAM])
def test_an_unchanged_value_sends_365_identical_answers_and_is_charged_once(data):
    params = parse_params(data)
    for seed in range(6):
        payloads, charged, state = run(params, [3.3] * 365, seed)
        assert len(set(payloads)) == 1 and charged == 1 == answer_count(state)


@pytest.mark.parametrize("data", [MEAN, HISTOGRAM, {**MEAN, "rounding_points": 2}, {**HISTOGRAM, "bits": 8}])
def test_alternating_neighbourhoods_produce_at_most_the_answers_the_ledger_counted(data):
    params = parse_params(data)
    for seed in range(6):
        payloads, charged, state = run(params, [1.2, 6.7] * 183, seed)
        assert len(set(payloads)) <= charged == answer_count(state) <= 2
        assert charged * params.epsilon <= params.lifetime_epsilon()


def test_a_wandering_value_is_charged_per_distinct_answer_up_to_the_lifetime_bound():
    rng = DeterministicRandom(7)
    for data in (MEAN, HISTOGRAM):
        params = parse_params(data)
        values = [rng.randbelow(1000) / 100 for _ in range(365)]
        payloads, charged, state = run(params, values, 3)
        assert len(set(payloads)) <= charged == answer_count(state) <= params.answer_limit()


def test_gamma_changes_the_payload_not_the_charge():
    params = parse_params({**HISTOGRAM, "bits": 4, "gamma": 0.25})
    payloads, charged, _ = run(params, [3.3] * 365)
    assert charged == 1 and len(set(payloads)) > 1
    bits = Counter(json.loads(payload)["bits"] for payload in payloads)
    assert len(bits) > 4  # fresh flips of 4 bits every period


def test_a_value_on_a_rounding_point_never_moves_and_alpha_rounds_in_proportion():
    params = parse_params(MEAN)
    assert {rounded_point(params, alpha, 5.0) for alpha in (0, 2**31, 2**32 - 1)} == {2}
    assert rounded_point(params, 0, 10.0) == 4 and rounded_point(params, 2**32 - 1, 99) == 4
    # 3.3 is 32% of the way from point 1 (2.5) to point 2 (5.0): rounded up when alpha < 0.32 * 2**32
    assert rounded_point(params, int(0.319 * 2**32), 3.3) == 2 and rounded_point(params, int(0.321 * 2**32), 3.3) == 1


def test_the_bytes_read_are_the_documented_ones():
    "mean: alpha (4 bytes), the answer randbelow(2**32 * 4) (35 bits: 5 bytes), gamma's flip (4 bytes)"
    params = parse_params({**MEAN, "gamma": 0.25})
    stream = bytes(4) + bytes([0, 0, 0, 0, 0]) + bytes([0xFF] * 4)
    rng, state = ByteStreamRandom(stream), {}
    assert make_report(rng, params, state, 3.3) == (1, True)  # alpha 0: up to point 2; answer 0 < N_2: 1; no flip
    assert rng.consumed == 13 and state["alpha"] == 0 and state["answers"] == {"2": 1}
    again = ByteStreamRandom(bytes(4))
    assert make_report(again, params, state, 3.3) == (0, False)  # a reused answer reads only gamma's flip: flipped
    assert again.consumed == 4
    # histogram: randbelow(8) and randbelow(7) read one byte each (Fisher-Yates), then 4 bytes per answer bit
    params = parse_params(HISTOGRAM)
    rng, state = ByteStreamRandom(bytes([3 << 4, 5 << 5]) + bytes(4) + bytes([0xFF] * 4)), {}
    payload, new_answer = make_report(rng, params, state, 3.5)  # bucket 3
    assert state["buckets"] == [3, 6] and rng.consumed == 10 and new_answer
    assert payload == {"buckets": [3, 6], "bits": "80"}  # own bucket 0 < p: 1; the other 0xFFFFFFFF >= q: 0


def test_draw_buckets_is_uniform_over_subsets():
    rng, draws = DeterministicRandom(11), 6000
    counts = Counter(tuple(draw_buckets(rng, 4, 2)) for _ in range(draws))
    assert len(counts) == 6
    expected, sd = draws / 6, (draws * (1 / 6) * (5 / 6)) ** 0.5
    assert all(abs(count - expected) <= k_sigma(6) * sd for count in counts.values())
    assert draw_buckets(DeterministicRandom(1), 5, 5) == [0, 1, 2, 3, 4]


def test_a_state_made_for_other_parameters_is_redrawn_and_charged_again():
    _, _, state = run(parse_params(MEAN), [3.3])
    payload, new_answer = make_report(DeterministicRandom(2), parse_params({**MEAN, "rounding_points": 9}), state, 3.3)
    assert new_answer and state["identity"]["rounding_points"] == 9 and answer_count(state) == 1


@pytest.mark.parametrize("damage", [{"alpha": -1}, {"alpha": "0"}, {"answers": []}, {"answers": {"2": 7}},
                                    {"version": 99}])
def test_a_damaged_mean_state_is_refused(damage):
    params = parse_params(MEAN)
    _, _, state = run(params, [3.3])
    state.update(damage)
    with pytest.raises(DeviceStateError):
        make_report(DeterministicRandom(1), params, state, 3.3)


@pytest.mark.parametrize("damage", [{"buckets": [6, 3]}, {"buckets": [3, 3]}, {"buckets": [3, 8]},
                                    {"answers": {"other": "8"}}])
def test_a_damaged_histogram_state_is_refused(damage):
    params = parse_params(HISTOGRAM)
    _, _, state = run(params, [3.3])
    state.update(damage)
    with pytest.raises(DeviceStateError):
        make_report(DeterministicRandom(1), params, state, 3.3)


def test_bad_values_raise_before_anything_is_drawn_or_kept():
    params, state = parse_params(MEAN), {}
    for value, error in (("3", InvalidValueType), (True, InvalidValueType), (None, InvalidValueType),
                         (float("nan"), InvalidValue)):
        with pytest.raises(error):
            make_report(ByteStreamRandom(b""), params, state, value)
    assert state == {}
    assert run(params, [float("inf")])[0] == run(params, [10.0])[0]  # clamped to the range


@pytest.mark.parametrize("payload, field", [
    (2, "payload"), (True, "payload"), ("1", "payload"), (None, "payload"),
])
def test_bad_mean_payloads_are_named(payload, field):
    with pytest.raises(PayloadError) as error:
        check_payload(parse_params(MEAN), payload)
    assert error.value.field == field


@pytest.mark.parametrize("payload, field", [
    ([1, 2], "payload"),
    ({"buckets": [1, 2]}, "payload"),
    ({"buckets": [1, 2], "bits": "c0", "x": 1}, "payload"),
    ({"buckets": [1], "bits": "c0"}, "payload.buckets"),
    ({"buckets": [2, 1], "bits": "c0"}, "payload.buckets[1]"),
    ({"buckets": [1, 1], "bits": "c0"}, "payload.buckets[1]"),
    ({"buckets": [1, 8], "bits": "c0"}, "payload.buckets[1]"),
    ({"buckets": [-1, 2], "bits": "c0"}, "payload.buckets[0]"),
    ({"buckets": [True, 2], "bits": "c0"}, "payload.buckets[0]"),
    ({"buckets": [1, 2], "bits": "c1"}, "payload.bits"),
    ({"buckets": [1, 2], "bits": "c"}, "payload.bits"),
    ({"buckets": [1, 2], "bits": " c"}, "payload.bits"),
    ({"buckets": [1, 2], "bits": 3}, "payload.bits"),
])
def test_bad_histogram_payloads_are_named(payload, field):
    with pytest.raises(PayloadError) as error:
        check_payload(parse_params(HISTOGRAM), payload)
    assert error.value.field == field


def test_payloads_decode_to_what_the_device_sent():
    params = parse_params({**HISTOGRAM, "buckets": 64, "bits": 12, "range": [0, 64]})
    assert check_payload(params, {"buckets": list(range(0, 24, 2)), "bits": "a5c0"}) == (
        tuple(range(0, 24, 2)), (1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0))
    assert check_payload(parse_params(MEAN), 1) == ((), (1,))
