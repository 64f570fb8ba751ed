import json
import warnings

import pytest

from client_sdk import PrivacyWarning, SpecError, load_spec
from client_sdk.mechanisms import mechanism_from_spec
from client_sdk.spec import MAX_EPSILON, MIN_EPSILON, NAME_PATTERN, Spec, resolve_auto


def categorical(**overrides):
    spec = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "other"]}
    spec.update(overrides)
    return spec


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": -1}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": "1"}, "epsilon"),
        ({"epsilon": True}, "epsilon"),
        ({"domain": []}, "domain"),
        ({"domain": ["a", "a"]}, "domain"),
        ({"domain": ["a", 1.5]}, "domain"),
        ({"domain": "abc"}, "domain"),
        ({"mechanism": "nope"}, "mechanism"),
        ({"name": ""}, "name"),
        ({"name": "has space"}, "name"),
        ({"catch_all": "edge"}, "catch_all"),
        ({"range": [0, 1]}, "range"),
        ({"colour": "red"}, "colour"),
        ({"delta": 2}, "delta"),
    ],
)
def test_invalid_categorical_specs_name_the_field(overrides, field):
    with pytest.raises(SpecError) as info:
        load_spec(categorical(**overrides))
    assert info.value.field == field
    assert field in str(info.value)


@pytest.mark.parametrize(
    "value_range",
    [[1, 1], [2, 1], [0, float("inf")], [float("nan"), 1], [0], "0-1", [0, "1"]],
)
def test_invalid_ranges(value_range):
    with pytest.raises(SpecError) as info:
        load_spec({"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": value_range})
    assert info.value.field == "range"


def test_numeric_spec_rejects_domain():
    with pytest.raises(SpecError) as info:
        load_spec({"name": "x", "mechanism": "duchi", "epsilon": 1, "range": [0, 1], "domain": ["a", "b"]})
    assert info.value.field == "domain"


def test_large_epsilon_warns():
    with pytest.warns(PrivacyWarning):
        load_spec(categorical(epsilon=11))


def test_auto_resolves_to_lowest_variance_oracle():
    # GRR wins exactly when d < 3e^eps + 2 (about 10 at eps=1, 24 at eps=2, 166 at eps=4)
    assert load_spec(categorical(mechanism="auto")).mechanism == "grr"
    assert load_spec(categorical(mechanism="auto", domain=list(range(10)))).mechanism == "grr"
    assert load_spec(categorical(mechanism="auto", domain=list(range(11)))).mechanism == "oue"
    assert resolve_auto(165, 4.0) == "grr" and resolve_auto(167, 4.0) == "oue"
    assert resolve_auto(25, 2.0) == "oue" and resolve_auto(24, 2.0) == "grr"
    assert resolve_auto(10_000, 1.0) == "olh"
    resolved = load_spec(categorical(mechanism="auto", domain=list(range(100)))).to_dict()
    assert resolved["mechanism"] == "oue"


def test_fingerprint_is_stable_and_sensitive():
    a = load_spec(categorical())
    b = load_spec(json.dumps(categorical(description="same parameters", version=3, delta=1e-6)))
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != load_spec(categorical(epsilon=1.5)).fingerprint
    assert a.fingerprint != load_spec(categorical(domain=["chrome", "firefox", "safari", "edge"])).fingerprint
    assert a.fingerprint != load_spec(categorical(mechanism="grr")).fingerprint
    assert a.fingerprint != load_spec(categorical(name="browser2")).fingerprint


def test_round_trip_through_json():
    for raw in (categorical(catch_all="other", delta=1e-6),
                {"name": "load_ms", "mechanism": "hybrid", "epsilon": 2.0, "range": [0, 5000]},
                {"name": "homepage", "mechanism": "rappor", "rappor": {"k": 128, "h": 2, "m": 64}}):
        spec = load_spec(raw)
        again = load_spec(json.loads(spec.to_json()))
        assert again == spec and again.fingerprint == spec.fingerprint


def test_no_warning_for_ordinary_specs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_spec(categorical())


def test_served_spec_with_altered_parameters_is_refused():
    served = load_spec(categorical()).to_dict()
    assert load_spec(served).fingerprint == served["fingerprint"]
    served["epsilon"] = 5.0
    with pytest.raises(SpecError) as info:
        load_spec(served)
    assert info.value.field == "fingerprint"


def test_basic_rappor_candidates_are_part_of_the_fingerprint():
    base = {"name": "setting", "mechanism": "rappor",
            "rappor": {"k": 3, "m": 1, "encoding": "basic"}, "candidates": ["a", "b", "c"]}
    reordered = {**base, "candidates": ["c", "b", "a"]}
    assert load_spec(base).fingerprint != load_spec(reordered).fingerprint
    bloom = {"name": "home", "mechanism": "rappor", "rappor": {"k": 16}}
    # Bloom RAPPOR decodes against its candidates: a changed list is a new version (issue 8, item 4)
    fingerprints = {load_spec(bloom).fingerprint, load_spec({**bloom, "candidates": ["x"]}).fingerprint,
                    load_spec({**bloom, "candidates": ["x", "y"]}).fingerprint}
    assert len(fingerprints) == 3


# -- issue 8, items 3 and 4: bounded epsilon, ranges and names ------------------------------------------------------
ORACLE_SIZES = [(m, d) for m in ("grr", "sue", "oue", "olh", "hadamard") for d in (2, 4096, 1 << 20)
                if m not in ("sue", "oue") or d <= 4096]  # d-bit reports: unary encodings up to 4096


@pytest.mark.parametrize("epsilon", [MIN_EPSILON, MAX_EPSILON])
@pytest.mark.parametrize("mechanism, d", ORACLE_SIZES)
def test_every_oracle_stays_random_at_the_epsilon_bounds(epsilon, mechanism, d):
    "0 < q* < p* < 1 after quantization, so no report is deterministic and every variance is finite"
    spec = Spec(name="x", mechanism=mechanism, epsilon=epsilon, domain=tuple(range(d)))
    oracle = mechanism_from_spec(spec)
    assert 0 < oracle.q_star < oracle.p_star < 1
    assert 0 < oracle.variance_factor < float("inf")
    if mechanism == "olh":
        assert oracle.g < 2**32  # products of two hash values below g fit uint64 (OLH overflows from eps 22.2)
    oracle.check_payload(oracle.perturb(d - 1))


@pytest.mark.parametrize("epsilon", [MIN_EPSILON, MAX_EPSILON])
@pytest.mark.parametrize("mechanism", ["laplace", "duchi", "piecewise", "hybrid"])
def test_every_numeric_mechanism_is_finite_at_the_epsilon_bounds(epsilon, mechanism):
    numeric = mechanism_from_spec(Spec(name="x", mechanism=mechanism, epsilon=epsilon, range=(-1e15, 1e15)))
    assert 0 < numeric.worst_case_variance() < float("inf")
    for value in (-1e15, 0.0, 1e15):
        numeric.check_payload(numeric.perturb(value))


@pytest.mark.parametrize("epsilon", [1e-320, 0.0099, 20.0001, 36.75, 800, 1e308, 10**400])
def test_epsilon_outside_the_documented_range_is_refused(epsilon):
    with pytest.raises(SpecError) as info:
        load_spec(categorical(epsilon=epsilon))
    assert info.value.field == "epsilon" and str(MAX_EPSILON) in info.value.reason


@pytest.mark.parametrize("value_range", [[-1e308, 1e308], [0, 10**400], [0, 1e-12], [-2e15, 0]])
def test_ranges_must_be_finite_and_bounded(value_range):
    with pytest.raises(SpecError) as info:
        load_spec({"name": "n", "mechanism": "laplace", "epsilon": 1, "range": value_range})
    assert info.value.field == "range"


@pytest.mark.parametrize("name", ["g\n", "g\r", "\ng", "g\x00", "g" * 65, "g\u0660"])
def test_names_are_matched_in_full(name):
    assert NAME_PATTERN.fullmatch(name) is None
    with pytest.raises(SpecError) as info:
        load_spec(categorical(name=name))
    assert info.value.field == "name"


@pytest.mark.parametrize("domain", [["a", "\ud800"], ["a", 2**63], ["a", -(2**63) - 1]])
def test_domain_entries_must_be_storable(domain):
    with pytest.raises(SpecError) as info:
        load_spec(categorical(domain=domain))
    assert info.value.field == "domain"


NUMERIC = {"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 5000]}


def test_a_numeric_unit_is_kept_and_fingerprinted_and_its_absence_changes_nothing():
    "issue 22 §4: an optional unit; a spec without one keeps its fingerprint (pinned from before the field existed)"
    assert load_spec(NUMERIC).fingerprint == "3be1edd387a08e35fdd5ecdf26d86c43"
    assert load_spec({**NUMERIC, "unit": None}).fingerprint == "3be1edd387a08e35fdd5ecdf26d86c43"
    spec = load_spec({**NUMERIC, "unit": "ms"})
    assert spec.unit == "ms" and spec.to_dict()["unit"] == "ms"
    assert spec.fingerprint != load_spec(NUMERIC).fingerprint  # a changed unit changes what a value means
    assert spec.fingerprint != load_spec({**NUMERIC, "unit": "s"}).fingerprint
    again = load_spec(json.loads(spec.to_json()))
    assert again == spec and again.fingerprint == spec.fingerprint
    for unit in ("\u00b0C per 1000 rows", "\U0001d52a" * 16, "x"):  # 16 code points at most, not UTF-16 units
        assert load_spec({**NUMERIC, "unit": unit}).unit == unit


@pytest.mark.parametrize("unit", ["", "x" * 17, "m\ts", "m\ns", "\x7f", "m\u0085s", "\ud800", 7, ["ms"], True])
def test_an_invalid_unit_is_refused_by_name(unit):
    with pytest.raises(SpecError) as info:
        load_spec({**NUMERIC, "unit": unit})
    assert info.value.field == "unit" and "unknown" not in str(info.value)  # a known field, refused on its value


@pytest.mark.parametrize("spec", [
    categorical(unit="ms"),
    categorical(unit=None),
    {"name": "r", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4}, "unit": "ms"},
    {"name": "d", "trust": "distributed", "prio3": "sum", "max_measurement": 10, "epsilon": 1.0, "noise": "laplace",
     "unit": "ms"},
])
def test_a_unit_is_only_for_numeric_campaigns(spec):
    "As 'range': a categorical, RAPPOR or distributed campaign refuses it, naming the field"
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    assert info.value.field == "unit" and "unknown" not in str(info.value)


@pytest.mark.parametrize(("epsilon", "side"), [(0.001, "below 0.01"), (25.0, "above 20.0"), (-1, "below 0.01")])
def test_an_epsilon_out_of_range_names_the_range_and_the_side_it_is_on(epsilon, side):
    with pytest.raises(SpecError) as raised:
        load_spec({"name": "b", "mechanism": "grr", "epsilon": epsilon, "domain": ["a", "b"]})
    assert raised.value.field == "epsilon"
    assert "[0.01, 20.0]" in str(raised.value) and side in str(raised.value)
    other = "above" if side.startswith("below") else "below"
    assert other not in str(raised.value)
