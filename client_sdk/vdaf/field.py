"""The prime fields of draft-irtf-cfrg-vdaf (NTT-friendly Field64 and Field128; Field255 for Poplar1's leaves) and
polynomial helpers.

Field elements are plain Python ``int`` values in ``[0, MODULUS)`` and vectors are ``list[int]``: allocating an
object per element (as the draft's reference code does) costs more than the arithmetic itself.  Polynomials are
kept in the Lagrange basis over the first ``n`` powers of the principal ``n``-th root of unity (draft section
"Polynomial Representation"); conversion goes through a radix-2 NTT, so nothing is ever interpolated in O(n^2).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from functools import lru_cache
from operator import mul
from typing import TypeVar, overload

Item = TypeVar("Item")


def next_power_of_2(n: int) -> int:
    "Smallest power of two that is >= n (n >= 1)"
    return 1 << (n - 1).bit_length()


def assert_power_of_2(n: int) -> int:
    "log2(n), raising ValueError unless n is a positive power of two"
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


@lru_cache(maxsize=256)
def u64_struct(length: int) -> struct.Struct:
    "``length`` little-endian uint64s (compiled once per length: the format string is most of a short unpack)"
    return struct.Struct(f"<{length}Q")


class Field:
    "A prime field with a multiplicative subgroup of order 2**k (class-level API; elements are ints)"

    MODULUS: int
    ENCODED_SIZE: int
    GEN_ORDER: int
    GENERATOR: int

    @classmethod
    def encode_vec(cls, vec: list[int]) -> bytes:
        "Little-endian, ENCODED_SIZE bytes per element (elements must already be reduced)"
        if cls.ENCODED_SIZE == 8:
            return u64_struct(len(vec)).pack(*vec)
        size = cls.ENCODED_SIZE
        return b"".join([x.to_bytes(size, "little") for x in vec])

    @classmethod
    def unpack_vec(cls, encoded: bytes) -> list[int]:
        "Little-endian integers, ENCODED_SIZE bytes each, unchecked (len(encoded) a multiple of ENCODED_SIZE)"
        if cls.ENCODED_SIZE == 8:
            return list(u64_struct(len(encoded) // 8).unpack(encoded))
        if cls.ENCODED_SIZE == 16:
            words = u64_struct(len(encoded) // 8).unpack(encoded)
            return [lo | hi << 64 for lo, hi in zip(words[0::2], words[1::2])]
        size = cls.ENCODED_SIZE
        return [int.from_bytes(encoded[i:i + size], "little") for i in range(0, len(encoded), size)]

    @classmethod
    def decode_vec(cls, encoded: bytes) -> list[int]:
        "Parse little-endian elements; ValueError on a ragged length or a value >= MODULUS"
        size = cls.ENCODED_SIZE
        if len(encoded) % size:
            raise ValueError("input length must be a multiple of the size of an encoded field element")
        vec = cls.unpack_vec(encoded)
        modulus = cls.MODULUS
        if vec and max(vec) >= modulus:
            raise ValueError("modulus overflow")
        return vec

    @classmethod
    def check_vec(cls, encoded: bytes) -> None:
        "ValueError unless ``encoded`` is a vector of elements (``decode_vec``'s checks, without keeping the values)"
        cls.decode_vec(encoded)

    @classmethod
    def inv(cls, x: int) -> int:
        return pow(x, -1, cls.MODULUS)

    @classmethod
    def nth_root(cls, n: int) -> int:
        "The principal n-th root of unity GENERATOR**(GEN_ORDER // n), n a power of two"
        assert_power_of_2(n)
        if n > cls.GEN_ORDER:
            raise ValueError("n exceeds the order of the NTT subgroup")
        return pow(cls.GENERATOR, cls.GEN_ORDER // n, cls.MODULUS)

    @classmethod
    def nth_root_powers(cls, n: int) -> list[int]:
        return _root_powers(cls, n)

    @classmethod
    def ntt(cls, coeffs: list[int], n: int, set_s: bool = False) -> list[int]:
        """Evaluations [p(Wn**i)] (or [p(s * Wn**i)] with s = W2n when set_s) of p given by its coefficients.

        Coefficients beyond n are folded in (p is reduced modulo x**n - 1 or x**n + 1), which never happens here.
        """
        p = cls.MODULUS
        a = [0] * n
        if set_s:
            s_powers = _root_powers(cls, 2 * n)
            for i, c in enumerate(coeffs):
                a[i % n] = (a[i % n] + c * (s_powers[i % (2 * n)])) % p
        else:
            for i, c in enumerate(coeffs):
                a[i % n] = (a[i % n] + c) % p
        return _ntt_in_place(cls, a)

    @classmethod
    def inv_ntt(cls, values: list[int], n: int) -> list[int]:
        "Coefficients of the polynomial of degree < n with values [p(Wn**i)]"
        p = cls.MODULUS
        out = _ntt_in_place(cls, list(values), inverse=True)
        n_inv = pow(n, -1, p)
        return [x * n_inv % p for x in out]


class Field64(Field):
    "GF(2**32 * 4294967295 + 1), 8-byte elements"

    MODULUS = 2**32 * 4294967295 + 1
    ENCODED_SIZE = 8
    GEN_ORDER = 2**32
    GENERATOR = pow(7, 4294967295, MODULUS)

    @classmethod
    def check_vec(cls, encoded: bytes) -> None:
        """A value >= MODULUS = 2**64 - 2**32 + 1 has its four high bytes all ones: with no element's last byte 0xff
        (most vectors), or no four 0xff bytes in a row anywhere, every value is in range and none needs parsing"""
        if len(encoded) % 8 or (b"\xff" in encoded[7::8] and b"\xff\xff\xff\xff" in encoded):
            cls.decode_vec(encoded)


class Field128(Field):
    "GF(2**66 * 4611686018427387897 + 1), 16-byte elements"

    MODULUS = 2**66 * 4611686018427387897 + 1
    ENCODED_SIZE = 16
    GEN_ORDER = 2**66
    GENERATOR = pow(7, 4611686018427387897, MODULUS)


class Field255(Field):
    "GF(2**255 - 19), 32-byte elements: Poplar1's leaf field (no NTT subgroup, so no polynomial operations)"

    MODULUS = 2**255 - 19
    ENCODED_SIZE = 32

    @classmethod
    def check_vec(cls, encoded: bytes) -> None:
        """A value >= MODULUS = 2**255 - 19 has its last (most significant) byte 0x7f or above: with every element's
        below (almost every vector), every value is in range and none needs parsing"""
        if len(encoded) % 32 or (encoded and max(encoded[31::32]) >= 0x7F):
            cls.decode_vec(encoded)


class EncodedSequence(Sequence[Item]):
    """A sequence kept as the encoding it was decoded from, its items built when read (``FieldVec``, the IDPF's
    ``PublicShare``).  Equal to any sequence of the same items, so unhashable as lists are; two of one type are
    equal when their ``_identity()`` (the encoding and what reads it) is."""

    __slots__ = ("_encoded",)
    _encoded: bytes

    def _identity(self) -> object:
        return self._encoded

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._identity() == other._identity()  # type: ignore[attr-defined]
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(mine == theirs for mine, theirs in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

    @property
    def encoded(self) -> bytes:
        "The encoding this sequence was decoded from"
        return self._encoded


class FieldVec(EncodedSequence[int]):
    """A vector of ``field`` elements kept as its encoding, already range-checked (``Field.check_vec``), each
    element parsed when read: a slice parses only its own.  For a long vector of which a caller reads a few (a
    Poplar1 input share's correlations: two per level, one level per aggregation).  Equal to any sequence of the
    same ints."""

    __slots__ = ("_field", "_length")

    def __init__(self, field: type[Field], encoded: bytes) -> None:
        self._field, self._encoded = field, encoded
        self._length = len(encoded) // field.ENCODED_SIZE

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        size = self._field.ENCODED_SIZE
        if type(index) is slice:
            start, stop, step = index.indices(self._length)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            if stop <= start:
                return []
            if size == 8:
                return list(u64_struct(stop - start).unpack_from(self._encoded, 8 * start))
            return self._field.unpack_vec(self._encoded[size * start:size * stop])
        at = range(self._length)[index] * size  # type: ignore[index]  # IndexError out of range
        return int.from_bytes(self._encoded[at:at + size], "little")

    def __iter__(self) -> Iterator[int]:
        return iter(self._field.unpack_vec(self._encoded))

    def _identity(self) -> object:
        return self._field, self._encoded

    @property
    def field(self) -> type[Field]:
        return self._field


def _root_powers(field: type[Field], n: int) -> list[int]:
    "[Wn**i for i < n] (cached: the same tables serve every report)"
    return _root_powers_cached(field.MODULUS, field.GENERATOR, field.GEN_ORDER, n)


@lru_cache(maxsize=256)
def _root_powers_cached(p: int, generator: int, gen_order: int, n: int) -> list[int]:
    assert_power_of_2(n)
    if n > gen_order:
        raise ValueError("n exceeds the order of the NTT subgroup")
    w = pow(generator, gen_order // n, p)
    powers = [1] * n
    for i in range(1, n):
        powers[i] = powers[i - 1] * w % p
    return powers


@lru_cache(maxsize=256)
def _bit_reversal(n: int) -> list[int]:
    bits = n.bit_length() - 1
    return [int(format(i, f"0{bits}b")[::-1], 2) if bits else 0 for i in range(n)]


def _ntt_in_place(field: type[Field], a: list[int], inverse: bool = False) -> list[int]:
    "Iterative radix-2 Cooley-Tukey NTT over the n-th roots of unity (unscaled when inverse); natural order out"
    n = len(a)
    rev, butterflies = _ntt_plan(field.MODULUS, field.GENERATOR, field.GEN_ORDER, n, inverse)
    p = field.MODULUS
    a = [a[r] for r in rev]
    for i, k, twiddle in butterflies:
        u = a[i]
        v = a[k] * twiddle % p
        a[i] = (u + v) % p
        a[k] = (u - v) % p
    return a


@lru_cache(maxsize=256)
def _ntt_plan(p: int, generator: int, gen_order: int, n: int,
              inverse: bool) -> tuple[list[int], tuple[tuple[int, int, int], ...]]:
    """The bit-reversal permutation and every butterfly (i, k, twiddle), stage after stage, of an n-point NTT:
    computed once per size, so a small NTT (Prio3's are 8 points) costs its arithmetic and no loop set-up"""
    assert_power_of_2(n)
    powers = _root_powers_cached(p, generator, gen_order, n)
    butterflies = []
    length = 2
    while length <= n:
        half = length >> 1
        step = n // length
        if inverse:
            twiddles = [powers[(n - j * step) % n] for j in range(half)]
        else:
            twiddles = [powers[j * step] for j in range(half)]
        for start in range(0, n, length):
            for j in range(half):
                butterflies.append((start + j, start + j + half, twiddles[j]))
        length <<= 1
    return _bit_reversal(n), tuple(butterflies)


@lru_cache(maxsize=256)
def _doubling_multipliers(p: int, generator: int, gen_order: int, n: int) -> list[int]:
    "n**-1 * s**i for i < n, s the principal 2n-th root: inverse NTT scaling and the coset shift in one product"
    s_powers = _root_powers_cached(p, generator, gen_order, 2 * n)
    n_inv = pow(n, -1, p)
    return [n_inv * s_powers[i] % p for i in range(n)]


# --- Lagrange-basis polynomials over the first n powers of the n-th root of unity ------------------------------


def double_evaluations(field: type[Field], values: list[int]) -> list[int]:
    "2n evaluations (on the 2n-th roots, natural order) of the polynomial given by n evaluations"
    n = len(values)
    p = field.MODULUS
    if n <= DIRECT_DOUBLING:
        rows = _doubling_rows(field, n)
        odd = [sum(map(mul, row, values)) % p for row in rows]
    else:
        odd = _odd_evaluations(field, values)
    out = [0] * (2 * n)
    out[0::2] = values
    out[1::2] = odd
    return out


DIRECT_DOUBLING = 16  # up to this size the odd evaluations are one n x n product (its sums run in C), not 2 NTTs


_DOUBLING_ROWS: dict[tuple[int, int], tuple[tuple[int, ...], ...]] = {}


def _doubling_rows(field: type[Field], n: int) -> tuple[tuple[int, ...], ...]:
    """The linear map from a polynomial's values on the n-th roots to its values on the odd 2n-th roots, as rows:
    column j is _odd_evaluations of the j-th unit vector (the same map, so the same field elements); cached per
    field and size (at most two fields x 5 sizes)"""
    key = (field.MODULUS, n)
    rows = _DOUBLING_ROWS.get(key)
    if rows is None:
        columns = [_odd_evaluations(field, [int(i == j) for i in range(n)]) for j in range(n)]
        rows = _DOUBLING_ROWS[key] = tuple(zip(*columns))
    return rows


def _odd_evaluations(field: type[Field], values: list[int]) -> list[int]:
    "Values on s * Wn**i (s the principal 2n-th root) of the polynomial given by its values on the n-th roots"
    n = len(values)
    p = field.MODULUS
    multipliers = _doubling_multipliers(p, field.GENERATOR, field.GEN_ORDER, n)
    coeffs = _ntt_in_place(field, list(values), inverse=True)
    return _ntt_in_place(field, [c * m % p for c, m in zip(coeffs, multipliers)])


def eval_weights(field: type[Field], n: int, x: int) -> list[int]:
    """Barycentric weights c_i with p(x) = sum(c_i * v_i) for any p given by its values v on the n-th roots.

    L_i(x) = (x**n - 1) * w**i / (n * (x - w**i)); x must not be an n-th root of unity.
    """
    p = field.MODULUS
    nodes = _root_powers(field, n)
    return _weights(p, n, x, nodes, batch_inverse(p, [(x - w) % p for w in nodes]))


def nested_eval_weights(field: type[Field], n: int, m: int, x: int) -> tuple[list[int], list[int]]:
    """:func:`eval_weights` at x on the n-th and on the m-th roots of unity (m divides n) for one modular inversion:
    the m-th roots are every (n/m)-th n-th root, so their differences to x and the inverses are a subset"""
    p = field.MODULUS
    nodes = _root_powers(field, n)
    inverses = batch_inverse(p, [(x - w) % p for w in nodes])
    step = n // m
    return _weights(p, n, x, nodes, inverses), _weights(p, m, x, nodes[::step], inverses[::step])


def _weights(p: int, n: int, x: int, nodes: list[int], inverses: list[int]) -> list[int]:
    "L_i(x) from the n-th roots w**i and the inverses of x - w**i"
    scale = (pow(x, n, p) - 1) * pow(n, -1, p) % p
    return [scale * w % p * d % p for w, d in zip(nodes, inverses)]


def poly_eval_lagrange(field: type[Field], values: list[int], x: int) -> int:
    "Evaluate at x the polynomial given by its values on the len(values)-th roots of unity"
    weights = eval_weights(field, len(values), x)
    return sum(map(mul, weights, values)) % field.MODULUS


def batch_inverse(p: int, values: list[int]) -> list[int]:
    "Montgomery's trick: all inverses mod p for the price of one (values must be non-zero)"
    prefix = [1] * (len(values) + 1)
    for i, v in enumerate(values):
        prefix[i + 1] = prefix[i] * v % p
    inv = pow(prefix[-1], -1, p)
    out = [0] * len(values)
    for i in range(len(values) - 1, -1, -1):
        out[i] = inv * prefix[i] % p
        inv = inv * values[i] % p
    return out


def extend_values_to_power_of_2(field: type[Field], values: list[int], n: int) -> list[int]:
    """Complete the first len(values) evaluations, on the n-th roots, of a polynomial of degree < len(values).

    The missing values make the top n - len(values) coefficients vanish.  One missing value (the only case in
    Prio3's circuits) has a closed form: coefficient n-1 is (1/n) sum(v_k w**k) = 0.  More are solved by the
    draft's incremental algorithm.
    """
    m = len(values)
    if m > n:
        raise ValueError("more values than evaluation points")
    if m == n:
        return list(values)
    p = field.MODULUS
    nodes = _root_powers(field, n)
    if m == n - 1:
        partial = sum(map(mul, values, nodes)) % p
        # v_{n-1} * w**(n-1) = -partial  =>  v_{n-1} = -partial * w
        return list(values) + [(-partial * nodes[1]) % p]
    return _extend_values_generic(field, list(values), n)


def _extend_values_generic(field: type[Field], values: list[int], n: int) -> list[int]:
    "draft-irtf-cfrg-vdaf-20, Lagrange.extend_values_to_power_of_2, over ints"
    p = field.MODULUS
    x = _root_powers(field, n)
    m = len(values)
    w = [0] * n
    for i in range(m):
        prod = 1
        for j in range(m):
            if i != j:
                prod = prod * (x[i] - x[j]) % p
        w[i] = prod
    for k in range(m, n):
        for i in range(k):
            w[i] = w[i] * (x[i] - x[k]) % p
        y_num, y_den = 0, 1
        for i, v in enumerate(values):
            y_num = (y_num * w[i] + y_den * v) % p
            y_den = y_den * w[i] % p
        prod = 1
        for j in range(k):
            prod = prod * (x[k] - x[j]) % p
        w[k] = prod
        values.append(-w[k] * y_num * pow(y_den, -1, p) % p)
    return values


def poly_eval_monomial(p: int, coeffs: list[int], x: int) -> int:
    "Horner evaluation of sum(coeffs[i] * x**i) mod p"
    out = 0
    for c in reversed(coeffs):
        out = (out * x + c) % p
    return out
