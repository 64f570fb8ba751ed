"""Field arithmetic and Lagrange-basis polynomials against naive O(n^2) definitions."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from client_sdk.vdaf.field import (
    DIRECT_DOUBLING,
    Field64,
    Field128,
    Field255,
    FieldVec,
    _extend_values_generic,
    double_evaluations,
    eval_weights,
    extend_values_to_power_of_2,
    nested_eval_weights,
    poly_eval_lagrange,
    poly_eval_monomial,
)

FIELDS = [Field64, Field128]


def _naive_eval(field, coeffs, x):
    return sum(c * pow(x, i, field.MODULUS) for i, c in enumerate(coeffs)) % field.MODULUS


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("n", [1, 2, 8, 64])
def test_ntt_matches_naive_evaluation(field, n):
    rng = random.Random(n)
    coeffs = [rng.randrange(field.MODULUS) for _ in range(n)]
    w = field.nth_root(n)
    s = field.nth_root(2 * n)
    assert field.ntt(coeffs, n) == [_naive_eval(field, coeffs, pow(w, i, field.MODULUS)) for i in range(n)]
    assert field.ntt(coeffs, n, set_s=True) == [_naive_eval(field, coeffs, s * pow(w, i, field.MODULUS))
                                                for i in range(n)]
    assert field.inv_ntt(field.ntt(coeffs, n), n) == coeffs


@pytest.mark.parametrize("field", FIELDS)
def test_generator_order_is_a_power_of_two(field):
    assert pow(field.GENERATOR, field.GEN_ORDER, field.MODULUS) == 1
    assert pow(field.GENERATOR, field.GEN_ORDER // 2, field.MODULUS) != 1


@pytest.mark.parametrize("field", FIELDS)
def test_lagrange_helpers_agree_with_the_coefficient_form(field):
    rng = random.Random(7)
    n = 16
    coeffs = [rng.randrange(field.MODULUS) for _ in range(n - 1)] + [0]  # degree < n - 1
    values = field.ntt(coeffs, n)
    x = rng.randrange(field.MODULUS)
    assert poly_eval_lagrange(field, values, x) == _naive_eval(field, coeffs, x)
    assert double_evaluations(field, values) == field.ntt(coeffs, 2 * n)
    assert extend_values_to_power_of_2(field, values[:n - 1], n) == values
    assert _extend_values_generic(field, values[:n - 1], n) == values
    low = [rng.randrange(field.MODULUS) for _ in range(n - 3)] + [0, 0, 0]
    assert extend_values_to_power_of_2(field, field.ntt(low, n)[:n - 3], n) == field.ntt(low, n)
    assert poly_eval_monomial(field.MODULUS, coeffs, x) == _naive_eval(field, coeffs, x)


@pytest.mark.parametrize("field", FIELDS)
def test_decode_rejects_overflow_and_ragged_input(field):
    assert field.decode_vec(field.encode_vec([0, 1, field.MODULUS - 1])) == [0, 1, field.MODULUS - 1]
    with pytest.raises(ValueError, match="modulus"):
        field.decode_vec(field.MODULUS.to_bytes(field.ENCODED_SIZE, "little"))
    with pytest.raises(ValueError, match="multiple"):
        field.decode_vec(bytes(field.ENCODED_SIZE + 1))


def test_importing_the_sdk_does_not_load_prio3_or_pycryptodome():
    code = "import sys, client_sdk; assert 'client_sdk.vdaf' not in sys.modules; assert 'Crypto' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_pycryptodome_names_the_extra():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'Crypto' or name.startswith('Crypto.'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        "    import client_sdk.vdaf\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.startswith("MissingDependency") and "pip install './sdk[distributed]'" in out


class _Lossy(Field64):
    "A 'field' whose modulus rejects a quarter of all 64-bit samples: exercises rejection sampling"

    MODULUS = 3 * 2**62


def test_one_shot_expansion_equals_the_streaming_xof_even_with_rejections():
    from client_sdk.vdaf.xof import XofFixedKeyAes128, XofTurboShake128

    for xof, seed in ((XofTurboShake128, bytes(range(32))), (XofFixedKeyAes128, bytes(range(16)))):
        streamed = xof(seed, b"dst", b"binder").next_vec(_Lossy, 50)
        assert xof.expand_into_vec(_Lossy, seed, b"dst", b"binder", 50) == streamed
        assert all(x < _Lossy.MODULUS for x in streamed)
        assert xof.derive_seed(seed, b"dst", b"binder") == xof(seed, b"dst", b"binder").next(xof.SEED_SIZE)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("n", [1, 2, 8, DIRECT_DOUBLING, 2 * DIRECT_DOUBLING])
def test_double_evaluations_match_the_ntt_on_both_sides_of_the_direct_size(field, n):
    "Small sizes take a cached n x n product, larger ones two NTTs: both are the polynomial's 2n evaluations"
    rng = random.Random(n)
    coeffs = [rng.randrange(field.MODULUS) for _ in range(n)]
    assert double_evaluations(field, field.ntt(coeffs, n)) == field.ntt(coeffs, 2 * n)


@pytest.mark.parametrize("field", FIELDS)
def test_nested_weights_equal_the_weights_of_each_set_of_roots(field):
    "One inversion for the n-th and the m-th roots gives what eval_weights gives for each, for every m dividing n"
    rng = random.Random(11)
    for n in (2, 4, 16):
        x = rng.randrange(field.MODULUS)
        for m in (1, 2, n // 2, n):
            if m and n % m == 0:
                assert nested_eval_weights(field, n, m, x) == (eval_weights(field, n, x), eval_weights(field, m, x))


@pytest.mark.parametrize("field", [Field64, Field128, Field255])
def test_a_field_vec_reads_what_the_list_holds(field):
    "Indexing, slices (any step, empty, negative), iteration and equality, as the decoded list's"
    rng = random.Random(5)
    values = [rng.randrange(field.MODULUS) for _ in range(9)]
    vec = FieldVec(field, field.encode_vec(values))
    assert len(vec) == 9 and list(vec) == values and vec == values and values == vec
    assert [vec[i] for i in range(-9, 9)] == [values[i] for i in range(-9, 9)]
    for cut in (slice(2, 4), slice(0, 9), slice(5, 2), slice(-3, None), slice(1, 8, 3), slice(None, None, -1)):
        assert vec[cut] == values[cut]
    with pytest.raises(IndexError):
        vec[9]
    assert vec != values[:-1] and vec.encoded == field.encode_vec(values)


@pytest.mark.parametrize("field", [Field64, Field255])
def test_check_vec_rejects_an_element_out_of_range_anywhere_and_only_that(field):
    "The byte shortcuts of Field64 and Field255 give decode_vec's answer: all-ones bytes in range pass"
    size = field.ENCODED_SIZE
    below = [field.MODULUS - 1, (1 << (8 * size - 8)) - 1, 0xFFFFFFFF << 24 if size == 8 else (1 << 254) - 1]
    above = [field.MODULUS, (1 << (8 * size)) - 1]
    for position in range(4):
        for bad in above:
            values = below + [0]
            values.insert(position, bad)
            with pytest.raises(ValueError, match="modulus"):
                field.check_vec(b"".join(v.to_bytes(size, "little") for v in values))
        field.check_vec(field.encode_vec(below + [0]))
    with pytest.raises(ValueError, match="multiple"):
        field.check_vec(bytes(size + 1))
