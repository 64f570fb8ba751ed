import ast
import json
import math
import pathlib
import subprocess
import sys
from fractions import Fraction

import pytest

from client_sdk import DeterministicRandom, PayloadError, SecureRandom, ValueNotInDomain, load_spec, mechanism_from_spec
from client_sdk.mechanisms.categorical import hadamard_size
from client_sdk.mechanisms.hashing import olh_hash, seed_from_hex
from client_sdk.mechanisms.numeric import GRID, PM_CELLS
from tests.audit import LN_K_EPSILONS, audit, exact_audit_specs, exact_violations, python_parameters

CATEGORICAL = ["grr", "sue", "oue", "olh", "hadamard"]
NUMERIC = ["laplace", "duchi", "piecewise", "hybrid"]
DOMAIN = ["chrome", "firefox", "safari"]


def categorical_spec(mechanism, epsilon=1.0, domain=DOMAIN, **extra):
    return load_spec({"name": "browser", "mechanism": mechanism, "epsilon": epsilon, "domain": list(domain), **extra})


def numeric_spec(mechanism, epsilon=1.0, value_range=(0, 5000)):
    return load_spec({"name": "load_ms", "mechanism": mechanism, "epsilon": epsilon, "range": list(value_range)})


def shape(payload):
    "Everything about a payload except its values: type, lengths, nesting"
    if isinstance(payload, list):
        return ("list", tuple(shape(p) for p in payload))
    if isinstance(payload, str):
        return ("str", len(payload))
    return (type(payload).__name__,)


@pytest.mark.parametrize("mechanism", CATEGORICAL)
def test_categorical_payloads_check_and_have_one_shape(mechanism):
    spec = categorical_spec(mechanism, domain=[f"v{i}" for i in range(37)])
    randomizer = mechanism_from_spec(spec, rng=DeterministicRandom(5))
    shapes = set()
    for value in spec.domain * 5:
        payload = randomizer.perturb(value)
        randomizer.check_payload(payload)
        json.dumps(payload)
        shapes.add(shape(payload) if mechanism not in ("grr", "hadamard") else shape(payload)[0])
    assert len(shapes) == 1


@pytest.mark.parametrize("mechanism", CATEGORICAL)
def test_values_no_campaign_can_report_raise_even_with_a_catch_all(mechanism):
    "None, bools, NaN and containers are mistakes, not values outside the domain: never the catch-all's report"
    randomizer = mechanism_from_spec(categorical_spec(mechanism, domain=[*DOMAIN, "other"], catch_all="other"))
    for value in (None, True, [], {}, b"chrome"):
        with pytest.raises(TypeError):
            randomizer.perturb(value)
    with pytest.raises(ValueError):
        randomizer.perturb(float("nan"))
    randomizer.check_payload(randomizer.perturb("opera"))  # a string outside the domain: the catch-all
    randomizer.check_payload(randomizer.perturb(7))


@pytest.mark.parametrize("mechanism", NUMERIC)
def test_numeric_payloads_check_and_have_one_shape(mechanism):
    spec = numeric_spec(mechanism)
    randomizer = mechanism_from_spec(spec, rng=DeterministicRandom(6))
    kinds = set()
    for value in [0, 1, 2500, 4999.5, 5000] * 20:
        payload = randomizer.perturb(value)
        randomizer.check_payload(payload)
        kinds.add(type(payload).__name__ if not isinstance(payload, list) else ("list", len(payload)))
    assert len(kinds) == 1


@pytest.mark.parametrize(
    "mechanism, payload, field",
    [
        ("grr", 3, "payload"), ("grr", -1, "payload"), ("grr", True, "payload"), ("grr", "1", "payload"),
        ("grr", 1.0, "payload"),
        ("oue", "e", "payload"), ("oue", "zz", "payload"), ("oue", "e1", "payload"), ("oue", 7, "payload"),
        ("sue", "ff", "payload"),
        ("olh", ["00" * 16, 0, 1], "payload"), ("olh", ["00" * 15, 0], "payload[0]"),
        ("olh", ["g" * 32, 0], "payload[0]"), ("olh", ["00" * 16, 99], "payload[1]"),
        ("olh", {"seed": 1}, "payload"),
        ("hadamard", [4, 0], "payload[0]"), ("hadamard", [0, 2], "payload[1]"), ("hadamard", [0], "payload"),
    ],
)
def test_check_payload_rejects_what_the_mechanism_cannot_produce(mechanism, payload, field):
    randomizer = mechanism_from_spec(categorical_spec(mechanism))
    with pytest.raises(PayloadError) as info:
        randomizer.check_payload(payload)
    assert info.value.field == field


@pytest.mark.parametrize(
    "mechanism, payload, field",
    [
        ("laplace", 1.5, "payload"), ("laplace", "3", "payload"), ("laplace", 1 << 70, "payload"),
        ("laplace", -(1 << 40), "payload"),
        ("duchi", 2, "payload"), ("piecewise", PM_CELLS + 1, "payload"), ("piecewise", -1, "payload"),
        ("hybrid", [2, 0], "payload[0]"), ("hybrid", [0, 2], "payload[1]"), ("hybrid", [1, -1], "payload[1]"),
        ("hybrid", 1, "payload"),
    ],
)
def test_numeric_check_payload_rejects(mechanism, payload, field):
    with pytest.raises(PayloadError) as info:
        mechanism_from_spec(numeric_spec(mechanism)).check_payload(payload)
    assert info.value.field == field


def test_value_outside_domain_raises_without_repeating_the_value():
    randomizer = mechanism_from_spec(categorical_spec("oue"))
    with pytest.raises(ValueNotInDomain) as info:
        randomizer.perturb("secret-browser-name")
    assert "secret-browser-name" not in str(info.value)
    with pytest.raises(ValueNotInDomain):
        randomizer.perturb(0)  # the integer 0 is not the string "chrome"


def test_catch_all_absorbs_other_values():
    spec = categorical_spec("grr", domain=["chrome", "firefox", "other"], catch_all="other")
    first = mechanism_from_spec(spec, rng=DeterministicRandom(9))
    second = mechanism_from_spec(spec, rng=DeterministicRandom(9))
    assert [first.perturb("lynx") for _ in range(50)] == [second.perturb("other") for _ in range(50)]


@pytest.mark.parametrize("mechanism", NUMERIC)
def test_numbers_are_clamped_at_both_ends(mechanism):
    spec = numeric_spec(mechanism, value_range=(10, 20))
    for outside, edge in [(-1e9, 10), (9.999, 10), (20.5, 20), (1e300, 20)]:
        a = mechanism_from_spec(spec, rng=DeterministicRandom(11))
        b = mechanism_from_spec(spec, rng=DeterministicRandom(11))
        assert [a.perturb(outside) for _ in range(30)] == [b.perturb(edge) for _ in range(30)]


@pytest.mark.parametrize("bad", [float("nan"), "3", None, True])
def test_numbers_must_be_numbers(bad):
    with pytest.raises(TypeError):
        mechanism_from_spec(numeric_spec("duchi")).perturb(bad)


def test_default_randomness_is_the_os_csprng():
    for mechanism in CATEGORICAL:
        assert isinstance(mechanism_from_spec(categorical_spec(mechanism)).rng, SecureRandom)
    for mechanism in NUMERIC:
        assert isinstance(mechanism_from_spec(numeric_spec(mechanism)).rng, SecureRandom)


def test_device_path_imports_neither_numpy_nor_random():
    root = pathlib.Path(__file__).resolve().parents[2] / "client_sdk"
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and node.level == 0}
        assert "numpy" not in imported, path
        if path.name != "randomness.py":  # DeterministicRandom (tests only) wraps random.Random there
            assert "random" not in imported, path
    code = ("import sys; sys.modules['numpy'] = None; import client_sdk; "
            "s = {'name': 'x', 'mechanism': 'olh', 'epsilon': 1, 'domain': ['a', 'b', 'c']}; "
            "print(client_sdk.mechanism_from_spec(s).perturb('a'))")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_olh_hash_is_the_documented_family():
    a, b = seed_from_hex("0123456789abcdef" + "fedcba9876543210")
    assert a == 0x0123456789ABCDEF and b == 0xFEDCBA9876543210
    assert olh_hash(a, b, 5, 4) == ((((a * 5 + b) % 2**64) >> 32) * 4) >> 32


# -- empirical privacy audit ------------------------------------------------------------------------------------

def categorical_outcome(spec, payload):
    "A payload, or for OLH the post-processed support pattern (the seed itself is independent of the input)"
    if spec.mechanism == "olh":
        g = mechanism_from_spec(spec).g
        a, b = seed_from_hex(payload[0])
        return tuple(olh_hash(a, b, v, g) == payload[1] for v in range(spec.domain_size))
    return payload if not isinstance(payload, list) else tuple(payload)


def categorical_samples(mechanism, epsilon, audit_epsilon, draws):
    spec = categorical_spec(mechanism, epsilon)
    randomizer = mechanism_from_spec(spec, rng=DeterministicRandom(12))
    return {value: [categorical_outcome(spec, randomizer.perturb(value)) for _ in range(draws)]
            for value in spec.domain}


def numeric_outcome(spec, payload):
    "Binned outputs on the [-1, 1] scale: binning is post-processing, so the e^eps bound holds for bins too"
    if spec.mechanism == "laplace":
        z = payload / GRID
        return int(min(max(math.floor(z), -4), 4))
    if spec.mechanism == "duchi":
        return payload
    if spec.mechanism == "piecewise":
        return payload * 12 // (PM_CELLS + 1)
    branch, code = payload
    return (branch, code * 12 // (PM_CELLS + 1) if branch else code)


def numeric_samples(mechanism, epsilon, draws):
    spec = numeric_spec(mechanism, epsilon, (0, 1))
    randomizer = mechanism_from_spec(spec, rng=DeterministicRandom(13))
    return {value: [numeric_outcome(spec, randomizer.perturb(value)) for _ in range(draws)]
            for value in (0.0, 0.5, 1.0)}


@pytest.mark.parametrize("mechanism", CATEGORICAL)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_privacy_audit_categorical(mechanism, epsilon):
    assert audit(categorical_samples(mechanism, epsilon, epsilon, 12_000), epsilon) == []


@pytest.mark.parametrize("mechanism", NUMERIC)
@pytest.mark.parametrize("epsilon", [1.0, 3.0])
def test_privacy_audit_numeric(mechanism, epsilon):
    assert audit(numeric_samples(mechanism, epsilon, 12_000), epsilon) == []


@pytest.mark.parametrize("mechanism", ["grr", "oue", "hadamard"])
def test_audit_catches_a_mechanism_that_spends_twice_its_epsilon(mechanism):
    assert audit(categorical_samples(mechanism, 2.0, 1.0, 12_000), 1.0) != []


@pytest.mark.parametrize("mechanism", ["duchi", "piecewise", "laplace"])
def test_audit_catches_a_numeric_mechanism_that_spends_twice_its_epsilon(mechanism):
    assert audit(numeric_samples(mechanism, 2.0, 12_000), 1.0) != []


# -- exact privacy audit: the quantized parameters' worst-case ratio, as a rational, against a bound of e^eps --
@pytest.mark.filterwarnings("ignore::client_sdk.errors.PrivacyWarning")  # the grid reaches epsilon 20
def test_exact_audit_every_mechanism_at_epsilon_ln_k():
    "At eps = float(ln k), k = 2..65, and on a grid of epsilons: every worst-case ratio is at most e^eps, exactly"
    violations = []
    for data in exact_audit_specs(LN_K_EPSILONS + [i / 20 for i in range(1, 401)]):
        randomizer = mechanism_from_spec(load_spec(data), rng=DeterministicRandom(1))
        found = exact_violations(randomizer.spec.mechanism, python_parameters(randomizer), randomizer.spec.epsilon)
        violations += [f"{data}: {v}" for v in found]
    assert violations == []


def test_exact_audit_catches_a_ratio_one_ulp_above_e_eps():
    "The audit's bound is tight enough to see a ratio 2**-52 above e^eps"
    epsilon = math.log(7)
    keep = Fraction(7 * (1 + Fraction(1, 2**52)), 8 + Fraction(7, 2**52))  # keep / (1 - keep) = 7 (1 + 2**-52)
    assert exact_violations("hadamard", {"keep": keep}, epsilon) != []
    assert exact_violations("hadamard", {"keep": Fraction(7, 8) * (1 - Fraction(1, 2**40))}, epsilon) == []


def test_bounded_laplace_has_no_output_only_one_input_can_produce():
    "Every integer has positive probability under every input: the discrete Laplace noise has full support"
    spec = numeric_spec("laplace", 1.0, (0, 1))
    randomizer = mechanism_from_spec(spec, rng=DeterministicRandom(14))
    low = {randomizer.perturb(0.0) for _ in range(3000)}
    high = {randomizer.perturb(1.0) for _ in range(3000)}
    assert all(isinstance(y, int) for y in low | high)
    scale = float(randomizer.scale_steps)
    for y in low | high:  # exact log-ratio of the probabilities of y under t = -1 and t = +1
        log_ratio = (abs(y - GRID) - abs(y + GRID)) / scale
        assert abs(log_ratio) <= spec.epsilon + 1e-12
    # both inputs reach far into each other's side
    assert min(high) < -GRID < GRID < max(low)


def test_hadamard_size():
    assert [hadamard_size(d) for d in (2, 3, 4, 5, 1000, 1024, 1025)] == [2, 4, 4, 8, 1024, 1024, 2048]
