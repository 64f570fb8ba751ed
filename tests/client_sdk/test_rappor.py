import hashlib
import itertools
import json
import math
import os
import stat
import struct

import pytest
from scipy.stats import chisquare

from client_sdk import (
    DeterministicRandom,
    PayloadError,
    SpecError,
    ValueNotInDomain,
    load_spec,
    mechanism_from_spec,
)
from client_sdk.mechanisms.rappor import RapporMechanism
from client_sdk.randomness import SecureRandom
from client_sdk.rappor import (
    RapporParams,
    bloom_bit_positions,
    cohort_from_secret,
    quantized_probabilities,
)
from client_sdk.runtime.device_state import DeviceState, DeviceStateError, load_or_create_device_state

SECRET = bytes(range(32))


def rappor_spec(name="homepage", candidates=None, **params):
    raw = {
        "name": name,
        "mechanism": "rappor",
        "rappor": {"k": 16, "h": 2, "m": 64, "f": 0.5, "p": 0.5, "q": 0.75},
    }
    raw["rappor"].update(params)
    if candidates is not None:
        raw["candidates"] = candidates
    return load_spec(raw)


def mechanism(spec=None, seed=1, **options):
    return RapporMechanism(spec or rappor_spec(), rng=DeterministicRandom(seed), **options)


# -- Bloom filter ------------------------------------------------------------------------------------------------
def test_reference_test_vector_v1_cohort_0_sets_bits_8_and_10():
    assert bloom_bit_positions("v1", 0, 16, 2) == [8, 10]
    bits = mechanism(secret=SECRET, cohort=0).bloom_bits("v1")
    assert [i for i, bit in enumerate(bits) if bit] == [8, 10]


def test_bloom_bits_hash_big_endian_cohort_then_utf8_value():
    digest = hashlib.md5(struct.pack(">L", 7) + "café".encode()).digest()
    assert bloom_bit_positions("café", 7, 128, 4) == [digest[i] % 128 for i in range(4)]


def test_filters_wider_than_256_bits_use_two_digest_bytes_per_hash():
    digest = hashlib.md5(struct.pack(">L", 3) + b"hello").digest()
    expected = [(digest[2 * i] * 256 + digest[2 * i + 1]) % 1000 for i in range(8)]
    assert bloom_bit_positions("hello", 3, 1000, 8) == expected
    assert max(bloom_bit_positions(f"x{i}", 0, 4096, 2)[0] for i in range(200)) > 255


@pytest.mark.parametrize(
    "k, h, ok", [(256, 16, True), (256, 17, False), (257, 8, True), (257, 9, False), (65536, 8, True)]
)
def test_number_of_hashes_is_limited_by_the_digest(k, h, ok):
    if ok:
        assert rappor_spec(k=k, h=h).rappor.h == h
    else:
        with pytest.raises(SpecError) as info:
            rappor_spec(k=k, h=h)
        assert info.value.field == "rappor.h"


@pytest.mark.parametrize(
    "params, field",
    [
        ({"k": 0}, "rappor.k"),
        ({"k": 65537}, "rappor.k"),
        ({"k": 2.5}, "rappor.k"),
        ({"h": 0}, "rappor.h"),
        ({"m": 3}, "rappor.m"),
        ({"m": True}, "rappor.m"),
        ({"f": 1}, "rappor.f"),
        ({"f": -0.1}, "rappor.f"),
        ({"p": 0.8}, "rappor.p"),
        ({"q": 1.1}, "rappor.p"),
        ({"p": "0.5"}, "rappor.p"),
        ({"f": float("nan")}, "rappor.f"),
        ({"encoding": "unary"}, "rappor.encoding"),
        ({"encoding": "boolean"}, "rappor.h"),
        ({"encoding": "boolean", "h": 1}, "rappor.k"),
        ({"encoding": "basic"}, "rappor.h"),
        ({"k": 1, "encoding": "bloom"}, "rappor.k"),
        ({"salt": 1}, "rappor.salt"),
    ],
)
def test_invalid_parameters_name_the_field(params, field):
    with pytest.raises(SpecError) as info:
        rappor_spec(**params)
    assert info.value.field == field


def test_encoding_defaults_keep_existing_fingerprints():
    # Fingerprints of specs written before "encoding" existed must not change.
    spec = load_spec(
        {
            "name": "homepage",
            "mechanism": "rappor",
            "rappor": {"k": 128, "h": 2, "m": 64, "f": 0.5, "p": 0.5, "q": 0.75},
        }
    )
    assert spec.fingerprint == "18c08cbdc616d17a30d979bac79a4cba"
    assert "encoding" not in spec.to_dict()["rappor"]
    flag = load_spec({"name": "flag", "mechanism": "rappor", "rappor": {"k": 1, "h": 1, "m": 1}})
    assert flag.rappor.encoding == "boolean" and flag.fingerprint == "876666de52a2596da18f46b22b619221"
    basic = rappor_spec(k=3, h=1, encoding="basic", candidates=["a", "b", "c"])
    assert basic.rappor.h == 1 and basic.to_dict()["rappor"]["encoding"] == "basic"
    assert load_spec(json.loads(basic.to_json())) == basic


def test_epsilon_formulas():
    params = rappor_spec().rappor
    assert round(params.epsilon_one, 2) == 1.07 and round(params.epsilon_inf, 2) == 4.39
    # The reference regression tests' "eps_1_1" setting: epsilon_1 about 1, epsilon_inf about 5.
    reference = RapporParams(k=8, h=2, m=128, p=0.39, q=0.61, f=0.45)
    assert abs(reference.epsilon_one - 0.97) < 0.01 and abs(reference.epsilon_inf - 4.95) < 0.01
    assert RapporParams(f=0.0).epsilon_inf == math.inf


# -- secret, cohort, PRR -----------------------------------------------------------------------------------------
def test_prr_is_memoized_per_value_and_secret():
    first = mechanism(secret=SECRET)
    again = mechanism(secret=SECRET, seed=99)  # another IRR source, same secret
    for value in ("a", "b", "https://example.com/"):
        assert first.permanent_bits(value) == first.permanent_bits(value) == again.permanent_bits(value)
    other = mechanism(secret=bytes(range(1, 33)))
    assert any(first.permanent_bits(f"v{i}") != other.permanent_bits(f"v{i}") for i in range(5))
    renamed = mechanism(rappor_spec(name="another"), secret=SECRET)
    assert any(first.permanent_bits(f"v{i}") != renamed.permanent_bits(f"v{i}") for i in range(5))


def test_prr_depends_only_on_the_bloom_bits():
    spec = rappor_spec(k=2, h=1, m=1)
    mech = mechanism(spec, secret=SECRET, cohort=0)
    by_bloom = {}
    for i in range(40):
        by_bloom.setdefault(bytes(mech.bloom_bits(f"v{i}")), set()).add(bytes(mech.permanent_bits(f"v{i}")))
    assert all(len(prrs) == 1 for prrs in by_bloom.values()) and len(by_bloom) == 2


def test_repeated_reports_average_to_the_prr_not_the_value():
    mech = mechanism(rappor_spec(k=8, h=2, m=1), secret=SECRET, cohort=0)
    prr = mech.permanent_bits("secret value")
    reports = 4000
    ones = [0] * 8
    for _ in range(reports):
        bits = int(mech.perturb("secret value")["bits"], 16)
        for i in range(8):
            ones[i] += (bits >> (7 - i)) & 1
    for i in range(8):
        expected = 0.75 if prr[i] else 0.5
        assert abs(ones[i] / reports - expected) < 4.5 * math.sqrt(expected * (1 - expected) / reports)


def test_cohort_is_stable_nested_and_uniform():
    assert (
        mechanism(secret=SECRET).cohort
        == mechanism(secret=SECRET, seed=7).cohort
        == cohort_from_secret(SECRET, 64)
    )
    assert cohort_from_secret(SECRET, 128) % 64 == cohort_from_secret(SECRET, 64)
    rng = DeterministicRandom(3)
    cohorts = [cohort_from_secret(rng.token_bytes(32), 8) for _ in range(4000)]
    assert chisquare([cohorts.count(c) for c in range(8)]).pvalue > 1e-3
    with pytest.raises(ValueError):
        cohort_from_secret(SECRET, 6)


def test_secret_and_cohort_are_validated():
    with pytest.raises(ValueError):
        mechanism(secret=b"short")
    with pytest.raises(TypeError):
        mechanism(secret="a" * 40)
    with pytest.raises(ValueError):
        mechanism(secret=SECRET, cohort=64)
    assert mechanism(secret=SECRET, cohort=5).perturb("x")["cohort"] == 5


def test_default_randomness_is_the_csprng_and_secret_is_fresh():
    a, b = RapporMechanism(rappor_spec()), RapporMechanism(rappor_spec())
    assert isinstance(a.rng, SecureRandom) and a.secret != b.secret and len(a.secret) == 32


def test_mechanism_from_spec_passes_secret_and_cohort():
    mech = mechanism_from_spec(rappor_spec(), rng=DeterministicRandom(1), secret=SECRET, cohort=3)
    assert isinstance(mech, RapporMechanism) and mech.cohort == 3 and mech.secret == SECRET


# -- payloads ----------------------------------------------------------------------------------------------------
def test_payload_shape_and_check():
    for k in (1, 7, 16, 300):
        spec = rappor_spec(k=k, h=1, m=4) if k > 1 else rappor_spec(k=1, h=1, m=4)
        mech = mechanism(spec, secret=SECRET)
        payload = mech.perturb(True if k == 1 else "value")
        assert set(payload) == {"cohort", "bits"} and len(payload["bits"]) == 2 * ((k + 7) // 8)
        mech.check_payload(payload)
        padding = 8 * ((k + 7) // 8) - k
        assert int(payload["bits"], 16) & ((1 << padding) - 1) == 0


@pytest.mark.parametrize(
    "payload, field",
    [
        ("00ff", "payload"),
        ({"cohort": 0}, "payload.bits"),
        ({"bits": "0000"}, "payload.cohort"),
        ({"cohort": 0, "bits": "0000", "id": 1}, "payload.id"),
        ({"cohort": 64, "bits": "0000"}, "payload.cohort"),
        ({"cohort": True, "bits": "0000"}, "payload.cohort"),
        ({"cohort": 0, "bits": "000"}, "payload.bits"),
        ({"cohort": 0, "bits": "zz00"}, "payload.bits"),
        ({"cohort": 0, "bits": 0}, "payload.bits"),
    ],
)
def test_bad_payloads_name_the_field(payload, field):
    with pytest.raises(PayloadError) as info:
        mechanism().check_payload(payload)
    assert info.value.field == field


def test_padding_bits_must_be_zero():
    mech = mechanism(rappor_spec(k=12, h=1))
    mech.check_payload({"cohort": 1, "bits": "fff0"})
    with pytest.raises(PayloadError) as info:
        mech.check_payload({"cohort": 1, "bits": "fff1"})
    assert info.value.field == "payload.bits"


def test_irr_is_drawn_fresh_for_every_report():
    mech = mechanism(rappor_spec(k=64, h=2), secret=SECRET)
    reports = {mech.perturb("same")["bits"] for _ in range(20)}
    assert len(reports) > 15


def test_boolean_and_basic_encodings():
    flag = mechanism(
        load_spec({"name": "flag", "mechanism": "rappor", "rappor": {"k": 1, "m": 2}}), secret=SECRET
    )
    assert flag.bloom_bits(True) == bytearray([1]) and flag.bloom_bits(False) == bytearray([0])
    with pytest.raises(TypeError):
        flag.perturb("yes")
    basic_spec = rappor_spec(k=3, h=1, m=1, encoding="basic", candidates=["red", "green", "blue"])
    basic = mechanism(basic_spec, secret=SECRET)
    assert basic.bloom_bits("blue") == bytearray([0, 0, 1])
    with pytest.raises(ValueNotInDomain) as info:
        basic.perturb("purple")
    assert "purple" not in str(info.value)
    with pytest.raises(SpecError) as spec_info:
        mechanism(rappor_spec(k=4, h=1, m=1, encoding="basic", candidates=["red", "green", "blue"]))
    assert spec_info.value.field == "candidates"
    with pytest.raises(TypeError):
        mechanism().perturb(42)


# -- privacy -----------------------------------------------------------------------------------------------------
def pattern_probabilities(bloom, one_if_one, one_if_zero):
    "P(pattern) for independent bits: P(1 | bit 1) = one_if_one, P(1 | bit 0) = one_if_zero"
    out = {}
    for pattern in itertools.product((0, 1), repeat=len(bloom)):
        probability = 1.0
        for reported, true in zip(pattern, bloom):
            one = one_if_one if true else one_if_zero
            probability *= one if reported else 1 - one
        out[pattern] = probability
    return out


def test_empirical_privacy_of_prr_and_irr():
    "SDK reports match the analytic distributions, whose worst-case ratios are exp(eps_1) and exp(eps_inf)"
    spec = rappor_spec(k=4, h=1, m=1)
    params = spec.rappor
    assert all(x.denominator <= 8 for x in quantized_probabilities(params))  # f/2, p, q are exact here
    rng = DeterministicRandom(11)
    values = ("v0", "v2")  # Bloom bits 0 and 3 in cohort 0: they differ in 2h = 2 bits
    blooms = [bytes(mechanism(spec, secret=SECRET, cohort=0).bloom_bits(v)) for v in values]
    assert blooms[0] != blooms[1] and sum(blooms[0]) == sum(blooms[1]) == 1
    draws = 6000
    report_theory, prr_theory = [], []
    for value, bloom in zip(values, blooms):
        reports, prrs = {}, {}
        for _ in range(draws):  # one fresh device (secret) per report: the PRR is a fresh draw
            device = RapporMechanism(spec, rng=rng, cohort=0)
            prr = tuple(device.permanent_bits(value))
            prrs[prr] = prrs.get(prr, 0) + 1
            bits = int(device.perturb(value)["bits"], 16) >> 4
            pattern = tuple((bits >> (3 - i)) & 1 for i in range(4))
            reports[pattern] = reports.get(pattern, 0) + 1
        for observed, theory in (
            (reports, pattern_probabilities(bloom, params.p11, params.p01)),
            (prrs, pattern_probabilities(bloom, 1 - params.f / 2, params.f / 2)),
        ):
            keys = sorted(theory)
            assert (
                chisquare(
                    [observed.get(key, 0) for key in keys], [draws * theory[key] for key in keys]
                ).pvalue
                > 1e-3
            )
        report_theory.append(pattern_probabilities(bloom, params.p11, params.p01))
        prr_theory.append(pattern_probabilities(bloom, 1 - params.f / 2, params.f / 2))
    for theory, epsilon in ((report_theory, params.epsilon_one), (prr_theory, params.epsilon_inf)):
        worst = max(max(a / b, b / a) for a, b in zip(theory[0].values(), theory[1].values()))
        assert math.isclose(math.log(worst), epsilon, rel_tol=1e-12)


# -- device state ------------------------------------------------------------------------------------------------
def test_device_state_is_created_once_with_private_permissions(tmp_path):
    state_dir = tmp_path / "state"
    first = load_or_create_device_state(state_dir, rng=DeterministicRandom(5))
    again = load_or_create_device_state(state_dir)
    assert first == again and len(first.secret) == 32
    path = state_dir / "rappor_device.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state_dir).st_mode) == 0o700
    assert first.cohort_for(64) == cohort_from_secret(first.secret, 64) == again.cohort_for(64)
    assert first.secret.hex() not in repr(first)
    assert sorted(os.listdir(state_dir)) == ["rappor_device.json"]


def test_a_leftover_temporary_file_cannot_loosen_a_new_secret(tmp_path):
    "A crashed process's temporary file (same pid, loose mode) is replaced, never reused with its mode"
    temporary = tmp_path / f".rappor_device.json.{os.getpid()}.tmp"
    temporary.write_text("stale")
    os.chmod(temporary, 0o644)
    state = load_or_create_device_state(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "rappor_device.json").st_mode) == 0o600
    assert load_or_create_device_state(tmp_path) == state and not temporary.exists()


def test_device_state_tightens_loose_permissions(tmp_path):
    state = load_or_create_device_state(tmp_path)
    path = tmp_path / "rappor_device.json"
    os.chmod(path, 0o644)
    assert load_or_create_device_state(tmp_path) == state
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize(
    "content, field",
    [
        ("not json", "state"),
        ("[]", "state"),
        ('{"version": 2, "secret": "00"}', "state.version"),
        ('{"version": 1, "secret": "zz"}', "state.secret"),
        ('{"version": 1, "secret": "0011"}', "state.secret"),
    ],
)
def test_damaged_device_state_is_an_error_not_a_new_secret(tmp_path, content, field):
    path = tmp_path / "rappor_device.json"
    path.write_text(content)
    with pytest.raises(DeviceStateError) as info:
        load_or_create_device_state(tmp_path)
    assert info.value.field == field
    assert path.read_text() == content


def test_device_state_feeds_the_mechanism(tmp_path):
    state = load_or_create_device_state(tmp_path)
    spec = rappor_spec()
    mech = RapporMechanism(spec, secret=state.secret, cohort=state.cohort_for(spec.rappor.m))
    assert mech.perturb("x")["cohort"] == state.cohort_for(64)
    assert DeviceState.from_dict(state.to_dict()) == state
